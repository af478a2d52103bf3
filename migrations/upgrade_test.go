package migrations_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// databaseBefore returns a fresh database migrated up to the migration
// below version: the schema of the release before it, for an upgrade test
// to populate and then bring current with migrations.Up.
func databaseBefore(t *testing.T, version int64) *pgxpool.Pool {
	t.Helper()
	pool := emptyDatabase(t)
	db := stdlib.OpenDBFromPool(pool) // closing it leaves the pool open
	defer db.Close()
	prev := previousVersion(t, db, version)
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), prev); err != nil {
		t.Fatalf("up to %d: %v", prev, err)
	}
	return pool
}

// previousVersion is the highest migration below v: the release before it.
func previousVersion(t *testing.T, db *sql.DB, v int64) int64 {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	var prev int64
	for _, s := range p.ListSources() {
		if s.Version < v && s.Version > prev {
			prev = s.Version
		}
	}
	if prev == 0 {
		t.Fatalf("no migration below %d", v)
	}
	return prev
}
