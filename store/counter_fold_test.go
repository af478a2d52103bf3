package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Every target's fold UPDATE runs against the real schema (table, key and
// column names and types from enum.CounterTarget.Fields()), for every
// target the counter_deltas CHECK accepts, with one value per field.
func TestCounterFoldStatementsMatchSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	ns, id := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	now := time.Now()
	for _, target := range enum.CounterTargetValues() {
		rows := foldRows{id: {}}
		for _, f := range target.Fields() {
			rows[id][f] = foldCell{delta: 1, at: &now}
		}
		n, err := applyCounterDeltas(ctx, tx, ns, target, rows)
		if err != nil {
			t.Fatalf("%v: %v\n%s", target, err, counterFoldSQLs[target])
		}
		if n != 0 {
			t.Fatalf("%v: %d rows updated for a missing row", target, n)
		}
	}
}

// A fold takes only the target and field pairs it knows: a delta of
// another pair (a field added by a later release, seen by an instance of
// the release before during a rolling upgrade) stays for a fold that
// knows it, rather than being deleted with the batch.
func TestFoldLeavesPairsItDoesNotKnow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newBlobFixture(t, "mem", Options{})
	if _, err := f.pool.Exec(ctx, `INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
		VALUES (gen_uuidv7(), $1, 0, $2, 0, 3), (gen_uuidv7(), $1, 0, $2, 1, 5)`, f.ns, f.repo); err != nil {
		t.Fatal(err)
	}
	counts := func() (artifacts, downloads, pending int64) {
		t.Helper()
		if err := f.pool.QueryRow(ctx, `SELECT artifacts_count, downloads_count,
			(SELECT count(*) FROM counter_deltas WHERE namespace_id = $1)
			FROM repositories WHERE namespace_id = $1 AND id = $2`, f.ns, f.repo).Scan(&artifacts, &downloads, &pending); err != nil {
			t.Fatal(err)
		}
		return
	}
	// The release's fields without repositories.downloads_count.
	older := slices.Clone(releaseFields)
	older[enum.CounterTargetRepository] &^= 1 << enum.CounterFieldDownloadsCount
	if n, _, _, err := f.store.foldCounterBatch(ctx, f.ns, 100, older); err != nil || n != 1 {
		t.Fatalf("fold without the field: %d deltas, %v; want 1", n, err)
	}
	if a, d, p := counts(); a != 3 || d != 0 || p != 1 {
		t.Fatalf("after the fold without the field: artifacts %d, downloads %d, %d deltas pending; want 3, 0, 1", a, d, p)
	}
	if _, err := f.store.FoldCounterDeltas(ctx, f.ns, 0, 0); err != nil {
		t.Fatal(err)
	}
	if a, d, p := counts(); a != 3 || d != 5 || p != 0 {
		t.Fatalf("after the release's fold: artifacts %d, downloads %d, %d deltas pending; want 3, 5, 0", a, d, p)
	}
}

// TestFoldPicksInIDOrder: with a namespace's backlog analysed, a batch
// reads the oldest deltas through the index in id order, with no sort of
// the whole backlog (which the field test written "= 1" got).
func TestFoldPicksInIDOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newBlobFixture(t, "mem", Options{})
	if _, err := f.pool.Exec(ctx, `INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
		SELECT gen_uuidv7(), $1, 0, $2, 0, 1 FROM generate_series(1, 20000)`, f.ns, f.repo); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `ANALYZE counter_deltas`); err != nil {
		t.Fatal(err)
	}
	rows, err := f.pool.Query(ctx, "EXPLAIN "+counterFoldPickSQL, f.ns, DefaultCounterFoldBatch, []int32(releaseFields))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if sortNode.MatchString(plan) || !strings.Contains(plan, "Index Scan") {
		t.Fatalf("the fold's pick sorts the backlog:\n%s", plan)
	}
}
