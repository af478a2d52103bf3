// Package migrations holds the database schema as goose SQL migrations,
// embedded in the binary, and applies them together with River's own
// migrations so one call brings a database to the current schema.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

// Status describes how far a database is from the current schema.
type Status struct {
	Applied      []int64 // goose versions applied
	Pending      []int64 // goose versions not yet applied
	RiverPending int     // River migrations not yet applied
}

// Current reports whether nothing is left to apply.
func (s Status) Current() bool { return len(s.Pending) == 0 && s.RiverPending == 0 }

func provider(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, files)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("open goose provider: %w", err)
	}
	return p, db, nil
}

// lockKey names the session advisory lock that Up holds: instances
// starting together on one database then migrate one after the other, and
// the later ones find nothing left to do. Neither goose's nor River's
// migrator serializes both of them.
const lockKey int64 = 0x61725f6d69677274 // "ar_migrt"

// Up applies every pending goose migration and River's migrations, under
// an advisory lock shared by every process migrating the same database.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	unlock, err := lock(ctx, pool)
	if err != nil {
		return err
	}
	defer unlock()
	return up(ctx, pool)
}

// lock takes the migration lock on a connection of its own, outside the
// pool: closing that connection releases the lock whatever happened, and
// a pool of one connection is left for the migrations.
func lock(ctx context.Context, pool *pgxpool.Pool) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect for the migration lock: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	return func() {
		ctx := context.WithoutCancel(ctx)
		// Released now rather than when the server notices the closed
		// connection: the next instance waiting starts at once, and
		// nothing sees the lock held after Up returned.
		_, _ = conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey)
		_ = conn.Close(ctx)
	}, nil
}

func up(ctx context.Context, pool *pgxpool.Pool) error {
	if err := riverUp(ctx, pool); err != nil {
		return err
	}
	p, db, err := provider(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply goose migrations: %w", err)
	}
	return nil
}

func riverUp(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("open river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("apply river migrations: %w", err)
	}
	return nil
}

// Check reports applied and pending migrations without changing anything.
func Check(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	var st Status
	p, db, err := provider(pool)
	if err != nil {
		return st, err
	}
	defer db.Close()
	results, err := p.Status(ctx)
	if err != nil {
		return st, fmt.Errorf("read goose status: %w", err)
	}
	for _, r := range results {
		if r.State == goose.StateApplied {
			st.Applied = append(st.Applied, r.Source.Version)
		} else {
			st.Pending = append(st.Pending, r.Source.Version)
		}
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return st, fmt.Errorf("open river migrator: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{DryRun: true})
	if err != nil {
		return st, fmt.Errorf("read river migration status: %w", err)
	}
	st.RiverPending = len(res.Versions)
	return st, nil
}
