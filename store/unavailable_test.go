package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

// The classification is checked against the failures a real database and
// a real network produce, not against hand-built error values.
func TestIsUnavailable(t *testing.T) {
	ctx := context.Background()

	pool, err := pgxpool.New(ctx, fmt.Sprintf("postgres://u@127.0.0.1:%d/db?connect_timeout=2", closedPort(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, refused := pool.Exec(ctx, "SELECT 1")
	if !IsUnavailable(fmt.Errorf("store: read repository: %w", refused)) {
		t.Errorf("connection refused (%v) not classified unavailable", refused)
	}

	// A backend terminated by an administrator: the query in flight gets
	// 57P01 admin_shutdown, the next use a closed connection.
	live := testdb.New(t)
	conn, err := pgx.ConnectConfig(ctx, live.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := conn.Exec(ctx, "SELECT pg_sleep(30)"); errc <- err }()
	time.Sleep(200 * time.Millisecond)
	if _, err := live.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	terminated := <-errc
	if !IsUnavailable(terminated) {
		t.Errorf("terminated backend (%v) not classified unavailable", terminated)
	}
	_, closed := conn.Exec(ctx, "SELECT 1")
	if !IsUnavailable(closed) {
		t.Errorf("closed connection (%v) not classified unavailable", closed)
	}

	// A standby before its promotion refuses writes as a read-only
	// transaction does.
	tx, err := live.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	_, readOnly := tx.Exec(ctx, "CREATE TABLE read_only_probe (v int)")
	_ = tx.Rollback(ctx)
	if !IsUnavailable(fmt.Errorf("store: publish: %w", readOnly)) {
		t.Errorf("read-only transaction (%v) not classified unavailable", readOnly)
	}

	// What is not the database being down.
	var syntax error
	_, syntax = live.Exec(ctx, "SELEC 1")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, cancelled := live.Exec(cctx, "SELECT 1")
	for name, err := range map[string]error{
		"nil":                     nil,
		"syntax error":            syntax,
		"request cancelled":       cancelled,
		"client body cut short":   fmt.Errorf("read body: %w", io.ErrUnexpectedEOF),
		"client body timed out":   &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}},
		"retryable lock timeout":  errs.Wrap(CodeRetryable, &pgconn.PgError{Code: pgerrcode.LockNotAvailable}, "temporarily unavailable, retry"),
		"a domain error":          errs.New(CodeUploadUnknown, "upload unknown"),
		"a plain error":           errors.New("boom"),
		"store: wrapped canceled": fmt.Errorf("store: begin: %w", context.Canceled),
	} {
		if IsUnavailable(err) {
			t.Errorf("%s (%v) classified unavailable", name, err)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
