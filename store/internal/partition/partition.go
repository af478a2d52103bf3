// Package partition knows the hash partitions of the tables partitioned by
// namespace_id (docs/schema.md, "Partitioning"): which partition holds a
// namespace's rows, and statements that name single partitions.
package partition

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Count is the partition count: every table partitioned by namespace_id
// has 64 children, partitions.<table>_p00 to _p63, _pNN holding remainder
// NN (the migrations' catalog test checks it).
const Count = 64

// ofSQL asks PostgreSQL which remainder a namespace id hashes to; the hash
// is PostgreSQL's (hashuuidextended with the partition seed), so it is not
// recomputed here.
const ofSQL = `
SELECT r FROM generate_series(0, $2::int - 1) r
WHERE satisfies_hash_partition('public.repositories'::regclass, $2::int, r, $1::uuid)`

// cache maps namespace id -> partition number. An entry never goes stale,
// on any instance: the count is fixed and the hash is stable.
var cache sync.Map

// Of returns the partition number of a namespace id (cached), asking q
// (the caller's transaction, or the pool) the first time: a caller
// holding a connection must not wait for a second one.
func Of(ctx context.Context, q db.Queryer, namespaceID uuid.UUID) (int, error) {
	if p, ok := cache.Load(namespaceID); ok {
		return p.(int), nil
	}
	var p int
	if err := q.QueryRow(ctx, ofSQL, namespaceID, Count).Scan(&p); err != nil {
		return 0, db.MapErr(fmt.Errorf("store: partition of namespace %s: %w", namespaceID, err))
	}
	cache.Store(namespaceID, p)
	return p, nil
}

// Statements returns one statement per partition: sql with every {table}
// replaced by partitions.table_pNN. A statement naming single partitions
// is prepared once per connection and runs on a cached generic plan; the
// same statement on the partitioned parents is planned again at every
// call, to prune 64 partitions (hundreds of microseconds). Kept for the
// statements every request or publish runs. A wrong partition cannot pass
// unnoticed: a row inserted into another namespace's partition violates
// its partition constraint, a read finds nothing, and the npm store's
// TestPerPartitionStatements checks Of against where PostgreSQL routes a
// namespace's rows.
func Statements(sql string, tables ...string) [Count]string {
	var out [Count]string
	for p := range out {
		pairs := make([]string, 0, 2*len(tables))
		for _, t := range tables {
			pairs = append(pairs, "{"+t+"}", fmt.Sprintf("partitions.%s_p%02d", t, p))
		}
		out[p] = strings.NewReplacer(pairs...).Replace(sql)
	}
	return out
}

// Parent returns sql with every {table} replaced by the partitioned
// parent's name: the statement of Statements for rows of several
// partitions.
func Parent(sql string, tables ...string) string {
	pairs := make([]string, 0, 2*len(tables))
	for _, t := range tables {
		pairs = append(pairs, "{"+t+"}", t)
	}
	return strings.NewReplacer(pairs...).Replace(sql)
}

// QueryRow runs the namespace's statement of stmts (from Statements, with
// the namespace id as $1) on q as a statement cached per connection; args
// are $2 onwards. An error finding the partition comes back from Scan.
func QueryRow(ctx context.Context, q db.Queryer, stmts *[Count]string, namespaceID uuid.UUID, args ...any) pgx.Row {
	p, err := Of(ctx, q, namespaceID)
	if err != nil {
		return errRow{err}
	}
	return cached(ctx, q, stmts[p], append([]any{namespaceID}, args...)...)
}

// Query is QueryRow for a statement of several rows.
func Query(ctx context.Context, q db.Queryer, stmts *[Count]string, namespaceID uuid.UUID, args ...any) (pgx.Rows, error) {
	p, err := Of(ctx, q, namespaceID)
	if err != nil {
		return nil, err
	}
	return q.Query(ctx, stmts[p], cachedArgs(args, namespaceID)...)
}

// Exec is QueryRow for a statement that returns no rows.
func Exec(ctx context.Context, q db.Queryer, stmts *[Count]string, namespaceID uuid.UUID, args ...any) (pgconn.CommandTag, error) {
	p, err := Of(ctx, q, namespaceID)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return q.Exec(ctx, stmts[p], cachedArgs(args, namespaceID)...)
}

// cached runs stmt on q as a statement prepared once per connection.
func cached(ctx context.Context, q db.Queryer, stmt string, args ...any) pgx.Row {
	return q.QueryRow(ctx, stmt, cachedArgs(args)...)
}

// cachedArgs makes lead then args those of a statement prepared once per
// connection, in one allocation.
func cachedArgs(args []any, lead ...any) []any {
	out := append(make([]any, 0, 1+len(lead)+len(args)), pgx.QueryExecModeCacheStatement)
	return append(append(out, lead...), args...)
}

// errRow is a pgx.Row that only fails.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
