// Package testdb gives every test its own PostgreSQL database, cloned from
// a template migrated with migrations.Up.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
//
// then call New (a pool) or NewURL (a connection string) in each test.
//
// Server: TEST_DATABASE_URL if set (the role must be allowed to CREATE
// DATABASE; PostgreSQL 15 or later), otherwise a private cluster started
// on first use with pgcluster (Fast: no fsync; no autovacuum: a test that
// needs planner statistics runs ANALYZE), stopped and removed when
// the test binary ends. That cluster lives under TESTDB_DIR if set, else in
// /dev/shm when it is a tmpfs with room to spare (the schema's thousands
// of partition files make disk-backed clones several times slower), else
// in the system temp dir. A copy of a freshly migrated cluster is cached
// next to it (see cache.go), so only the first test binary after a schema
// change pays for initdb and the migrations.
//
// Cost per test: a database an earlier test of the binary used, reset to
// the template's state in the background (recycle.go), or else a clone of
// the template (CREATE DATABASE ... STRATEGY FILE_COPY, see BenchmarkClone),
// mostly hidden by cloning the next database in the background. A database
// that cannot be reset is dropped in the background. Under Serve (the
// withtestdb command, which make test runs go test with), the binaries of
// a run share one cluster and pass reset databases on to each other
// (pool.go).
//
// Each test's pool opens new server sessions, and a new session loads the
// catalog entries of what it touches (pgbench: a session creating a
// namespace and an npm repository took 31 ms, 5 ms when warm). Handing
// the sessions of a finished test, reset with DISCARD ALL, to the next
// test of the same database was tried and not kept: graph opened 66
// sessions in its whole run, store and protocol/npm about 150, so at
// most a few CPU-seconds per package were at stake, and the runs could
// not tell them from the machine's noise. The cold work that matters is
// per partition: each test creates namespaces with new ids, so its
// sessions meet partitions they have not loaded or planned for yet, warm
// or not.
//
// Nothing is printed unless a test fails or -v is given; the log lines
// carry cluster start and clone times.
package testdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgpool"
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
// after runs once the tests are done (Main itself exits the process).
func Main(m *testing.M, after ...func()) {
	mainRunning.Store(true)
	stopSignals := shutdownOnSignal()
	code := m.Run()
	for _, f := range after {
		f()
	}
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
			stopped := make(chan struct{})
			go func() { _ = shutdown(); close(stopped) }()
			select { // setup may be waiting for another binary's cache build
			case <-stopped:
			case <-ch:
			case <-time.After(30 * time.Second):
			}
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
	pool, err := pgxpool.NewWithConfig(context.Background(), poolConfig(t, url))
	if err != nil {
		t.Fatalf("testdb: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the drop registered by NewURL
	return pool
}

// NewConfig is the pool configuration of a fresh database (see NewURL),
// set up as the server's pool is, for tests that tune it before opening.
func NewConfig(t testing.TB) *pgxpool.Config {
	t.Helper()
	return poolConfig(t, NewURL(t))
}

// MaintenanceConfig is the pool configuration of the server's maintenance
// database, for tests that create and drop databases of their own (the
// migrations tests): they need a connection to run CREATE DATABASE, not
// a clone of the migrated template.
func MaintenanceConfig(t testing.TB) *pgxpool.Config {
	t.Helper()
	s, err := get()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return poolConfig(t, s.baseURL)
}

func poolConfig(t testing.TB, url string) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("testdb: parse url: %v", err)
	}
	pgpool.Configure(cfg)
	return cfg
}

// NewURL is like New but returns the connection string of the fresh
// database; the caller opens its own connections (any left open at
// cleanup are terminated by the drop).
func NewURL(t testing.TB) string {
	t.Helper()
	s, err := get()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if loggedSetup.CompareAndSwap(false, true) {
		t.Logf("testdb: %s", s.summary())
	}
	start := time.Now()
	db, err := s.take(context.Background())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	how := fmt.Sprintf("clone took %v", db.took.Round(time.Millisecond))
	switch {
	case db.pooled:
		how = "reset after a test of another binary"
	case db.recycled:
		how = "reset after an earlier test"
	case db.spare:
		how += ", ahead of time"
	}
	t.Logf("testdb: %s ready in %v (%s)", db.name, since(start), how)
	t.Cleanup(func() { s.release(db.name) })
	url, err := withDatabase(s.baseURL, db.name)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return url
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }
