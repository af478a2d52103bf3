package migrations_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/migrations"
)

const accountingPartitionLookupsVersion = 64

// TestNamespacePartition: namespace_partition names the partition
// PostgreSQL routes a namespace id to, for 5,000 random ids.
func TestNamespacePartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var wrong, total int
	err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('public.repositories'::regclass, 64, namespace_partition(id), id)),
		       count(*)
		FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 5000)) x`).Scan(&wrong, &total)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || total != 5000 {
		t.Fatalf("namespace_partition is wrong for %d of %d ids", wrong, total)
	}
}

// TestAccountingPartitionLookupsUpgrade: the inserts and deletes of
// TestAccountingOwnerLookupUpgrade record the same counter_deltas after
// every statement at 00063 (lookups on the partitioned parents), after the
// upgrade to 00064 (one statement per partition) and after its Down; the
// medians of the timed statements are logged with -v.
func TestAccountingPartitionLookupsUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := databaseBefore(t, accountingPartitionLookupsVersion)
	lookups := func() int {
		return len(queryStrings(ctx, t, pool, `SELECT proname::text FROM pg_proc
			WHERE proname IN ('namespace_partition', 'accounting_owner_container_image', 'accounting_refs_npm')`))
	}
	if n := lookups(); n != 0 {
		t.Fatalf("%d of the new functions exist before the upgrade", n)
	}
	before := runAllAccounting(t, pool)
	joined := strings.Join(before.trace, "\n")
	if len(before.trace) < 80 || !strings.Contains(joined, "=5000,") || !strings.Contains(joined, "=300,") {
		t.Fatalf("the workload recorded no hosted size deltas:\n%s", joined)
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if n := lookups(); n != 3 {
		t.Fatalf("%d of the 3 functions checked after the upgrade", n)
	}
	after := runAllAccounting(t, pool)
	if !slices.Equal(before.trace, after.trace) {
		t.Fatalf("accounting differs after the upgrade:\n%s", traceDiff(before.trace, after.trace))
	}
	for _, k := range sortedKeys(before.timed) {
		t.Logf("%-26s median of %2d: %6.2f ms at 00063, %6.2f ms at 00064", k, len(before.timed[k]),
			median(before.timed[k]), median(after.timed[k]))
	}

	downTo(t, pool, accountingPartitionLookupsVersion-1)
	if n := lookups(); n != 0 {
		t.Fatalf("%d of the new functions left after the Down", n)
	}
	down := runAllAccounting(t, pool)
	if !slices.Equal(before.trace, down.trace) {
		t.Fatalf("accounting differs after the Down:\n%s", traceDiff(before.trace, down.trace))
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("Up after the Down: %v", err)
	}
}
