// Package testsupport is the harness the packages' tests share: a store
// over a fresh test database (internal/testdb) and a file or in-memory
// bucket, the loggers the harnesses use, and fixture rows. The fake clock
// is in the subpackage fakeclock, which does not import the store.
//
// It imports only the store and the test database, so the internal tests
// of auth, graph, the protocols, gc and the legacy packages can use it
// (package store's own internal tests cannot: it imports store). A whole
// server with every surface is internal/testserver.
//
// The test binary's TestMain must call testdb.Main.
package testsupport

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// Pool opens a pool on a fresh database, letting configure adjust the
// configuration first (a tracer, the pool size); it is closed at cleanup.
func Pool(t testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	if configure == nil {
		return testdb.New(t)
	}
	cfg := testdb.NewConfig(t)
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testsupport: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// FileObjects is a file:// bucket in t.TempDir(), closed at cleanup.
func FileObjects(t testing.TB) *objstore.Store {
	t.Helper()
	objs, err := objstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatalf("testsupport: open bucket: %v", err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	return objs
}

// MemObjects is an in-memory bucket, closed at cleanup.
func MemObjects(t testing.TB) *objstore.Store {
	t.Helper()
	objs := objstore.NewMem()
	t.Cleanup(func() { _ = objs.Close() })
	return objs
}

// StoreOptions adjust Store.
type StoreOptions struct {
	// Pool is the database; default a fresh one (testdb.New).
	Pool *pgxpool.Pool
	// Mem selects an in-memory bucket instead of a file:// one.
	Mem bool
	// Objects replaces the bucket (an S3 one, say).
	Objects *objstore.Store
	// Store is passed to store.New (the clock, the review delay).
	Store store.Options
}

// Store is a store over a fresh database and a bucket of its own.
func Store(t testing.TB, o StoreOptions) *store.Store {
	t.Helper()
	pool := o.Pool
	if pool == nil {
		pool = testdb.New(t)
	}
	if o.Objects != nil {
		return store.New(pool, o.Objects, o.Store)
	}
	objs := FileObjects
	if o.Mem {
		objs = MemObjects
	}
	return store.New(pool, objs(t), o.Store)
}

// Namespace creates a namespace.
func Namespace(t testing.TB, st *store.Store, slug string) *store.Namespace {
	t.Helper()
	ns, err := st.CreateNamespace(context.Background(), slug)
	if err != nil {
		t.Fatalf("testsupport: create namespace %s: %v", slug, err)
	}
	return ns
}

// Repository creates a hosted repository in namespace ns.
func Repository(t testing.TB, st *store.Store, ns, name string, f enum.Format, v enum.Visibility) *store.Repository {
	t.Helper()
	r, err := st.CreateRepository(context.Background(), store.NewRepository{
		Namespace: ns, Name: name, Format: f, Kind: enum.KindHosted, Visibility: v,
	})
	if err != nil {
		t.Fatalf("testsupport: create repository %s/%s: %v", ns, name, err)
	}
	return r
}

// Discard is a logger that drops everything.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Logger is the harness logger: silent unless the environment variable
// env is set, then everything from debug up goes to stderr.
func Logger(env string) *slog.Logger {
	if os.Getenv(env) != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return Discard()
}

// Errors is a logger that shows errors on stderr (harnesses whose
// handlers only log internal errors) and drops the rest.
func Errors() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// CloseAtCleanup runs close when the test ends, with 30 s to finish: a
// shutdown function that waits, such as the one closing a protocol's
// upstream clients (fills in flight write into the store's directory).
// Cleanups run last first, so register it after what must outlive it (the
// store) and before what must stop first (the server).
func CloseAtCleanup(t testing.TB, close func(context.Context)) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		close(ctx)
	})
}
