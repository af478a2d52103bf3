// Package testdb gives every test its own PostgreSQL database, cloned from
// a template migrated once with migrations.Up.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
//
// then call New (a pool) or NewURL (a connection string) in each test.
//
// Server: TEST_DATABASE_URL if set (the role must be allowed to CREATE
// DATABASE; PostgreSQL 15 or later), otherwise a private cluster started
// on first use with pgcluster (Fast: no fsync) in a temp dir, stopped and
// removed when the test binary ends. Nothing is printed unless a test
// fails or -v is given; the log lines carry cluster start and clone times.
package testdb

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	mainRunning atomic.Bool
	loggedSetup atomic.Bool

	// state is set up lazily by the first New, so test binaries (or -run
	// selections) that need no database start no server.
	state struct {
		mu   sync.Mutex
		done bool
		srv  *server
		err  error
	}

	errShutDown = errors.New("testdb: server already shut down")
)

// Main wraps testing.M: the database server is started (or connected to)
// once for the test binary on first use, the tests run, then it is stopped.
func Main(m *testing.M) {
	mainRunning.Store(true)
	stopSignals := shutdownOnSignal()
	code := m.Run()
	stopSignals()
	if err := shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "testdb:", err)
		code = cmp.Or(code, 1)
	}
	os.Exit(code)
}

// shutdownOnSignal stops the cluster on Ctrl-C: it runs in its own process
// group, so it would otherwise outlive the interrupted test binary.
func shutdownOnSignal() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "testdb: %v: stopping the test database server\n", sig)
			_ = shutdown()
			os.Exit(1)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

func get() (*server, error) {
	if !mainRunning.Load() {
		return nil, errors.New("testdb: the package's TestMain must call testdb.Main(m)")
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if !state.done {
		state.srv, state.err = setup()
		state.done = true
	}
	return state.srv, state.err
}

func shutdown() error {
	state.mu.Lock()
	defer state.mu.Unlock()
	srv := state.srv
	state.done, state.srv, state.err = true, nil, errShutDown
	if srv == nil {
		return nil
	}
	return srv.close()
}

// New returns a pool on a fresh database cloned from the migrated
// template. The pool is closed and the database dropped at t.Cleanup.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := NewURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("testdb: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the drop registered by NewURL
	return pool
}

// NewURL is like New but returns the connection string of the fresh
// database; the caller opens (and must close) its own connections.
func NewURL(t testing.TB) string {
	t.Helper()
	s, err := get()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if loggedSetup.CompareAndSwap(false, true) {
		t.Logf("testdb: %s", s.summary())
	}
	name, took, err := s.clone(context.Background())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Logf("testdb: cloned %s from %s in %v", name, s.template, took.Round(time.Microsecond))
	t.Cleanup(func() {
		if err := s.drop(name); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	url, err := withDatabase(s.baseURL, name)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return url
}

// clone creates a database from the template. FILE_COPY copies the
// template's files instead of WAL-logging every block (PG15's default),
// which is much faster for a schema with thousands of partitions.
func (s *server) clone(ctx context.Context) (string, time.Duration, error) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand docs)
	name := "test_" + hex.EncodeToString(b[:])
	start := time.Now()
	sql := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", ident(name), ident(s.template))
	if _, err := s.admin.Exec(ctx, sql); err != nil {
		return "", 0, fmt.Errorf("clone template %s: %w", s.template, err)
	}
	return name, time.Since(start), nil
}

// drop removes a test database, disconnecting anything the test leaked.
func (s *server) drop(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }
