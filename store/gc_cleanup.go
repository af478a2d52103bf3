package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// GCBatchLockBudget bounds how long one cleanup transaction keeps deleting
// objects under its blob-row locks: candidates it has not reached by then
// are left for the next batch (GCDeferred). With the 2 s bound of a single
// delete, no foreground caller waits on a batch's row for longer than the
// 5 s lock timeout it is willing to wait.
const GCBatchLockBudget = time.Second

// gcBeginSQL opens the cleanup transaction. Blob rows are taken with SKIP
// LOCKED; the lock timeout only bounds the short wait on a candidate row
// that a failure record or an operator requeue may hold. Every statement
// names the batch's partitions itself (partition.Digest). Custom plans for
// the triggers' statements: each names one digest or namespace, so
// plan-time pruning touches one partition of each 64-partition table,
// where a cached generic plan would lock and initialize all of them on
// every execution (PostgreSQL 15).
const gcBeginSQL = "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = '2s'; SET LOCAL plan_cache_mode = force_custom_plan"

// gcLockBlobsSQL takes the batch's blob rows without waiting: a held row
// means a foreground caller (or another worker) is using it, and GC gives
// way.
var gcLockBlobsSQL = partition.Statements(`SELECT `+BlobColumns+` FROM {blob_storage_blobs} b
WHERE (b.namespace_id, b.sha256) IN (SELECT * FROM unnest($1::uuid[], $2::bytea[]))
FOR UPDATE OF b SKIP LOCKED`, "blob_storage_blobs")

// gcBlobHeldSQL tells, of the keys whose row was not locked, which have a
// row (held by someone else) and which have none.
var gcBlobHeldSQL = partition.Statements(`SELECT u.ns, u.sha
FROM unnest($1::uuid[], $2::bytea[]) u(ns, sha)
WHERE EXISTS (SELECT 1 FROM {blob_storage_blobs} b WHERE b.namespace_id = u.ns AND b.sha256 = u.sha)`, "blob_storage_blobs")

// gcDropOrphansSQL deletes candidates that have no blob row (never
// existed, or reclaimed by an earlier episode whose candidate the
// reconcile scan recorded again), unless a row appeared meanwhile.
var gcDropOrphansSQL = partition.Statements(`DELETE FROM {gc_blob_review_queue} q
USING unnest($1::uuid[], $2::bytea[]) u(ns, sha)
WHERE q.namespace_id = u.ns AND q.sha256 = u.sha AND q.excluded_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM {blob_storage_blobs} b WHERE b.namespace_id = u.ns AND b.sha256 = u.sha)
RETURNING q.namespace_id, q.sha256`, "blob_storage_blobs", "gc_blob_review_queue")

// gcRecheckSQL runs as its own statement after the blob-row locks, so its
// snapshot includes everything committed by the transactions that held
// those rows before us; nobody can attach or detach while we hold them.
var gcRecheckSQL = partition.Statements(`
SELECT q.namespace_id, q.sha256, q.review_after, q.backoff_until, q.excluded_at,
       EXISTS (SELECT 1 FROM {blob_storage_attachments} a WHERE a.namespace_id = q.namespace_id AND a.sha256 = q.sha256)
FROM {gc_blob_review_queue} q
WHERE (q.namespace_id, q.sha256) IN (SELECT * FROM unnest($1::uuid[], $2::bytea[]))
FOR UPDATE OF q`, "blob_storage_attachments", "gc_blob_review_queue")

// gcDiscardSQL deletes the candidates of blobs referenced again.
var gcDiscardSQL = partition.Statements(`DELETE FROM {gc_blob_review_queue} q
USING unnest($1::uuid[], $2::bytea[]) u(ns, sha)
WHERE q.namespace_id = u.ns AND q.sha256 = u.sha`, "gc_blob_review_queue")

// gcBackoffSQL sets each candidate's backoff_until.
var gcBackoffSQL = partition.Statements(`UPDATE {gc_blob_review_queue} q SET backoff_until = u.until
FROM unnest($1::uuid[], $2::bytea[], $3::timestamptz[]) u(ns, sha, until)
WHERE q.namespace_id = u.ns AND q.sha256 = u.sha`, "gc_blob_review_queue")

// gcDeleteRowsSQL deletes the blob rows and candidates whose objects are
// gone, and moves their namespaces' last reclaim time.
var gcDeleteRowsSQL = partition.Statements(`
		WITH gone AS (
			SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::int8[]) u(ns, sha, id)
		), blob AS (
			DELETE FROM {blob_storage_blobs} b USING gone
			WHERE b.namespace_id = gone.ns AND b.sha256 = gone.sha AND b.id = gone.id
			RETURNING 1
		), cand AS (
			DELETE FROM {gc_blob_review_queue} q USING gone
			WHERE q.namespace_id = gone.ns AND q.sha256 = gone.sha
			RETURNING 1
		), stat AS (
			-- gcQueue.lastReclaimedAt, to the second: only a reclaim more
			-- than a second after the stored time moves it (so never
			-- backward, whatever order workers commit in). The one row per
			-- namespace would otherwise be locked by every cleanup from
			-- here to its commit, through the deletes' foreign key and
			-- accounting triggers, and a namespace's drain would run one
			-- cleanup at a time. A data-modifying WITH runs whether or not
			-- it is read.
			UPDATE namespace_statistics s SET gc_last_reclaimed_at = $4
			WHERE s.namespace_id IN (SELECT ns FROM gone)
			  AND (s.gc_last_reclaimed_at IS NULL OR s.gc_last_reclaimed_at < $4::timestamptz - interval '1 second')
		)
		SELECT (SELECT count(*) FROM blob), (SELECT count(*) FROM cand)`, "blob_storage_blobs", "gc_blob_review_queue")

// CleanupGCCandidate is CleanupGCCandidates of one candidate.
func (s *Store) CleanupGCCandidate(ctx context.Context, key GCCandidateKey, p GCCleanupPolicy) (*GCCleanupResult, error) {
	res, err := s.CleanupGCCandidates(ctx, []GCCandidateKey{key}, p)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// CleanupGCCandidates is the transaction of gc:cleanup
// (docs/garbage-collection.md, rule 4) over a batch of candidates of one
// partition (GCPartition): lock their blob rows, skipping held ones;
// recheck, under those locks, that each candidate is live and due, that
// its blob has zero attachments and is past the grace window; then, one
// candidate at a time, run MayDelete (the kill switch) and delete the
// object (bounded, a missing object counts as deleted); delete the rows of
// the deleted objects; commit. It returns one result per key, in order.
//
// A crash (or any failure) after a storage delete and before the commit
// leaves that blob row and its candidate: the live candidate makes the
// next dedup skip check storage and re-upload, and the next cleanup finds
// the object missing and succeeds.
//
// Only errors the caller cannot classify are returned as error (database
// failures, a failed commit, AfterObjectDelete), and then nothing of the
// batch is committed; storage failures come back as GCDeleteFailed.
func (s *Store) CleanupGCCandidates(ctx context.Context, keys []GCCandidateKey, p GCCleanupPolicy) ([]*GCCleanupResult, error) {
	b, err := newGCBatch(keys)
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: gcBeginSQL})
	if err != nil {
		return nil, fmt.Errorf("store: gc cleanup: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op after Commit
	if err := b.run(ctx, tx, s, p); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("store: gc cleanup: commit: %w", err)
	}
	return b.res, nil
}

// GCPartitions is the number of partitions of the GC tables.
const GCPartitions = partition.Count

// GCPartition is the partition holding a candidate's rows: a cleanup
// batch is of one partition, so that its statements name single
// partitions.
func GCPartition(key GCCandidateKey) int { return partition.Digest(key.SHA256) }

// gcBatch is one cleanup transaction's state.
type gcBatch struct {
	part  int
	res   []*GCCleanupResult
	index map[GCCandidateKey]int
}

func newGCBatch(keys []GCCandidateKey) (*gcBatch, error) {
	if len(keys) == 0 {
		return nil, errors.New("store: gc cleanup: no candidates")
	}
	b := &gcBatch{part: GCPartition(keys[0]), index: make(map[GCCandidateKey]int, len(keys))}
	for i, k := range keys {
		if GCPartition(k) != b.part {
			return nil, fmt.Errorf("store: gc cleanup: candidates %s and %s are in different partitions", keys[0], k)
		}
		if _, dup := b.index[k]; dup {
			return nil, fmt.Errorf("store: gc cleanup: candidate %s twice in one batch", k)
		}
		b.index[k] = i
		b.res = append(b.res, &GCCleanupResult{Key: k, Outcome: GCCandidateGone})
	}
	return b, nil
}

// keyArrays returns the namespace ids and digests of keys as the unnest
// arguments of the batch statements.
func keyArrays(keys []GCCandidateKey) ([]uuid.UUID, [][]byte) {
	ns, sha := make([]uuid.UUID, len(keys)), make([][]byte, len(keys))
	for i, k := range keys {
		ns[i], sha[i] = k.NamespaceID, k.SHA256[:]
	}
	return ns, sha
}

func (b *gcBatch) keys(filter func(*GCCleanupResult) bool) []GCCandidateKey {
	var out []GCCandidateKey
	for _, r := range b.res {
		if filter(r) {
			out = append(out, r.Key)
		}
	}
	return out
}

func (b *gcBatch) run(ctx context.Context, tx pgx.Tx, s *Store, p GCCleanupPolicy) error {
	if err := b.lockBlobs(ctx, tx); err != nil {
		return err
	}
	if err := b.sortUnlocked(ctx, tx); err != nil {
		return err
	}
	if err := b.recheck(ctx, tx, p); err != nil {
		return err
	}
	deleted, err := b.deleteObjects(ctx, tx, s, p)
	if err != nil {
		return err
	}
	return b.deleteRows(ctx, tx, deleted, p.Now)
}

// lockBlobs locks the blob rows nobody else holds and records them.
func (b *gcBatch) lockBlobs(ctx context.Context, tx pgx.Tx) error {
	ns, sha := keyArrays(b.keys(func(*GCCleanupResult) bool { return true }))
	rows, err := tx.Query(ctx, gcLockBlobsSQL[b.part], pgx.QueryExecModeCacheStatement, ns, sha)
	if err != nil {
		return fmt.Errorf("store: gc cleanup: lock blobs: %w", err)
	}
	blobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Blob, error) { return scanBlob(r) })
	if err != nil {
		return fmt.Errorf("store: gc cleanup: lock blobs: %w", err)
	}
	for _, bl := range blobs {
		b.res[b.index[GCCandidateKey{NamespaceID: bl.NamespaceID, SHA256: bl.SHA256}]].Blob = bl
	}
	return nil
}

// sortUnlocked classifies the keys whose blob row was not locked: a row
// someone else holds (GCBlobLocked), or none at all, whose candidate is
// dropped (GCOrphanCandidate) unless it went away or a row appeared.
func (b *gcBatch) sortUnlocked(ctx context.Context, tx pgx.Tx) error {
	unlocked := b.keys(func(r *GCCleanupResult) bool { return r.Blob == nil })
	if len(unlocked) == 0 {
		return nil
	}
	ns, sha := keyArrays(unlocked)
	held, err := collectKeys(ctx, tx, gcBlobHeldSQL[b.part], ns, sha)
	if err != nil {
		return fmt.Errorf("store: gc cleanup: blob rows held: %w", err)
	}
	for _, k := range held {
		b.res[b.index[k]].Outcome = GCBlobLocked
	}
	orphans, err := collectKeys(ctx, tx, gcDropOrphansSQL[b.part], ns, sha)
	if err != nil {
		return fmt.Errorf("store: gc cleanup: drop orphan candidates: %w", err)
	}
	for _, k := range orphans {
		b.res[b.index[k]].Outcome = GCOrphanCandidate
	}
	return nil
}

func collectKeys(ctx context.Context, q db.Queryer, sql string, args ...any) ([]GCCandidateKey, error) {
	rows, err := q.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (GCCandidateKey, error) {
		var k GCCandidateKey
		var sha []byte
		if err := r.Scan(&k.NamespaceID, &sha); err != nil {
			return k, err
		}
		if len(sha) != 32 {
			return k, fmt.Errorf("a %d-byte sha256", len(sha))
		}
		k.SHA256 = [32]byte(sha)
		return k, nil
	})
}

// recheck locks the candidates of the locked blobs and decides each: gone
// (not live or not due), referenced again (candidate discarded), inside
// the grace window or held back by the phase (backoff), or to delete
// (marked GCReclaimed for deleteObjects to act on).
func (b *gcBatch) recheck(ctx context.Context, tx pgx.Tx, p GCCleanupPolicy) error {
	ns, sha := keyArrays(b.keys(func(r *GCCleanupResult) bool { return r.Blob != nil }))
	if len(ns) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, gcRecheckSQL[b.part], pgx.QueryExecModeCacheStatement, ns, sha)
	if err != nil {
		return fmt.Errorf("store: gc cleanup: recheck: %w", err)
	}
	defer rows.Close()
	var discard, backoff []GCCandidateKey
	var until []time.Time
	for rows.Next() {
		var (
			k                    GCCandidateKey
			digest               []byte
			reviewAfter          time.Time
			backoffUntil, exclAt *time.Time
			referenced           bool
		)
		if err := rows.Scan(&k.NamespaceID, &digest, &reviewAfter, &backoffUntil, &exclAt, &referenced); err != nil {
			return fmt.Errorf("store: gc cleanup: recheck: %w", err)
		}
		k.SHA256 = [32]byte(digest)
		r := b.res[b.index[k]]
		graceEnd := r.Blob.CreatedAt.Add(GCGracePeriod)
		switch {
		case exclAt != nil || reviewAfter.After(p.Now) || (backoffUntil != nil && backoffUntil.After(p.Now)):
			// not live or not due: stays GCCandidateGone
		case referenced:
			r.Outcome = GCReferenced
			discard = append(discard, k)
		case graceEnd.After(p.Now):
			r.Outcome = GCTooYoung
			backoff, until = append(backoff, k), append(until, graceEnd)
		case !p.Delete:
			r.Outcome = GCWouldDelete
			backoff, until = append(backoff, k), append(until, p.Now.Add(p.Holdback))
		default:
			r.Outcome = GCReclaimed
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: gc cleanup: recheck: %w", err)
	}
	if len(discard) > 0 {
		dns, dsha := keyArrays(discard)
		if _, err := tx.Exec(ctx, gcDiscardSQL[b.part], pgx.QueryExecModeCacheStatement, dns, dsha); err != nil {
			return fmt.Errorf("store: gc cleanup: discard candidates: %w", err)
		}
	}
	if len(backoff) > 0 {
		bns, bsha := keyArrays(backoff)
		if _, err := tx.Exec(ctx, gcBackoffSQL[b.part], pgx.QueryExecModeCacheStatement, bns, bsha, until); err != nil {
			return fmt.Errorf("store: gc cleanup: back off: %w", err)
		}
	}
	return nil
}

// deleteObjects deletes the objects of the candidates recheck cleared, in
// order, each after its own kill-switch evaluation (so stopping does not
// wait for a batch), and returns the blobs whose object is gone. A refused
// switch stops the batch (GCDeleteStopped for the rest). A failed delete
// is that candidate's GCDeleteFailed and ends the batch's deletes: the
// caller judges, one failure at a time, whether storage as a whole is
// failing. Candidates not reached, then or once GCBatchLockBudget is used
// up, are GCDeferred.
func (b *gcBatch) deleteObjects(ctx context.Context, tx pgx.Tx, s *Store, p GCCleanupPolicy) ([]*Blob, error) {
	del := p.DeleteObject
	if del == nil {
		del = s.objects.Delete
	}
	var (
		deleted []*Blob
		stop    error
		failed  bool
		start   = time.Now()
	)
	for _, r := range b.res {
		if r.Outcome != GCReclaimed {
			continue
		}
		if stop == nil && (failed || time.Since(start) > GCBatchLockBudget) {
			r.Outcome = GCDeferred
			continue
		}
		if stop == nil {
			stop = mayDelete(ctx, tx, p)
		}
		if stop != nil {
			r.Outcome, r.Err = GCDeleteStopped, stop
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, GCObjectDeleteTimeout)
		err := del(dctx, r.Blob.ObjectStorageKey)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.Outcome, r.Err, failed = GCDeleteFailed, err, true
			continue
		}
		// The object is gone: from here on a rollback leaves a blob row
		// whose object is missing, marked by its live candidate.
		if p.AfterObjectDelete != nil {
			if err := p.AfterObjectDelete(ctx, r.Blob); err != nil {
				return nil, err
			}
		}
		deleted = append(deleted, r.Blob)
	}
	return deleted, nil
}

// mayDelete is the policy's kill switch; no switch at all is a refusal.
func mayDelete(ctx context.Context, tx pgx.Tx, p GCCleanupPolicy) error {
	if p.MayDelete == nil {
		return errors.New("store: gc cleanup: no kill switch, deleting nothing")
	}
	return p.MayDelete(ctx, tx)
}

// deleteRows deletes the rows of the blobs whose objects are gone.
func (b *gcBatch) deleteRows(ctx context.Context, tx pgx.Tx, deleted []*Blob, now time.Time) error {
	if len(deleted) == 0 {
		return nil
	}
	ns, sha, ids := make([]uuid.UUID, len(deleted)), make([][]byte, len(deleted)), make([]int64, len(deleted))
	for i, bl := range deleted {
		ns[i], sha[i], ids[i] = bl.NamespaceID, bl.SHA256[:], bl.ID
	}
	var blobs, cands int
	err := tx.QueryRow(ctx, gcDeleteRowsSQL[b.part], pgx.QueryExecModeCacheStatement, ns, sha, ids, now).Scan(&blobs, &cands)
	if err != nil {
		return fmt.Errorf("store: gc cleanup: delete rows: %w", err)
	}
	if blobs != len(deleted) || cands != len(deleted) {
		return fmt.Errorf("store: gc cleanup: deleted %d blob rows and %d candidates under the locks, want %d of each",
			blobs, cands, len(deleted))
	}
	return nil
}

// gcDueWhere selects the candidates due at $1: past their review time,
// not excluded (the partial index gc_blob_review_queue_due_idx holds no
// excluded one), not backing off.
const gcDueWhere = `WHERE q.excluded_at IS NULL AND q.review_after <= $1 AND (q.backoff_until IS NULL OR q.backoff_until <= $1)`

// gcDueInSQL reads a partition's due candidates, oldest review time first
// (gc_blob_review_queue_due_idx).
var gcDueInSQL = partition.Statements(`SELECT q.namespace_id, q.sha256 FROM {gc_blob_review_queue} q
`+gcDueWhere+`
ORDER BY q.review_after, q.namespace_id, q.sha256
LIMIT $2`, "gc_blob_review_queue")

// GCDueCandidatesIn returns up to limit candidates of one partition that
// are due at now (gcDueWhere), oldest review time first: the next batch of that partition's cleanup.
func (s *Store) GCDueCandidatesIn(ctx context.Context, part int, now time.Time, limit int) ([]GCCandidateKey, error) {
	if part < 0 || part >= partition.Count {
		return nil, fmt.Errorf("store: due gc candidates: no partition %d", part)
	}
	keys, err := collectKeys(ctx, s.pool, gcDueInSQL[part], now, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due gc candidates of partition %d: %w", part, err)
	}
	return keys, nil
}

// gcDuePartitionsSQL asks each partition whether it has a due candidate:
// 64 probes of the due index, where reading the due candidates themselves
// would scan all of them.
var gcDuePartitionsSQL = func() string {
	stmts := partition.Statements(`(SELECT %d FROM {gc_blob_review_queue} q
`+gcDueWhere+`
LIMIT 1)`, "gc_blob_review_queue")
	parts := make([]string, len(stmts))
	for p, s := range stmts {
		parts[p] = fmt.Sprintf(s, p)
	}
	return strings.Join(parts, "\nUNION ALL ")
}()

// GCDuePartitions returns the partitions holding at least one candidate
// due at now: the cleanups gc:sweep enqueues.
func (s *Store) GCDuePartitions(ctx context.Context, now time.Time) ([]int, error) {
	rows, err := s.pool.Query(ctx, gcDuePartitionsSQL, now)
	if err != nil {
		return nil, fmt.Errorf("store: partitions with due gc candidates: %w", err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("store: partitions with due gc candidates: %w", err)
	}
	return parts, nil
}
