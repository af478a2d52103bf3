package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// A panic inside WithTx rolls the transaction back and returns its
// connection to the pool: with a pool of one connection the next
// transaction starts, and the lock the panicking one took is free.
func TestWithTxPanicRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := testdb.NewConfig(t)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Close waits for every connection: a leaked one would hang the test
	// instead of failing it.
	defer func() {
		if !t.Failed() {
			pool.Close()
		}
	}()
	other, err := pgx.Connect(ctx, cfg.ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	st := New(pool, objstore.NewMem(), Options{})

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not come through WithTx")
			}
		}()
		_ = st.WithTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(4242)`); err != nil {
				t.Error(err)
			}
			panic("boom")
		})
	}()

	var free bool
	if err := other.QueryRow(ctx, `SELECT pg_try_advisory_lock(4242)`).Scan(&free); err != nil || !free {
		t.Errorf("the lock of the panicking transaction is still held: %v %v", free, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := st.WithTx(wctx, func(tx pgx.Tx) error { _, err := tx.Exec(wctx, `SELECT 1`); return err }); err != nil {
		t.Fatalf("the next transaction on a pool of one: %v", err)
	}
}

// db.Retry runs an attempt again after a race, a deadlock or a
// serialization failure, at most db.TxAttempts in all, and nothing else.
func TestRetryTxRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := New(testdb.New(t), objstore.NewMem(), Options{})
	deadlock := &pgconn.PgError{Code: pgerrcode.DeadlockDetected}
	lockTimeout := &pgconn.PgError{Code: pgerrcode.LockNotAvailable}
	for _, tc := range []struct {
		name     string
		fails    []error // what the attempts return, in order; nil after
		attempts int
		want     error
	}{
		{"race then success", []error{db.ErrRace, db.ErrRace}, 3, nil},
		{"races until the end", []error{db.ErrRace, db.ErrRace, db.ErrRace, db.ErrRace}, 3, &Error{Code: CodeRetryable}},
		{"deadlock then success", []error{deadlock}, 2, nil},
		{"lock timeout is not retried", []error{lockTimeout}, 1, &Error{Code: CodeRetryable}},
		{"other errors are not retried", []error{errors.New("boom")}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := db.Retry(ctx, st.WithTx, func(tx pgx.Tx) error {
				n++
				if n <= len(tc.fails) {
					return tc.fails[n-1]
				}
				return nil
			})
			if n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err %v, want %v", err, tc.want)
			case tc.want == nil && tc.name != "other errors are not retried" && err != nil:
				t.Fatalf("err %v", err)
			case tc.name == "other errors are not retried" && err == nil:
				t.Fatal("the error was lost")
			}
		})
	}
}
