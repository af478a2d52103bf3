package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Folding of the buffered counters (docs/schema.md "Buffered counters";
// migration 00028). Request paths only INSERT counter_deltas rows;
// FoldCounterDeltas merges them into their target rows: counters by sum,
// timestamps by maximum. Each batch deletes the deltas it merges in the
// transaction that applies them, so a delta is applied exactly once
// whatever crashes or runs concurrently. Deltas whose target row is gone
// are dropped with the batch (the migration's rule).

// DefaultCounterFoldBatch is the number of deltas one fold transaction
// takes.
const DefaultCounterFoldBatch = 1000

// UnfoldedWritesMargin bounds how many row-creating writes to one package
// or repository the buffered counters may not have folded yet: one fold
// interval (counters.DefaultInterval, 30 s) of back-to-back writes at
// 3 ms each. A limit checked against a buffered count counts the rows
// exactly once the count is within this margin of it.
const UnfoldedWritesMargin = 10000

// counterFoldLockClass is the first key of the transaction-level advisory
// lock one folder holds per namespace (the second key is a hash of the
// namespace id): two folders of one namespace would lock the same target
// rows in different orders, so the second one skips the namespace instead.
const counterFoldLockClass = 0x636f756e // "coun"

// counterFoldBeginSQL: a background transaction; a target row held by a
// foreground writer makes the batch give up after 5 s and retry later
// rather than queue behind it.
const counterFoldBeginSQL = "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = '5s'"

// counterFoldTakeSQL deletes the oldest deltas of one namespace (rows
// another transaction holds are skipped) and returns them combined per
// target row and field. It takes only the fields this release folds ($3,
// a bit mask of fields per target, as counter_deltas' CHECK has them;
// a target past its end is not taken): during a rolling upgrade an
// instance of the release before would otherwise delete the deltas of a
// field it does not know and apply nothing of them. The test is written
// "<> 0" because PostgreSQL guesses that an expression's "= 1" holds for
// few rows and then sorts all of a namespace's deltas (38 ms for 50,000)
// instead of reading the first ones in id order (1.6 ms); "<> 0" it
// guesses holds for most, which is the truth.
const counterFoldTakeSQL = `
WITH d AS (
	DELETE FROM counter_deltas
	WHERE namespace_id = $1 AND id IN (` + counterFoldPickSQL + `)
	RETURNING target, target_id, field, delta, observed_at
)
SELECT target, target_id, field, sum(delta)::bigint, max(observed_at), count(*)
FROM d GROUP BY target, target_id, field`

// counterFoldPickSQL locks the deltas counterFoldTakeSQL takes.
const counterFoldPickSQL = `
		SELECT id FROM counter_deltas WHERE namespace_id = $1
		  AND ((($3::integer[])[target + 1] >> field) & 1) <> 0
		ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`

// foldedFields is, per target (the index), the bit mask of the fields a
// fold takes: by default every field of every target of this release
// (enum.CounterTarget.Fields).
type foldedFields []int32

var releaseFields = func() foldedFields {
	var m foldedFields
	for _, t := range enum.CounterTargetValues() {
		for int(t) >= len(m) {
			m = append(m, 0)
		}
		for _, f := range t.Fields() {
			m[t] |= 1 << f
		}
	}
	return m
}()

// counterTargetKey is the column that identifies a target row besides
// namespace_id: namespace_statistics has one row per namespace.
func counterTargetKey(t enum.CounterTarget) string {
	if t == enum.CounterTargetNamespaceStatistics {
		return "namespace_id"
	}
	return "id"
}

// counterFoldSQL is the UPDATE that merges one target table's combined
// deltas: $2 the target row ids (sorted), then one array per buffered
// field of the table, in Fields() order (NULL where a row has no delta
// for the field). Counters add, timestamps keep the later value
// (GREATEST ignores NULLs).
func counterFoldSQL(t enum.CounterTarget) string {
	var set, cols, arrays []string
	for i, f := range t.Fields() {
		col := f.String()
		p := fmt.Sprintf("$%d", i+3)
		if f.IsTimestamp() {
			set = append(set, fmt.Sprintf("%s = GREATEST(r.%s, u.%s)", col, col, col))
			arrays = append(arrays, p+"::timestamptz[]")
		} else {
			set = append(set, fmt.Sprintf("%s = r.%s + coalesce(u.%s, 0)", col, col, col))
			arrays = append(arrays, p+"::bigint[]")
		}
		cols = append(cols, col)
	}
	key := counterTargetKey(t)
	return fmt.Sprintf(`UPDATE %s AS r SET %s
FROM unnest($2::uuid[], %s) AS u(target_id, %s)
WHERE r.namespace_id = $1 AND r.%s = u.target_id`,
		t.String(), strings.Join(set, ", "), strings.Join(arrays, ", "), strings.Join(cols, ", "), key)
}

// counterFoldSQLs are the UPDATE statements by target, built once.
var counterFoldSQLs = func() map[enum.CounterTarget]string {
	m := map[enum.CounterTarget]string{}
	for _, t := range enum.CounterTargetValues() {
		m[t] = counterFoldSQL(t)
	}
	return m
}()

// CounterFoldResult counts what a fold merged.
type CounterFoldResult struct {
	Deltas  int // counter_deltas rows merged and deleted
	Targets int // target rows updated
	Batches int // committed transactions
	// Skipped: another folder held the namespace.
	Skipped bool
}

// foldCell is one target row's combined change of one field.
type foldCell struct {
	delta int64
	at    *time.Time
}

// foldRows are one target table's combined deltas: row id → field → cell.
type foldRows map[uuid.UUID]map[enum.CounterField]foldCell

// FoldCounterDeltas merges the pending deltas of one namespace, batch
// transactions of up to batch deltas each (DefaultCounterFoldBatch when
// batch <= 0), until fewer than a full batch remain or maxBatches batches
// committed (0: no bound), so one busy namespace cannot hold a run. When
// another folder holds the namespace it returns at once with Skipped. Lock
// timeouts and deadlocks come back as CodeRetryable with the batch rolled
// back (its deltas stay for the next run).
func (s *Store) FoldCounterDeltas(ctx context.Context, nsID uuid.UUID, batch, maxBatches int) (CounterFoldResult, error) {
	if batch <= 0 {
		batch = DefaultCounterFoldBatch
	}
	var res CounterFoldResult
	for maxBatches <= 0 || res.Batches < maxBatches {
		n, targets, locked, err := s.foldCounterBatch(ctx, nsID, batch, releaseFields)
		if err != nil {
			return res, err
		}
		if !locked {
			res.Skipped = true
			return res, nil
		}
		if n == 0 {
			return res, nil
		}
		res.Deltas += n
		res.Targets += targets
		res.Batches++
		if n < batch {
			return res, nil
		}
	}
	return res, nil
}

// foldCounterBatch is one transaction: lock the namespace for folding,
// take up to batch deltas, apply them per target table, commit.
func (s *Store) foldCounterBatch(ctx context.Context, nsID uuid.UUID, batch int, fields foldedFields) (deltas, targets int, locked bool, err error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: counterFoldBeginSQL})
	if err != nil {
		return 0, 0, false, db.MapErr(fmt.Errorf("store: fold counters: begin: %w", err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	err = tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, hashtext($2::text))`,
		counterFoldLockClass, nsID.String()).Scan(&locked)
	if err != nil || !locked {
		return 0, 0, false, db.MapErr(wrapFold(nsID, "lock", err))
	}
	byTarget, deltas, err := takeCounterDeltas(ctx, tx, nsID, batch, fields)
	if err != nil || deltas == 0 {
		return 0, 0, true, err
	}
	for _, t := range slices.Sorted(maps.Keys(byTarget)) {
		n, err := applyCounterDeltas(ctx, tx, nsID, t, byTarget[t])
		if err != nil {
			return 0, 0, true, err
		}
		targets += n
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, true, db.MapErr(wrapFold(nsID, "commit", err))
	}
	return deltas, targets, true, nil
}

func wrapFold(nsID uuid.UUID, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: fold counters of namespace %s: %s: %w", nsID, what, err)
}

// takeCounterDeltas deletes one batch and groups it by target table.
func takeCounterDeltas(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, batch int, fields foldedFields) (map[enum.CounterTarget]foldRows, int, error) {
	rows, err := tx.Query(ctx, counterFoldTakeSQL, nsID, batch, []int32(fields))
	if err != nil {
		return nil, 0, db.MapErr(wrapFold(nsID, "take deltas", err))
	}
	defer rows.Close()
	out := map[enum.CounterTarget]foldRows{}
	total := 0
	for rows.Next() {
		var (
			target, field int16
			id            uuid.UUID
			sum           *int64
			at            *time.Time
			n             int
		)
		if err := rows.Scan(&target, &id, &field, &sum, &at, &n); err != nil {
			return nil, 0, wrapFold(nsID, "read deltas", err)
		}
		t := enum.CounterTarget(target)
		if out[t] == nil {
			out[t] = foldRows{}
		}
		if out[t][id] == nil {
			out[t][id] = map[enum.CounterField]foldCell{}
		}
		c := foldCell{at: at}
		if sum != nil {
			c.delta = *sum
		}
		out[t][id][enum.CounterField(field)] = c
		total += n
	}
	if err := rows.Err(); err != nil {
		return nil, 0, db.MapErr(wrapFold(nsID, "take deltas", err))
	}
	return out, total, nil
}

// applyCounterDeltas runs one target table's UPDATE; rows are passed in id
// order. It returns the number of target rows updated (rows that no longer
// exist are not, and their deltas are dropped with the batch).
func applyCounterDeltas(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, t enum.CounterTarget, rows foldRows) (int, error) {
	sqlText, ok := counterFoldSQLs[t]
	if !ok {
		return 0, wrapFold(nsID, "apply", fmt.Errorf("unknown counter target %d", t))
	}
	ids := slices.SortedFunc(maps.Keys(rows), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	fields := t.Fields()
	args := []any{nsID, ids}
	for _, f := range fields {
		if f.IsTimestamp() {
			col := make([]*time.Time, len(ids))
			for i, id := range ids {
				col[i] = rows[id][f].at
			}
			args = append(args, col)
			continue
		}
		col := make([]*int64, len(ids))
		for i, id := range ids {
			if c, ok := rows[id][f]; ok {
				col[i] = &c.delta
			}
		}
		args = append(args, col)
	}
	tag, err := tx.Exec(ctx, sqlText, args...)
	if err != nil {
		return 0, db.MapErr(wrapFold(nsID, "apply to "+t.String(), err))
	}
	return int(tag.RowsAffected()), nil
}

// NamespacesWithCounterDeltas lists, in id order after the given id
// (uuid.Nil to start), up to limit namespaces that have pending deltas.
// Each namespace costs one index probe of its own partition.
func (s *Store) NamespacesWithCounterDeltas(ctx context.Context, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT n.id FROM namespaces n
		WHERE n.id > $1 AND EXISTS (SELECT 1 FROM counter_deltas d WHERE d.namespace_id = n.id)
		ORDER BY n.id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: namespaces with counter deltas: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("store: namespaces with counter deltas: %w", err)
	}
	return ids, nil
}

// PendingCounterDeltas counts one namespace's deltas not yet folded.
func (s *Store) PendingCounterDeltas(ctx context.Context, nsID uuid.UUID) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM counter_deltas WHERE namespace_id = $1`, nsID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: pending counter deltas: %w", err)
	}
	return n, nil
}
