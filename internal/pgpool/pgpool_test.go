package pgpool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgpool"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// TestSettings: every connection runs with Settings, and hash-partitioned
// tables are still pruned to one partition while planning (pruning does
// not depend on constraint_exclusion).
func TestSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	for k, want := range pgpool.Settings {
		var got string
		if err := pool.QueryRow(ctx, "SELECT current_setting($1)", k).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	rows, err := pool.Query(ctx, `EXPLAIN (COSTS OFF) SELECT 1 FROM repositories WHERE id = $1 AND namespace_id = $2 FOR KEY SHARE`,
		pgx.QueryExecModeExec, uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	if strings.Contains(text, "Append") || !strings.Contains(text, "on repositories_") {
		t.Fatalf("a partition-key lookup does not plan exactly one partition:\n%s", text)
	}

	// A statement whose estimated cost passes jit_above_cost (a plain
	// EXPLAIN starts the executor, which compiles, without running it).
	var jitAbove float64
	if err := pool.QueryRow(ctx, "SELECT current_setting('jit_above_cost')::float8").Scan(&jitAbove); err != nil {
		t.Fatal(err)
	}
	rows, err = pool.Query(ctx, `EXPLAIN (FORMAT JSON) SELECT sum(x) FROM generate_series(1, 100000000) x`)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := pgx.CollectRows(rows, pgx.RowTo[[]map[string]any])
	if err != nil {
		t.Fatal(err)
	}
	cost, _ := plans[0][0]["Plan"].(map[string]any)["Total Cost"].(float64)
	if cost <= jitAbove {
		t.Fatalf("the statement costs %.0f, not above jit_above_cost (%.0f): it tests nothing", cost, jitAbove)
	}
	if jit, ok := plans[0][0]["JIT"]; ok {
		t.Fatalf("the statement was JIT-compiled: %v", jit)
	}
}

// TestURLWins: a setting the database URL gives is kept.
func TestURLWins(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig("postgres://u@localhost/db?constraint_exclusion=partition")
	if err != nil {
		t.Fatal(err)
	}
	pgpool.Configure(cfg)
	if got := cfg.ConnConfig.RuntimeParams["constraint_exclusion"]; got != "partition" {
		t.Fatalf("constraint_exclusion = %q, want the URL's partition", got)
	}
	if cfg.AfterConnect == nil {
		t.Fatal("no AfterConnect: uuid.UUID would travel as text")
	}
}
