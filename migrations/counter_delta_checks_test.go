package migrations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

const counterDeltaChecksVersion = 63

// TestCounterDeltaChecksUpgrade: a database of the release before 00063,
// holding buffered counter deltas, upgrades to 00063. The rows
// stay, the two rewritten CHECK constraints no longer use CASE (whose
// per-statement preparation was the point of the change), and counter_deltas
// accepts and refuses exactly the rows it did before, over every target and
// field around the valid ranges and every combination of delta and
// observed_at.
func TestCounterDeltaChecksUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, counterDeltaChecksVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	kept := v7(t)
	f.must("counter_deltas", row{"id", kept, "namespace_id", ns, "target", int16(1), "target_id", ns,
		"field", int16(5), "delta", int64(42)})

	before := counterDeltaAcceptance(ctx, t, f, ns)
	upTo(t, pool, counterDeltaChecksVersion)
	if n := f.count("counter_deltas", "namespace_id = $1 AND id = $2 AND delta = 42", ns, kept); n != 1 {
		t.Fatalf("buffered delta after the upgrade: %d rows, want 1", n)
	}
	for _, name := range []string{"counter_deltas_target_field_valid", "counter_deltas_value_kind"} {
		var def string
		if err := pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid = 'counter_deltas'::regclass AND conname = $1`, name).Scan(&def); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(def, "CASE") {
			t.Errorf("%s still uses CASE after the upgrade: %s", name, def)
		}
	}
	if after := counterDeltaAcceptance(ctx, t, f, ns); after != before {
		t.Errorf("counter_deltas acceptance changed by the upgrade:\nbefore %s\nafter  %s", before, after)
	}
}

// counterDeltaAcceptance inserts one counter_deltas row for every target in
// [-1, 16], field in [-1, 12] and each of the four ways to set delta and
// observed_at, and returns one character per insert: '+' accepted, '-'
// refused by a CHECK. Any other failure fails the test.
func counterDeltaAcceptance(ctx context.Context, t *testing.T, f *fixture, ns uuid.UUID) string {
	t.Helper()
	values := []struct {
		delta    any
		observed any
	}{{int64(1), nil}, {nil, time.Now()}, {int64(1), time.Now()}, {nil, nil}}
	var b strings.Builder
	for target := int16(-1); target <= 16; target++ {
		for field := int16(-1); field <= 12; field++ {
			for _, v := range values {
				err := insert(ctx, f.q, "counter_deltas", row{"id", v7(t), "namespace_id", ns, "target", target,
					"target_id", ns, "field", field, "delta", v.delta, "observed_at", v.observed})
				switch sqlState(err) {
				case "":
					b.WriteByte('+')
				case codeCheck:
					b.WriteByte('-')
				default:
					t.Fatalf("insert (%d, %d, %v, %v): %v", target, field, v.delta, v.observed, err)
				}
			}
		}
	}
	return b.String()
}
