package testdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
	"github.com/artifact-registry/artifact-registry/migrations"
)

// A harness's cluster seeded from the cache serves a current schema in
// pgcluster.Database, an ordinary database, and holds no template left
// over; it survives a restart.
func TestSeedCluster(t *testing.T) {
	ctx := context.Background()
	New(t) // the cache entry exists once this binary's cluster is up
	dir := filepath.Join(t.TempDir(), "pg")
	template, err := SeedCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := pgcluster.Options{Dir: dir, Fast: true}
	pg, err := pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Stop(ctx) }()
	if err := AdoptTemplate(ctx, pg, template); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if pg, err = pgcluster.Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, pg.URL(pgcluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := migrations.Check(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Current() || len(st.Applied) == 0 {
		t.Fatalf("seeded database: %+v", st)
	}
	var templates, leftover int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_database WHERE datistemplate OR NOT datallowconn) - 2,
		(SELECT count(*) FROM pg_database WHERE datname = $1)`, template).Scan(&templates, &leftover); err != nil {
		t.Fatal(err)
	}
	if templates != 0 || leftover != 0 {
		t.Fatalf("%d templates besides template0/1, %d databases named %s", templates, leftover, template)
	}
}
