package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

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
