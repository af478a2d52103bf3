package testdb

import (
	"context"
	"fmt"
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
	var exists bool
	if err := s.admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s still exists after its test ended", dbName)
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

// BenchmarkClone measures CREATE DATABASE ... TEMPLATE ... STRATEGY
// FILE_COPY, the cost each test pays; drop time is reported separately.
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
		name, _, err := s.clone(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		start := time.Now()
		if err := s.drop(name); err != nil {
			b.Fatal(err)
		}
		dropTime += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(dropTime.Nanoseconds())/float64(b.N), "drop-ns/op")
}
