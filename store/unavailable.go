package store

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/artifact-registry/artifact-registry/internal/pgpool"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// UnavailableRetryAfter is what every surface puts in Retry-After when the
// database or the object store cannot be reached: long enough for a
// restart or a failover to make progress, short enough that clients do not
// give up.
const UnavailableRetryAfter = 5 * time.Second

// IsUnavailable reports whether err means a backing service is out: the
// object store could not be reached (objstore.ErrUnavailable), or the
// database refused or dropped the connection, is shutting down, starting up
// or out of connections, or is a standby not yet promoted (read-only).
// Every surface answers these 503 with Retry-After (UnavailableRetryAfter)
// in its own format instead of 500; a request cancelled by its client or
// its own deadline is not one of them.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, objstore.ErrUnavailable) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow, pgerrcode.TooManyConnections:
			return true
		case pgerrcode.ReadOnlySQLTransaction:
			// No statement of ours writes in a read-only transaction, so
			// this comes from a server in recovery: a connection that
			// reached a standby during a failover, before its promotion.
			return true
		}
		return pgerrcode.IsConnectionException(pe.Code)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	return lostConnection(err)
}

// lostConnection: a connection that broke in the middle of a query. Either
// the socket reported it (pgpool.ConnError, on pools set up by
// pgpool.Configure: pgx returns a read cut short by a dying server as a
// bare EOF) or pgconn wrapped it in one of its errors, which all say
// whether a retry is safe. Requiring one of the two keeps a client's own
// broken upload body (also an EOF or a network error) out of this class.
func lostConnection(err error) bool {
	var lost *pgpool.ConnError
	var fromPg interface{ SafeToRetry() bool }
	if !errors.As(err, &lost) && !errors.As(err, &fromPg) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return !ne.Timeout()
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// UnavailableMessage is what a surface tells a client of an error
// IsUnavailable holds for: which service is out, and to retry.
func UnavailableMessage(err error) string {
	if errors.Is(err, objstore.ErrUnavailable) {
		return "the registry's object storage is unavailable; retry"
	}
	return "the registry database is unavailable; retry"
}
