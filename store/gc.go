package store

// The SQL side of the online garbage collector (docs/garbage-collection.md,
// rule 4). Package gc holds the River workers
// and the policy (phases, kill switch, failure isolation); every statement
// they need is here.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// GCGracePeriod is the grace window (docs/garbage-collection.md "Grace
// window"): a blob row younger than
// this (measured from blob_storage_blobs.created_at) is never queued by
// the reconcile scan and never deleted by cleanup. It is a compile-time
// constant on purpose, shared by every path that tests a blob's age, so
// the paths can never disagree.
const GCGracePeriod = 24 * time.Hour

// GCObjectDeleteTimeout bounds the storage delete that gc:cleanup makes
// while it holds the blob-row lock (below the 5 s foreground lock
// timeout).
const GCObjectDeleteTimeout = 2 * time.Second

// GCCandidateKey names a review candidate (gc_blob_review_queue row).
type GCCandidateKey struct {
	NamespaceID uuid.UUID
	SHA256      [32]byte
}

func (k GCCandidateKey) String() string { return k.NamespaceID.String() + "@" + FormatSHA256(k.SHA256) }

// GCCandidate is a gc_blob_review_queue row.
type GCCandidate struct {
	GCCandidateKey
	ReviewAfter  time.Time
	Attempts     int
	Strikes      int
	BackoffUntil *time.Time
	ExcludedAt   *time.Time
	LastError    *string
	CreatedAt    time.Time
}

const gcCandidateColumns = `q.namespace_id, q.sha256, q.review_after, q.attempts, q.strikes, q.backoff_until, q.excluded_at, q.last_error, q.created_at`

func scanGCCandidate(row pgx.Row) (*GCCandidate, error) {
	var c GCCandidate
	var sha []byte
	var attempts, strikes int32
	err := row.Scan(&c.NamespaceID, &sha, &c.ReviewAfter, &attempts, &strikes, &c.BackoffUntil, &c.ExcludedAt, &c.LastError, &c.CreatedAt)
	if err != nil {
		return nil, err
	}
	if len(sha) != 32 {
		return nil, fmt.Errorf("store: gc candidate with a %d-byte sha256", len(sha))
	}
	c.SHA256 = [32]byte(sha)
	c.Attempts, c.Strikes = int(attempts), int(strikes)
	return &c, nil
}

// CodeGCCandidateUnknown: no such review candidate (or not in the state the
// operation needs). Returned wrapped in a *DigestError.
var CodeGCCandidateUnknown = Code{Name: "G_C_CANDIDATE_UNKNOWN", Kind: KindNotFound}

// GCCandidate reads one candidate; CodeGCCandidateUnknown when there is none.
func (s *Store) GCCandidate(ctx context.Context, key GCCandidateKey) (*GCCandidate, error) {
	c, err := scanGCCandidate(s.pool.QueryRow(ctx,
		`SELECT `+gcCandidateColumns+` FROM gc_blob_review_queue q WHERE q.namespace_id = $1 AND q.sha256 = $2`,
		key.NamespaceID, key.SHA256[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.WithDigest(CodeGCCandidateUnknown, key.SHA256, "gc candidate unknown")
	}
	if err != nil {
		return nil, fmt.Errorf("store: read gc candidate: %w", err)
	}
	return c, nil
}

// GCDueCursor is the keyset position of the sweep's dequeue.
type GCDueCursor struct {
	ReviewAfter time.Time
	Key         GCCandidateKey
}

// GCDueCandidates is the dequeue of gc:sweep: candidates past their review
// time, not excluded and not backing off at now, oldest review time first
// (ties by namespace and digest), at most limit after the cursor (nil: from
// the start). It reads the partial index gc_blob_review_queue_due_idx
// (excluded candidates are not in it) across the 64 partitions. The
// returned cursor is that of the last row, nil when fewer than limit came
// back.
func (s *Store) GCDueCandidates(ctx context.Context, now time.Time, after *GCDueCursor, limit int) ([]GCCandidateKey, *GCDueCursor, error) {
	args := []any{now, limit}
	cond := ""
	if after != nil {
		cond = "AND (q.review_after, q.namespace_id, q.sha256) > ($3::timestamptz, $4::uuid, $5::bytea)"
		args = append(args, after.ReviewAfter, after.Key.NamespaceID, after.Key.SHA256[:])
	}
	rows, err := s.pool.Query(ctx, `
		SELECT q.namespace_id, q.sha256, q.review_after
		FROM gc_blob_review_queue q
		WHERE q.excluded_at IS NULL AND q.review_after <= $1
		  AND (q.backoff_until IS NULL OR q.backoff_until <= $1) `+cond+`
		ORDER BY q.review_after, q.namespace_id, q.sha256
		LIMIT $2`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("store: due gc candidates: %w", err)
	}
	var last GCDueCursor
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (GCCandidateKey, error) {
		var k GCCandidateKey
		var sha []byte
		if err := r.Scan(&k.NamespaceID, &sha, &last.ReviewAfter); err != nil {
			return k, err
		}
		if len(sha) != 32 {
			return k, fmt.Errorf("store: gc candidate with a %d-byte sha256", len(sha))
		}
		k.SHA256 = [32]byte(sha)
		last.Key = k
		return k, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: due gc candidates: %w", err)
	}
	if len(out) < limit {
		return out, nil, nil
	}
	return out, &last, nil
}

// GCCleanupOutcome is what one gc:cleanup attempt did.
type GCCleanupOutcome int

// Outcomes of CleanupGCCandidate.
const (
	// GCCandidateGone: no live candidate to act on (cleared by a re-push,
	// already cleaned, excluded, backing off, or re-recorded with a later
	// review time). Nothing changed.
	GCCandidateGone GCCleanupOutcome = iota + 1
	// GCBlobLocked: the blob row was held by someone else (FOR UPDATE
	// NOWAIT failed). Nothing changed; no lock is held on return.
	GCBlobLocked
	// GCOrphanCandidate: the candidate had no blob row; it was deleted.
	GCOrphanCandidate
	// GCReferenced: a reference reappeared; the candidate was discarded.
	GCReferenced
	// GCTooYoung: the blob row is inside the grace window; the candidate
	// backs off until the window ends.
	GCTooYoung
	// GCWouldDelete: everything allowed the delete but the policy deletes
	// nothing (rollout phase 2); the candidate backs off for
	// GCCleanupPolicy.Holdback.
	GCWouldDelete
	// GCDeleteStopped: GCCleanupPolicy.MayDelete refused (kill switch off
	// or unreadable). Nothing changed.
	GCDeleteStopped
	// GCDeleteFailed: the storage delete failed (Err). Nothing changed in
	// the database; the caller records the failure (RecordGCFailure).
	GCDeleteFailed
	// GCReclaimed: object, blob row and candidate are gone.
	GCReclaimed
)

var gcOutcomeNames = map[GCCleanupOutcome]string{
	GCCandidateGone:   "gone",
	GCBlobLocked:      "locked",
	GCOrphanCandidate: "orphan",
	GCReferenced:      "referenced",
	GCTooYoung:        "too_young",
	GCWouldDelete:     "would_delete",
	GCDeleteStopped:   "stopped",
	GCDeleteFailed:    "delete_failed",
	GCReclaimed:       "reclaimed",
}

func (o GCCleanupOutcome) String() string {
	if n, ok := gcOutcomeNames[o]; ok {
		return n
	}
	return fmt.Sprintf("GCCleanupOutcome(%d)", int(o))
}

// GCCleanupPolicy is what the caller (package gc) decides for one cleanup.
type GCCleanupPolicy struct {
	// Now is the clock's time: due, backoff and grace are measured at it.
	Now time.Time
	// Delete enables the irreversible path (rollout phase 3). Without it an
	// eligible candidate ends as GCWouldDelete.
	Delete bool
	// Holdback is how long an eligible candidate waits before it is
	// reviewed again when Delete is false.
	Holdback time.Duration
	// MayDelete re-evaluates the kill switch right before the storage
	// delete, under the blob-row lock; tx is the cleanup transaction, so a
	// database-backed switch is read on its connection (GCReclaimSwitchTx)
	// rather than from a pool the workers may have exhausted. A non-nil
	// error means "do not delete" (GCDeleteStopped, with the error in Err);
	// the transaction is rolled back. Nil MayDelete refuses every delete
	// (fail-closed).
	MayDelete func(ctx context.Context, tx pgx.Tx) error
	// DeleteObject deletes the object at key; nil uses the object store. A
	// missing object must count as deleted. It is bounded by
	// GCObjectDeleteTimeout.
	DeleteObject func(ctx context.Context, key string) error
	// AfterObjectDelete, when set, runs between the storage delete and the
	// database delete; an error rolls the transaction back (fault
	// injection: a crash after the irreversible step).
	AfterObjectDelete func(ctx context.Context, b *Blob) error
}

// GCCleanupResult describes one cleanup attempt.
type GCCleanupResult struct {
	Outcome GCCleanupOutcome
	// Blob is the blob row, when one was locked.
	Blob *Blob
	// Err is the reason of GCDeleteStopped and GCDeleteFailed.
	Err error
}

// gcBeginSQL opens the cleanup transaction. The blob row is taken with
// NOWAIT; the lock timeout only bounds the short wait on a candidate row
// that a failure record or an operator requeue may hold. The main
// statements name the digest's partitions themselves (partition.Digest).
// Custom plans for the rest, the triggers' statements included: each names
// one digest or namespace, so plan-time pruning touches one partition of
// each 64-partition table, where a cached generic plan would lock and
// initialize all of them on every execution (PostgreSQL 15); the blob-row
// delete measured about twice as fast this way.
const gcBeginSQL = "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = '2s'; SET LOCAL plan_cache_mode = force_custom_plan"

// gcLockBlobSQL takes the blob row without waiting: a held row means a
// foreground caller (or another worker) is using it, and GC gives way.
var gcLockBlobSQL = partition.Statements(`SELECT `+BlobColumns+` FROM {blob_storage_blobs} b
WHERE b.namespace_id = $1 AND b.sha256 = $2 FOR UPDATE OF b NOWAIT`, "blob_storage_blobs")

// gcRecheckSQL runs as its own statement after the lock, so its snapshot
// includes everything committed by the transactions that held the row
// before us; nobody can attach or detach while we hold it.
var gcRecheckSQL = partition.Statements(`
SELECT q.review_after, q.backoff_until, q.excluded_at,
       EXISTS (SELECT 1 FROM {blob_storage_attachments} a WHERE a.namespace_id = $1 AND a.sha256 = $2)
FROM {gc_blob_review_queue} q
WHERE q.namespace_id = $1 AND q.sha256 = $2
FOR UPDATE OF q`, "blob_storage_attachments", "gc_blob_review_queue")

// gcDeleteRowsSQL deletes the blob row and its candidate once the object
// is gone, and moves the namespace's last reclaim time.
var gcDeleteRowsSQL = partition.Statements(`
		WITH blob AS (
			DELETE FROM {blob_storage_blobs} b
			WHERE b.namespace_id = $1 AND b.sha256 = $2 AND b.id = $3
			RETURNING 1
		), cand AS (
			DELETE FROM {gc_blob_review_queue} q
			WHERE q.namespace_id = $1 AND q.sha256 = $2
			RETURNING 1
		), stat AS (
			-- gcQueue.lastReclaimedAt, to the second: only a reclaim more
			-- than a second after the stored time moves it (so never
			-- backward, whatever order workers commit in). The one row per
			-- namespace would otherwise be locked by every cleanup from
			-- here to its commit, through the deletes' foreign key and
			-- accounting triggers, and a namespace's drain would run one
			-- cleanup at a time (a drain of one namespace with ten workers:
			-- 240 objects/s, 410 with the lock taken once a second). A
			-- data-modifying WITH runs whether or not it is read.
			UPDATE namespace_statistics s SET gc_last_reclaimed_at = $4
			WHERE s.namespace_id = $1
			  AND (s.gc_last_reclaimed_at IS NULL OR s.gc_last_reclaimed_at < $4::timestamptz - interval '1 second')
		)
		SELECT (SELECT count(*) FROM blob), (SELECT count(*) FROM cand)`, "blob_storage_blobs", "gc_blob_review_queue")

// CleanupGCCandidate is the transaction of gc:cleanup
// (docs/garbage-collection.md, rule 4): lock the
// blob row FOR UPDATE NOWAIT; recheck that the candidate is live and due,
// that the blob has zero attachments and is past the grace window; run
// MayDelete (the kill switch); delete the object (bounded, a missing object
// counts as deleted); delete the blob row and the candidate; commit.
//
// A crash (or any failure) after the storage delete and before the commit
// leaves the blob row and the candidate: the live candidate makes the next
// dedup skip check storage and re-upload, and the next cleanup finds the
// object missing and succeeds.
//
// Only errors the caller cannot classify are returned as error (database
// failures, a failed commit, AfterObjectDelete); storage failures come back
// as GCDeleteFailed.
func (s *Store) CleanupGCCandidate(ctx context.Context, key GCCandidateKey, p GCCleanupPolicy) (*GCCleanupResult, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: gcBeginSQL})
	if err != nil {
		return nil, fmt.Errorf("store: gc cleanup: begin: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	finish := func(res *GCCleanupResult) (*GCCleanupResult, error) {
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("store: gc cleanup: commit: %w", err)
		}
		done = true
		return res, nil
	}
	giveUp := func(res *GCCleanupResult) (*GCCleanupResult, error) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		done = true
		return res, nil
	}

	b, err := scanBlob(partition.QueryRowDigest(ctx, tx, &gcLockBlobSQL, key.SHA256, key.NamespaceID, key.SHA256[:]))
	switch {
	case gcIsPgCode(err, pgerrcode.LockNotAvailable):
		return giveUp(&GCCleanupResult{Outcome: GCBlobLocked})
	case errors.Is(err, pgx.ErrNoRows):
		// No blob row (never existed, or reclaimed by an earlier episode
		// whose candidate was re-recorded by the reconcile scan): nothing
		// to reclaim. Drop the candidate unless a row appeared meanwhile.
		tag, err := tx.Exec(ctx, `
			DELETE FROM gc_blob_review_queue q
			WHERE q.namespace_id = $1 AND q.sha256 = $2 AND q.excluded_at IS NULL
			  AND NOT EXISTS (SELECT 1 FROM blob_storage_blobs b WHERE b.namespace_id = $1 AND b.sha256 = $2)`,
			key.NamespaceID, key.SHA256[:])
		if err != nil {
			return nil, fmt.Errorf("store: gc cleanup: drop orphan candidate: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return giveUp(&GCCleanupResult{Outcome: GCCandidateGone})
		}
		return finish(&GCCleanupResult{Outcome: GCOrphanCandidate})
	case err != nil:
		return nil, fmt.Errorf("store: gc cleanup: lock blob: %w", err)
	}
	res := &GCCleanupResult{Blob: b}

	var (
		reviewAfter          time.Time
		backoffUntil, exclAt *time.Time
		referenced           bool
	)
	err = partition.QueryRowDigest(ctx, tx, &gcRecheckSQL, key.SHA256, key.NamespaceID, key.SHA256[:]).
		Scan(&reviewAfter, &backoffUntil, &exclAt, &referenced)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		res.Outcome = GCCandidateGone
		return giveUp(res)
	case err != nil:
		return nil, fmt.Errorf("store: gc cleanup: recheck: %w", err)
	}
	if exclAt != nil || reviewAfter.After(p.Now) || (backoffUntil != nil && backoffUntil.After(p.Now)) {
		res.Outcome = GCCandidateGone
		return giveUp(res)
	}
	if referenced {
		if _, err := tx.Exec(ctx, `DELETE FROM gc_blob_review_queue q WHERE q.namespace_id = $1 AND q.sha256 = $2`,
			key.NamespaceID, key.SHA256[:]); err != nil {
			return nil, fmt.Errorf("store: gc cleanup: discard candidate: %w", err)
		}
		res.Outcome = GCReferenced
		return finish(res)
	}
	if graceEnd := b.CreatedAt.Add(GCGracePeriod); graceEnd.After(p.Now) {
		if err := setGCBackoff(ctx, tx, key, graceEnd); err != nil {
			return nil, err
		}
		res.Outcome = GCTooYoung
		return finish(res)
	}
	if !p.Delete {
		if err := setGCBackoff(ctx, tx, key, p.Now.Add(p.Holdback)); err != nil {
			return nil, err
		}
		res.Outcome = GCWouldDelete
		return finish(res)
	}
	// Kill switch, evaluated before this delete (not once per batch);
	// no switch at all is a refusal.
	if p.MayDelete == nil {
		res.Outcome, res.Err = GCDeleteStopped, errors.New("store: gc cleanup: no kill switch, deleting nothing")
		return giveUp(res)
	}
	if err := p.MayDelete(ctx, tx); err != nil {
		res.Outcome, res.Err = GCDeleteStopped, err
		return giveUp(res)
	}
	del := p.DeleteObject
	if del == nil {
		del = s.objects.Delete
	}
	dctx, cancel := context.WithTimeout(ctx, GCObjectDeleteTimeout)
	err = del(dctx, b.ObjectStorageKey)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res.Outcome, res.Err = GCDeleteFailed, err
		return giveUp(res)
	}
	// The object is gone: from here on a rollback leaves a blob row whose
	// object is missing, marked by its live candidate.
	if p.AfterObjectDelete != nil {
		if err := p.AfterObjectDelete(ctx, b); err != nil {
			return nil, err
		}
	}
	var blobs, cands int64
	err = partition.QueryRowDigest(ctx, tx, &gcDeleteRowsSQL, key.SHA256, key.NamespaceID, key.SHA256[:], b.ID, p.Now).Scan(&blobs, &cands)
	if err != nil {
		return nil, fmt.Errorf("store: gc cleanup: delete rows: %w", err)
	}
	if blobs != 1 || cands != 1 {
		return nil, fmt.Errorf("store: gc cleanup: deleted %d blob rows and %d candidates under the lock, want 1 and 1", blobs, cands)
	}
	res.Outcome = GCReclaimed
	return finish(res)
}

func setGCBackoff(ctx context.Context, tx pgx.Tx, key GCCandidateKey, until time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE gc_blob_review_queue q SET backoff_until = $3 WHERE q.namespace_id = $1 AND q.sha256 = $2`,
		key.NamespaceID, key.SHA256[:], until)
	if err != nil {
		return fmt.Errorf("store: gc cleanup: back off: %w", err)
	}
	return nil
}

func gcIsPgCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// GCFailure describes a failed cleanup attempt, recorded on the candidate
// in its own transaction (holding no blob-row lock) so that the backoff
// schedule outlives the River job attempt.
type GCFailure struct {
	Now time.Time
	// Error is kept in last_error (truncated).
	Error string
	// Strike: the caller judged the failure candidate-specific. The strike
	// is only counted while the sweep is not paused (gc_sweep_state), so a
	// broken backend never strikes the queue out.
	Strike bool
	// StrikeLimit: at this many strikes the candidate is excluded.
	StrikeLimit int
	// The backoff is BackoffBase * 2^(attempts-1), at most BackoffMax,
	// where attempts counts this failure.
	BackoffBase, BackoffMax time.Duration
}

// RecordGCFailure counts a failed attempt on a live, non-excluded
// candidate without waiting for any lock (a candidate row held by someone
// else is being cleared or re-recorded by a push or delete: nothing to
// record then, and CodeGCCandidateUnknown is returned): attempts+1, a strike when f.Strike and the sweep is not
// paused, backoff_until from the growing schedule, excluded_at once the
// strikes reach the limit, last_error. It returns the updated candidate,
// or CodeGCCandidateUnknown when the candidate went away meanwhile.
func (s *Store) RecordGCFailure(ctx context.Context, key GCCandidateKey, f GCFailure) (*GCCandidate, error) {
	msg := f.Error
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	c, err := scanGCCandidate(s.pool.QueryRow(ctx, `
		WITH cur AS (
			SELECT q.namespace_id, q.sha256 FROM gc_blob_review_queue q
			WHERE q.namespace_id = $1 AND q.sha256 = $2 AND q.excluded_at IS NULL
			FOR UPDATE OF q SKIP LOCKED
		), st AS (
			SELECT CASE WHEN $4 AND NOT coalesce((SELECT paused_until > $3 FROM gc_sweep_state), false)
			            THEN 1 ELSE 0 END AS add
		)
		UPDATE gc_blob_review_queue q SET
			attempts = q.attempts + 1,
			strikes = q.strikes + st.add,
			backoff_until = $3 + make_interval(secs => least($7::float8, $6::float8 * power(2, least(q.attempts, 40))::float8)),
			excluded_at = CASE WHEN q.strikes + st.add >= $5 THEN $3 ELSE NULL END,
			last_error = $8
		FROM cur, st
		WHERE q.namespace_id = $1 AND q.sha256 = $2 AND q.namespace_id = cur.namespace_id AND q.sha256 = cur.sha256
		RETURNING `+gcCandidateColumns,
		key.NamespaceID, key.SHA256[:], f.Now, f.Strike, f.StrikeLimit,
		f.BackoffBase.Seconds(), f.BackoffMax.Seconds(), msg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.WithDigest(CodeGCCandidateUnknown, key.SHA256, "gc candidate unknown")
	}
	if err != nil {
		return nil, fmt.Errorf("store: record gc failure: %w", err)
	}
	return c, nil
}

// GCSweepState is the gc_sweep_state row.
type GCSweepState struct {
	PausedUntil *time.Time
	PauseReason *string
	UpdatedAt   time.Time
}

// PausedAt reports whether the sweep is paused at now.
func (st *GCSweepState) PausedAt(now time.Time) bool {
	return st.PausedUntil != nil && st.PausedUntil.After(now)
}

// GCSweepState reads the sweep-pause row.
func (s *Store) GCSweepState(ctx context.Context) (*GCSweepState, error) {
	var st GCSweepState
	err := s.pool.QueryRow(ctx, `SELECT paused_until, pause_reason, updated_at FROM gc_sweep_state`).
		Scan(&st.PausedUntil, &st.PauseReason, &st.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("store: read gc sweep state: %w", err)
	}
	return &st, nil
}

// PauseGCSweep pauses the sweep of every worker until until (a pause never
// shortens one in force). It reports whether this call started or extended
// the pause.
func (s *Store) PauseGCSweep(ctx context.Context, now, until time.Time, reason string) (bool, error) {
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE gc_sweep_state
		SET paused_until = $2, pause_reason = $3, updated_at = $1
		WHERE paused_until IS NULL OR paused_until < $2`, now, until, reason)
	if err != nil {
		return false, fmt.Errorf("store: pause gc sweep: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// ResumeGCSweep ends a sweep pause now (operator action; a pause also ends
// by itself at paused_until).
func (s *Store) ResumeGCSweep(ctx context.Context, now time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE gc_sweep_state SET paused_until = NULL, pause_reason = NULL, updated_at = $1
		WHERE paused_until IS NOT NULL`, now)
	if err != nil {
		return fmt.Errorf("store: resume gc sweep: %w", err)
	}
	return nil
}
