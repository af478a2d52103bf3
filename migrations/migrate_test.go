package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/artifact-registry/artifact-registry/migrations"
)

// emptyDatabase creates a database with nothing in it on the test server and
// returns a pool on it; both are dropped at cleanup.
func emptyDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return cloneDatabase(t, "template0")
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand docs)
	return hex.EncodeToString(b[:])
}

// snapshot describes every schema object Up creates or touches, one line per
// object, sorted: relations, columns, constraints, indexes, triggers,
// functions, sequences and types of schemas public and partitions (the
// goose version table and River's tables among them), the database's
// schemas and its extensions.
func snapshot(ctx context.Context, t *testing.T, q db) []string {
	t.Helper()
	return queryStrings(ctx, t, q, `
WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname IN ('public', 'partitions'))
SELECT 'rel ' || ns.nspname || '.' || c.relname || ' ' || c.relkind::text || ' ' || c.relispartition::text
       || COALESCE(' ' || pg_get_expr(c.relpartbound, c.oid), '')
FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'col ' || ns.nspname || '.' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || ' ' || a.attnotnull::text || COALESCE(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p', 'v')
UNION ALL
SELECT 'con ' || ns.nspname || '.' || c.relname || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid)
FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'idx ' || pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'trg ' || pg_get_triggerdef(tg.oid)
FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN ns ON ns.oid = c.relnamespace
WHERE NOT tg.tgisinternal
UNION ALL
SELECT 'fn ' || ns.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(p.prosrc)
FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
UNION ALL
SELECT 'seq ' || ns.nspname || '.' || c.relname || ' ' || s.seqtypid::regtype
FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'type ' || ns.nspname || '.' || t.typname || ' ' || t.typtype::text
FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
WHERE t.typrelid = 0 AND t.typcategory <> 'A'
UNION ALL
SELECT 'schema ' || nspname FROM pg_namespace
WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
UNION ALL
SELECT 'ext ' || extname FROM pg_extension`)
}

// sqlFiles is the migrations directory's SQL files, the same set that
// migrations.go embeds, for driving goose Down directly.
func sqlFiles(t *testing.T) fs.FS {
	t.Helper()
	names, err := filepath.Glob("*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("list migrations: %v %v", names, err)
	}
	m := fstest.MapFS{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = &fstest.MapFile{Data: b}
	}
	return m
}

func diff(a, b []string) (onlyA, onlyB []string) {
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			onlyA = append(onlyA, s)
		}
	}
	for _, s := range b {
		if _, ok := slices.BinarySearch(a, s); !ok {
			onlyB = append(onlyB, s)
		}
	}
	return onlyA, onlyB
}

func first[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// TestMigrateConcurrentlyThenDown applies migrations.Up from several
// instances starting together to a database of the release before the
// latest (goose's tables only, River's not yet created), checks that
// everything exists and Check reports nothing pending, that a second Up
// applies nothing, and (unless -short) that every Down runs and leaves the
// schema of a database before the first migration.
//
// Up from an empty database is not repeated here: the template chain of the
// upgrade tests applies every migration from nothing, and the first start
// of serve on a new data directory (cmd/artifact-registry) runs Up from
// nothing through the binary on every test run. A third full Up cost this
// package half a minute of the server's CPU.
func TestMigrateConcurrentlyThenDown(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, latestVersion(t))

	start := time.Now()
	upConcurrently(ctx, t, pool, 3)
	t.Logf("3 concurrent migrations.Up calls took %v", time.Since(start).Round(time.Millisecond))

	st, err := migrations.Check(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Current() || len(st.Applied) == 0 {
		t.Fatalf("after Up: %+v", st)
	}
	var partitioned, children int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_partitioned_table),
		(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		  WHERE n.nspname = 'partitions' AND c.relkind = 'r')`).Scan(&partitioned, &children); err != nil {
		t.Fatal(err)
	}
	if children != 64*partitioned || partitioned < 60 {
		t.Errorf("%d partitioned tables with %d children", partitioned, children)
	}
	// A second Up applies nothing: neither goose nor River records a
	// migration. (Comparing whole snapshots instead cost a snapshot, about
	// ten seconds of the server's CPU on this schema of some 25,000
	// relations, to learn the same: Up changes the schema only through
	// the migrations it records.)
	applied := func() string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `SELECT format('goose %s/%s river %s/%s',
			(SELECT count(*) FROM goose_db_version), (SELECT max(id) FROM goose_db_version),
			(SELECT count(*) FROM river_migration), (SELECT max(created_at) FROM river_migration))`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	was := applied()
	start = time.Now()
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("second Up: %v", err)
	}
	t.Logf("second migrations.Up took %v", time.Since(start).Round(time.Millisecond))
	if now := applied(); now != was {
		t.Errorf("second Up applied migrations: %s before, %s after", was, now)
	}

	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("-short: skipping the Down of every migration (runs in CI whatever -short)")
	}
	start = time.Now()
	downTo(t, pool, 0)
	t.Logf("goose Down of every migration took %v", time.Since(start).Round(time.Millisecond))
	// Down to 0 must leave what a database holds before the first
	// migration: River's tables and goose's version table, nothing else.
	// The snapshot covers every kind of object a migration can create
	// (types and extensions too).
	left := snapshot(ctx, t, pool)
	want := snapshot(ctx, t, unmigratedDatabase(ctx, t))
	if onlyLeft, onlyWant := diff(left, want); len(onlyLeft)+len(onlyWant) > 0 {
		t.Errorf("Down to 0 differs from a database before the first migration: left %v, missing %v",
			first(onlyLeft, 20), first(onlyWant, 20))
	}
}

// unmigratedDatabase returns a database as Up finds it before its first
// migration: River's tables and goose's version table (created by Check),
// nothing else.
func unmigratedDatabase(ctx context.Context, t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := emptyDatabase(t)
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatalf("River's migrations: %v", err)
	}
	if _, err := migrations.Check(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// upConcurrently runs migrations.Up from instances pools on the database
// of pool at once, as replicas starting together on a fresh database do:
// the advisory lock makes them take turns, so all succeed, and none may
// leave the lock held. Other tests migrate other databases of the server
// meanwhile, so only this database's advisory locks count.
func upConcurrently(ctx context.Context, t *testing.T, pool *pgxpool.Pool, instances int) {
	t.Helper()
	pools := []*pgxpool.Pool{pool}
	for range instances - 1 {
		p, err := pgxpool.NewWithConfig(ctx, pool.Config().Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		pools = append(pools, p)
	}
	start := make(chan struct{})
	errs := make([]error, instances)
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() {
			<-start
			errs[i] = migrations.Up(ctx, p)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: Up on an empty database: %v", i, err)
		}
	}
	var locks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if locks != 0 {
		t.Fatalf("%d advisory locks still held after Up returned", locks)
	}
}
