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
	"github.com/pressly/goose/v3"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// databaseBefore returns a fresh database migrated up to the migration
// below version: the schema of the release before it, for an upgrade test
// to populate and then bring current with migrations.Up. It marks the test
// parallel (call it instead of t.Parallel, before anything else): the
// version it needs is recorded first, while the tests still start one
// after the other, so that every needed template is known before any is
// built.
func databaseBefore(t *testing.T, version int64) *pgxpool.Pool {
	t.Helper()
	prev := previousVersion(t, version)
	templates.Lock()
	templates.needed = append(templates.needed, prev)
	templates.Unlock()
	t.Parallel()
	return cloneDatabase(t, templateAt(t, prev))
}

// templates are databases migrated up to a version, kept for the whole
// test process: an upgrade test clones the template of the version it
// needs. The templates of every needed version are built in ascending
// order, each from the one below it (the first from an empty database),
// so every migration runs once whatever order the tests ask in: the early
// migrations create most of the partitions, and when every test re-ran
// them they took most of this package's time. (Building from checkpoints
// every eight versions instead ran migrations again in the order the
// tests happened to ask, 00037's four seconds three times and 00057's
// second five, and built seven templates no test cloned.)
var templates struct {
	sync.Mutex
	needed    []int64          // the versions the tests asked for
	byVersion map[int64]string // the templates built
	admin     *pgxpool.Config  // of the server they were built on
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

// templateAt returns the name of a template database migrated to version,
// building it, and every needed template below it, first. Building holds
// the lock, so tests needing the same version wait and then clone it
// instead of repeating the work.
func templateAt(t *testing.T, version int64) string {
	t.Helper()
	templates.Lock()
	defer templates.Unlock()
	if name, ok := templates.byVersion[version]; ok {
		return name
	}
	want := append(slices.Clone(templates.needed), version)
	slices.Sort(want)
	for _, v := range slices.Compact(want) {
		if _, ok := templates.byVersion[v]; !ok && v <= version {
			buildTemplate(t, v)
		}
	}
	return templates.byVersion[version]
}

// buildTemplate builds the template of version from the highest one below
// it, with the lock held.
func buildTemplate(t *testing.T, version int64) {
	t.Helper()
	base, from := "template0", int64(0)
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
	withProvider(t, pool, func(p *goose.Provider) error {
		if _, err := p.UpTo(context.Background(), version); err != nil {
			return fmt.Errorf("template: up from %d to %d: %w", from, version, err)
		}
		return nil
	})
	if templates.byVersion == nil {
		templates.byVersion = map[int64]string{}
		templates.admin = admin.Config().Copy()
	}
	templates.byVersion[version] = name
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
