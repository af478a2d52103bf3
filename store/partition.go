package store

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// namespacePartitionCount is the hash partition count (docs/schema.md
// "Partitioning"): every table
// partitioned by namespace_id has 64 children, partitions.<table>_p00 to
// _p63, _pNN holding remainder NN (migrations' TestCatalog checks it).
const namespacePartitionCount = 64

// namespacePartitionSQL asks PostgreSQL which remainder a namespace id
// hashes to; the hash is PostgreSQL's (hashuuidextended with the
// partition seed), so it is not recomputed here.
const namespacePartitionSQL = `
SELECT r FROM generate_series(0, $2::int - 1) r
WHERE satisfies_hash_partition('public.repositories'::regclass, $2::int, r, $1::uuid)`

// namespacePartitions caches namespace id -> partition number per Store.
// It never changes: the partition count is fixed and the hash is stable.
var namespacePartitions sync.Map // partitionKey -> int

type partitionKey struct {
	s  *Store
	id uuid.UUID
}

// namespacePartition returns the partition number of a namespace id in
// every table hash-partitioned by namespace_id (cached), asking q (the
// caller's transaction, or the pool) the first time: a caller holding a
// connection must not wait for a second one.
func (s *Store) namespacePartition(ctx context.Context, q querier, namespaceID uuid.UUID) (int, error) {
	key := partitionKey{s, namespaceID}
	if p, ok := namespacePartitions.Load(key); ok {
		return p.(int), nil
	}
	var p int
	if err := q.QueryRow(ctx, namespacePartitionSQL, namespaceID, namespacePartitionCount).Scan(&p); err != nil {
		return 0, mapErr(fmt.Errorf("store: partition of namespace %s: %w", namespaceID, err))
	}
	namespacePartitions.Store(key, p)
	return p, nil
}

// perPartition returns one statement per partition: sql with every
// {table} replaced by partitions.table_pNN. A statement naming single
// partitions is prepared once per connection and runs on a cached generic
// plan; the same statement on the partitioned parents is planned again
// at every call, to prune 64 partitions (hundreds of microseconds). Kept
// for the statements every request or publish runs. A wrong partition
// cannot pass unnoticed: a row inserted into another namespace's
// partition violates its partition constraint, a read finds nothing, and
// TestPerPartitionStatements checks namespacePartition against where
// PostgreSQL routes a namespace's rows.
func perPartition(sql string, tables ...string) [namespacePartitionCount]string {
	var out [namespacePartitionCount]string
	for p := range out {
		pairs := make([]string, 0, 2*len(tables))
		for _, t := range tables {
			pairs = append(pairs, "{"+t+"}", fmt.Sprintf("partitions.%s_p%02d", t, p))
		}
		out[p] = strings.NewReplacer(pairs...).Replace(sql)
	}
	return out
}
