package migrations_test

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
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
	accountingRoundTrip(t, accountingPartitionLookupsVersion,
		"namespace_partition", "accounting_owner_container_image", "accounting_refs_npm")
}
