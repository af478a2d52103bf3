// Package db holds the helpers every part of the store uses around pgx: the
// one pool-or-transaction interface, the one id generator, PostgreSQL error
// codes, the transaction retry rule and grouped reads. It is internal to
// store: the format packages use it, nothing outside store does.
package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Queryer is what a pool, a connection and a transaction all offer.
// Functions that may run inside the caller's transaction or on the pool
// take one.
type Queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// NewID returns a new row id: a UUIDv7, generated here rather than by
// PostgreSQL so that a statement can name rows it inserts in the same
// batch, and time-ordered so that btree inserts stay at the right edge.
func NewID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		// uuid.NewV7 fails only when the system's random source does.
		panic(fmt.Sprintf("store: uuid v7: %v", err))
	}
	return id
}

// NewIDs returns n new row ids.
func NewIDs(n int) []uuid.UUID {
	out := make([]uuid.UUID, n)
	for i := range out {
		out[i] = NewID()
	}
	return out
}

// PgCode returns the PostgreSQL error code and constraint name in err's
// chain ("" when err is not a PostgreSQL error).
func PgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

// IsPgCode reports whether err carries the PostgreSQL error code (and,
// when constraint is not empty, that constraint).
func IsPgCode(err error, code, constraint string) bool {
	c, name := PgCode(err)
	return c == code && (constraint == "" || name == constraint)
}

// MapErr turns retryable PostgreSQL failures (lock timeout, deadlock,
// serialization failure) into errs.Retryable, keeping the original in the
// chain; other errors pass through.
func MapErr(err error) error {
	if err == nil || errs.Has(err, errs.Retryable) {
		return err
	}
	switch code, _ := PgCode(err); code {
	case pgerrcode.LockNotAvailable, pgerrcode.DeadlockDetected, pgerrcode.SerializationFailure:
		return errs.Wrap(errs.Retryable, err, "store: temporarily unavailable, retry")
	}
	return err
}

// Lookupable reports whether s can be a slug or name used for a lookup:
// anything that cannot be a valid identifier simply matches nothing, so it
// is checked only for what PostgreSQL would refuse (invalid UTF-8, NUL,
// length beyond any name's).
func Lookupable(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0) && len(s) <= 4*255
}
