package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestIsolation(t *testing.T) {
	ctx := context.Background()
	a, b := New(t), New(t)
	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (v int); INSERT INTO only_in_a VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var found *string
	if err := b.QueryRow(ctx, "SELECT to_regclass('only_in_a')::text").Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found != nil {
		t.Fatal("table created in one test database is visible in another")
	}
	var n int
	if err := a.QueryRow(ctx, "SELECT count(*) FROM only_in_a").Scan(&n); err != nil || n != 1 {
		t.Fatalf("row in own database: n=%d err=%v", n, err)
	}
}

func TestTemplateMigrated(t *testing.T) {
	ctx := context.Background()
	pool := New(t)
	for _, table := range []string{"goose_db_version", "river_job"} {
		var name *string
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1)::text", table).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name == nil {
			t.Errorf("table %s missing in a cloned database", table)
		}
	}
	s, err := get()
	if err != nil {
		t.Fatal(err)
	}
	var isTemplate, allowConn bool
	err = s.admin.QueryRow(ctx, "SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1", s.template).
		Scan(&isTemplate, &allowConn)
	if err != nil {
		t.Fatal(err)
	}
	if !isTemplate || allowConn {
		t.Errorf("template %s: datistemplate=%v datallowconn=%v, want true false", s.template, isTemplate, allowConn)
	}
}

// NewURL's database belongs to the caller, and is gone after the test.
func TestNewURLDroppedAtCleanup(t *testing.T) {
	ctx := context.Background()
	var dbName string
	t.Run("inner", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, NewURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&dbName); err != nil {
			t.Fatal(err)
		}
	})
	s, _ := get()
	// The drop runs in the background.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var exists bool
		err := s.admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName).Scan(&exists)
		if err != nil {
			t.Fatal(err)
		}
		if !exists {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("database %s still exists a minute after its test ended", dbName)
		}
	}
}

func TestParallelNew(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := New(t)
			// Same table name everywhere: would collide without isolation.
			_, err := pool.Exec(ctx, fmt.Sprintf("CREATE TABLE shared_name (v int); INSERT INTO shared_name VALUES (%d)", i))
			if err != nil {
				t.Fatal(err)
			}
			var v int
			if err := pool.QueryRow(ctx, "SELECT v FROM shared_name").Scan(&v); err != nil || v != i {
				t.Fatalf("got %d, %v; want %d", v, err, i)
			}
		})
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5/old?sslmode=disable":          "postgres://u@h:5/x?sslmode=disable",
		"postgresql:///old?dbname=old&host=%2Ftmp%2Fs":  "postgresql:///x?host=%2Ftmp%2Fs",
		"host=/tmp/s user=u dbname=old":                 "host=/tmp/s user=u dbname=old dbname=x",
		"postgres://u@/?host=%2Fvar%2Frun%2Fpostgresql": "postgres://u@/x?host=%2Fvar%2Frun%2Fpostgresql",
	} {
		got, err := withDatabase(in, "x")
		if err != nil || got != want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// The cache hands out copies of its entry and prunes entries of other
// migrations once unused for a while.
func TestCache(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(t.TempDir(), "data")
	for _, f := range []string{"PG_VERSION", "base/1/123", "postmaster.pid"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old, err := openCache(base, "old")
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := old.lock(syscall.LOCK_EX) // save's callers hold it
	if err != nil {
		t.Fatal(err)
	}
	if err := old.save(src); err != nil {
		t.Fatal(err)
	}
	unlock()
	long := time.Now().Add(-2 * pruneAfter)
	if err := os.Chtimes(old.entry()+".lock", long, long); err != nil {
		t.Fatal(err)
	}
	c, _ := openCache(base, "new")
	dst := filepath.Join(t.TempDir(), "copy")
	if ok, err := c.seed(dst); ok || err != nil {
		t.Fatalf("seed from empty entry: %v %v", ok, err)
	}
	if err := c.save(src); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.seed(dst); !ok || err != nil {
		t.Fatalf("seed: %v %v", ok, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "base/1/123")); err != nil || string(b) != "base/1/123" {
		t.Fatalf("copied file: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "postmaster.pid")); !os.IsNotExist(err) {
		t.Errorf("postmaster.pid was copied: %v", err)
	}
	if _, err := os.Stat(old.entry()); !os.IsNotExist(err) {
		t.Errorf("stale entry not pruned: %v", err)
	}
}

// BenchmarkClone measures CREATE DATABASE ... TEMPLATE ... STRATEGY
// FILE_COPY alone, what each test costs the machine; drop time is
// reported separately.
func BenchmarkClone(b *testing.B) {
	NewURL(b) // start the server and build the template outside the timer
	s, err := get()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var dropTime time.Duration
	b.ResetTimer()
	for range b.N {
		db, err := s.clone(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		start := time.Now()
		if err := s.drop(db.name); err != nil {
			b.Fatal(err)
		}
		dropTime += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(dropTime.Nanoseconds())/float64(b.N), "drop-ns/op")
}

// BenchmarkNew measures what a test waits for in New when it does work
// for workTime: with the next database cloned in the background and drops
// running in the background, ideally nothing.
func BenchmarkNew(b *testing.B) {
	for _, work := range []time.Duration{0, 500 * time.Millisecond} {
		b.Run(fmt.Sprintf("work=%v", work), func(b *testing.B) {
			NewURL(b)
			s, err := get()
			if err != nil {
				b.Fatal(err)
			}
			var waited time.Duration
			for range b.N {
				start := time.Now()
				db, err := s.take(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				waited += time.Since(start)
				time.Sleep(work)
				s.release(db.name)
			}
			b.ReportMetric(float64(waited.Nanoseconds())/float64(b.N), "wait-ns/op")
		})
	}
}

// A database a test wrote to, analyzed and drew sequence values from is,
// once recycled, what a fresh clone is: same schema, the same relation
// sizes (so no rows), planner statistics, sequences and template rows.
// recyclingServer starts the binary's server and requires that it
// recycles databases.
func recyclingServer(t *testing.T) *server {
	t.Helper()
	NewURL(t) // start the server
	s, err := get()
	if err != nil {
		t.Fatal(err)
	}
	if s.base == nil {
		t.Fatalf("recycling is off: %s", s.summary())
	}
	return s
}

func TestRecycledDatabaseIsLikeFresh(t *testing.T) {
	ctx := context.Background()
	s := recyclingServer(t)
	used, err := s.clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := s.connect(ctx, used.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		 VALUES (gen_uuidv7(), 'acme', 'p', 't', 'e', 'b', 'b')`,
		`INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size)
		 SELECT n.id, sha256(g::text::bytea), 'k' || g, g FROM namespaces n, generate_series(1, 500) g`,
		`DELETE FROM blob_storage_blobs WHERE size > 400`,
		`ANALYZE blob_storage_blobs, namespaces`,
		`SELECT nextval('upload_sessions_id_seq')`,
		// The relations whose statistics differ from their kind's (tables
		// with template rows, sequences) are restored one by one.
		fmt.Sprintf(`UPDATE pg_class SET relpages = relpages + 7, reltuples = 42 WHERE oid = %d`, s.base.rels.oids[0]),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Left open, as a leaked pool would be: recycling disconnects it.
	start := time.Now()
	renamed, err := s.recycle(used.name)
	if err != nil {
		t.Fatalf("recycle: %v", err)
	}
	t.Logf("recycled in %v", since(start))
	t.Cleanup(func() { s.release(renamed) })
	if err := conn.Ping(ctx); err == nil {
		t.Error("the finished test's connection still works after recycling")
	}
	_ = conn.Close(ctx)

	fresh, err := s.clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.release(fresh.name) })
	if got, want := describe(ctx, t, s, renamed), describe(ctx, t, s, fresh.name); got != want {
		t.Errorf("recycled database differs from a fresh clone:\n%s", lineDiff(got, want))
	}
}

// A reset waits for the transactions older than its deletion, in any
// database of the cluster, before it rewrites the tables: while one runs,
// VACUUM FULL would keep the deleted rows.
func TestResetAwaitsOlderTransactions(t *testing.T) {
	ctx := context.Background()
	NewURL(t)
	s, err := get()
	if err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { horizonWait = d }(horizonWait)
	horizonWait = time.Minute
	conns := make([]*pgx.Conn, 2)
	for i := range conns {
		db, err := s.clone(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.release(db.name) })
		if conns[i], err = s.connect(ctx, db.name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conns[i].Close(ctx) })
	}
	older, conn := conns[0], conns[1]
	tx, err := older.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	var xid string
	if err := conn.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&xid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- awaitOlderTransactions(ctx, conn, xid) }()
	select {
	case err := <-done:
		t.Fatalf("returned (%v) while a transaction older than %s runs in another database", err, xid)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("after the older transaction ended: %v", err)
	}
}

// Recycling refuses a database whose schema or template rows a test
// changed: it is dropped instead.
func TestRecycleRefusesChangedDatabase(t *testing.T) {
	ctx := context.Background()
	s := recyclingServer(t)
	for _, change := range []string{
		"CREATE TABLE scratch (v int)",
		"ALTER TABLE repositories RENAME COLUMN description TO gone",
		"CREATE FUNCTION fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
		"ALTER TABLE blob_storage_attachments DISABLE TRIGGER ALL",
		"ALTER TABLE repositories ALTER COLUMN description SET DEFAULT 'x'",
		"ALTER TABLE namespaces ADD CONSTRAINT short CHECK (length(slug) < 100) NOT VALID",
		"CREATE OR REPLACE FUNCTION gen_uuidv7() RETURNS uuid LANGUAGE sql AS 'SELECT gen_random_uuid()'",
		"ALTER TABLE repositories RENAME TO repos",
		"CREATE SCHEMA scratch",
		"DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET work_mem = ''8MB''', current_database()); END $$",
		"BEGIN; CREATE TABLE rolled_back (v int); ROLLBACK",
		"UPDATE gc_controls SET reason = 'changed'",
		"DROP TABLE gc_controls",
	} {
		db, err := s.clone(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := s.connect(ctx, db.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, change); err != nil {
			t.Fatalf("%s: %v", change, err)
		}
		_ = conn.Close(ctx)
		name, err := s.recycle(db.name)
		t.Cleanup(func() { s.release(name) })
		if !errors.Is(err, errNotReusable) {
			t.Errorf("after %q: recycle returned %v, want a refusal", change, err)
		}
	}
}

// schemaFingerprintSQL summarizes, for describe, what tests could change
// in the schema: relations, columns of the public tables, triggers
// (enabled or not), constraints, function bodies, the database's settings
// and schemas.
const schemaFingerprintSQL = `
SELECT concat_ws(' ',
 (SELECT format('c%s/%s/%s/%s', count(*), max(oid::int8), sum(relnatts), sum(relchecks)) FROM pg_class),
 (SELECT format('t%s/%s/%s', count(*), max(oid::int8), count(*) FILTER (WHERE tgenabled <> 'O')) FROM pg_trigger),
 (SELECT format('k%s/%s/%s', count(*), max(oid::int8), count(*) FILTER (WHERE NOT convalidated)) FROM pg_constraint),
 (SELECT md5(string_agg(format('%s %s %s %s', p.oid, p.proname, md5(p.prosrc), p.proconfig), ',' ORDER BY p.oid))
    FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace),
 (SELECT md5(string_agg(format('%s %s %s %s %s', a.attrelid, a.attnum, a.attname, a.atttypid, a.attnotnull), ',' ORDER BY a.attrelid, a.attnum))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT c.relispartition),
 (SELECT format('s%s', array_agg(s.setconfig)) FROM pg_db_role_setting s
    WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())),
 (SELECT format('n%s/%s', count(*), max(oid::int8)) FROM pg_namespace))`

// describe prints what a test could observe of a database's state.
func describe(ctx context.Context, t *testing.T, s *server, name string) string {
	t.Helper()
	conn, err := s.connect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var b strings.Builder
	var schema string
	if err := conn.QueryRow(ctx, schemaFingerprintSQL).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "schema %s\n", schema)
	for _, q := range []string{
		`SELECT format('%s size %s pages %s tuples %s allvisible %s', c.oid::regclass, pg_relation_size(c.oid),
			c.relpages, c.reltuples, c.relallvisible)
		 FROM pg_class c WHERE ` + ourTables,
		`SELECT format('sequence %s %s %s', sequencename, last_value, start_value) FROM pg_sequences`,
	} {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	var stats, counted int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_statistic),
		(SELECT coalesce(sum(n_tup_ins + n_tup_del), 0) FROM pg_stat_user_tables)`).Scan(&stats, &counted); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "statistics rows %d, counted changes %d\n", stats, counted)

	for table := range s.base.seeded {
		sum, err := tableDigest(ctx, conn, table)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "rows of %s %s\n", table, sum)
	}
	lines := strings.Split(b.String(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out []string
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "recycled: "+l)
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "fresh:    "+l)
		}
	}
	return strings.Join(out[:min(len(out), 20)], "\n")
}
