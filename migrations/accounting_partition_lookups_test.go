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
	wrong, total := partitionMisses(t, `
		SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('public.repositories'::regclass, 64, namespace_partition(id), id)),
		       count(*)
		FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 5000)) x`)
	if wrong != 0 || total != 5000 {
		t.Fatalf("namespace_partition is wrong for %d of %d ids", wrong, total)
	}
}

// partitionMisses runs query, which counts the keys a partition function
// names wrongly and all the keys it tried, on a fresh database.
func partitionMisses(t *testing.T, query string) (wrong, total int) {
	t.Helper()
	t.Parallel()
	if err := testdb.New(t).QueryRow(context.Background(), query).Scan(&wrong, &total); err != nil {
		t.Fatal(err)
	}
	return wrong, total
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
