package migrations_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// databaseBefore returns a fresh database migrated up to the migration
// below version: the schema of the release before it, for an upgrade test
// to populate and then bring current with migrations.Up.
func databaseBefore(t *testing.T, version int64) *pgxpool.Pool {
	t.Helper()
	return cloneDatabase(t, templateAt(t, previousVersion(t, version)))
}

// templates are databases migrated up to a version, kept for the whole
// test process: an upgrade test clones the template of the version it
// needs. A template is built from the highest one below it, at least the
// checkpoint below it (every templateStep versions, itself built the same
// way), so the early migrations, which create most of the partitions and
// took most of this package's time when every test re-ran them, run once
// whatever order the tests ask in, no migration between two checkpoints
// runs twice once its template exists, and no test waits for more than
// templateStep migrations.
var templates struct {
	sync.Mutex
	byVersion map[int64]string
	admin     *pgxpool.Config // of the server they were built on
}

// dropTemplates removes the templates once the tests are done when the
// server outlives the test binary: a later run would find their names
// taken, and under make test the other binaries go on using the server,
// whose memory the templates' files would fill (a few GB of tmpfs). (A
// private cluster is removed whole.)
func dropTemplates() {
	templates.Lock()
	defer templates.Unlock()
	if len(templates.byVersion) == 0 || !testdb.Shared() {
		return
	}
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, templates.admin.ConnConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop the migration templates:", err)
		return
	}
	defer conn.Close(ctx)
	for _, name := range templates.byVersion {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "drop %s: %v\n", name, err)
		}
	}
}

const templateStep = 8

// templateAt returns the name of a template database migrated to version.
// Building one holds the lock, so tests needing the same version wait and
// then clone it instead of repeating the work.
func templateAt(t *testing.T, version int64) string {
	t.Helper()
	templates.Lock()
	defer templates.Unlock()
	return buildTemplate(t, version)
}

// buildTemplate is templateAt with the lock held.
func buildTemplate(t *testing.T, version int64) string {
	t.Helper()
	if name, ok := templates.byVersion[version]; ok {
		return name
	}
	base, from := "template0", (version-1)/templateStep*templateStep
	if from > 0 {
		base = buildTemplate(t, from)
	}
	for v, name := range templates.byVersion {
		if v > from && v < version {
			base, from = name, v
		}
	}
	name := fmt.Sprintf("migrate_template_%05d", version)
	admin := maintenance(t)
	createFrom(t, admin, name, base)
	pool := openDatabase(t, admin, name)
	defer pool.Close() // a template may have no connections when it is cloned
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), version); err != nil {
		t.Fatalf("template: up from %d to %d: %v", from, version, err)
	}
	if templates.byVersion == nil {
		templates.byVersion = map[int64]string{}
		templates.admin = admin.Config().Copy()
	}
	templates.byVersion[version] = name
	return name
}

// cloneDatabase creates a database from template and returns a pool on it;
// both are dropped at cleanup.
func cloneDatabase(t *testing.T, template string) *pgxpool.Pool {
	t.Helper()
	admin := maintenance(t)
	name := "migrate_" + randomSuffix()
	createFrom(t, admin, name, template)
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	pool := openDatabase(t, admin, name)
	t.Cleanup(pool.Close) // registered last, so it runs before the drop
	return pool
}

// maintenance returns a pool on the server's maintenance database, closed
// at cleanup, to run CREATE and DROP DATABASE. (A clone of testdb's
// template would do too, but costs a copy of its 25,000 relations.)
func maintenance(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), testdb.MaintenanceConfig(t))
	if err != nil {
		t.Fatalf("open the maintenance database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// createFrom copies template's files (FILE_COPY), much faster than
// WAL-logging every block of a schema with thousands of partitions.
func createFrom(t *testing.T, admin *pgxpool.Pool, name, template string) {
	t.Helper()
	sql := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())
	if _, err := admin.Exec(context.Background(), sql); err != nil {
		t.Fatalf("create database %s from %s: %v", name, template, err)
	}
}

func openDatabase(t *testing.T, admin *pgxpool.Pool, name string) *pgxpool.Pool {
	t.Helper()
	cfg := admin.Config().Copy()
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	return pool
}

// previousVersion is the highest migration below v: the release before it.
func previousVersion(t *testing.T, v int64) int64 {
	t.Helper()
	var prev int64
	for _, s := range versions(t) {
		if s < v && s > prev {
			prev = s
		}
	}
	if prev == 0 {
		t.Fatalf("no migration below %d", v)
	}
	return prev
}

// latestVersion is the highest migration: the current release.
func latestVersion(t *testing.T) int64 {
	t.Helper()
	return slices.Max(versions(t))
}

// versions lists the numbers of the migration files.
func versions(t *testing.T) []int64 {
	t.Helper()
	names, err := filepath.Glob("*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("list migrations: %v %v", names, err)
	}
	out := make([]int64, 0, len(names))
	for _, n := range names {
		num, _, _ := strings.Cut(n, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			t.Fatalf("migration file %s: %v", n, err)
		}
		out = append(out, v)
	}
	return out
}
