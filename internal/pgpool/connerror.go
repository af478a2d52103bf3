package pgpool

import (
	"context"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnError is a read or write on a database connection that failed: the
// server went away (a crash, an immediate shutdown, a failover) or the
// network broke. pgx returns such failures as the bare io.ErrUnexpectedEOF
// or network error when they interrupt a query, which looks exactly like a
// client's upload body breaking off; wrapping them at the socket tells the
// two apart.
type ConnError struct{ Err error }

func (e *ConnError) Error() string { return "database connection: " + e.Err.Error() }

func (e *ConnError) Unwrap() error { return e.Err }

// markConnErrors makes every connection of cfg report its I/O failures
// as ConnError. pgx looks for timeouts with errors.As, which sees through
// the wrapper.
func markConnErrors(cfg *pgconn.Config) {
	dial := cfg.DialFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return markedConn{c}, nil
	}
}

type markedConn struct{ net.Conn }

func (c markedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		err = &ConnError{Err: err}
	}
	return n, err
}

func (c markedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		err = &ConnError{Err: err}
	}
	return n, err
}
