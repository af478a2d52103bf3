package db

import (
	"context"
	"errors"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// ErrRace asks Retry to run its transaction again: a concurrent writer
// changed a row between two of our statements (inserted the row we checked
// for, soft-deleted the one we found), so this attempt cannot finish but
// the next one will see the new state.
var ErrRace = errors.New("store: concurrent write, retrying")

// TxAttempts bounds the attempts of Retry.
const TxAttempts = 3

// TxRunner runs fn in one transaction, committed when fn returns nil
// (store.Store.WithTx).
type TxRunner func(ctx context.Context, fn func(tx pgx.Tx) error) error

// Retry is the one retry rule of the store: an attempt that failed with
// ErrRace, a deadlock or a serialization failure changed nothing
// (PostgreSQL rolled it back; the other transaction went through), so it
// runs again, up to TxAttempts in all, unless ctx is done. Lock timeouts
// are not retried: they already waited the lock timeout. When the attempts
// run out the error is errs.Retryable (503 with Retry-After). fn must keep
// no state across attempts.
func Retry(ctx context.Context, run TxRunner, fn func(tx pgx.Tx) error) error {
	var err error
	for range TxAttempts {
		err = run(ctx, fn)
		if !retriable(err) || ctx.Err() != nil {
			return err
		}
	}
	if errors.Is(err, ErrRace) {
		return errs.Wrap(errs.Retryable, err, "store: temporarily unavailable, retry")
	}
	return err
}

func retriable(err error) bool {
	return errors.Is(err, ErrRace) || IsPgCode(err, pgerrcode.DeadlockDetected, "") || IsPgCode(err, pgerrcode.SerializationFailure, "")
}
