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
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

// GCCleanupOutcome is what one gc:cleanup attempt did.
type GCCleanupOutcome int

// Outcomes of CleanupGCCandidates, one per candidate.
const (
	// GCCandidateGone: no live candidate to act on (cleared by a re-push,
	// already cleaned, excluded, backing off, or re-recorded with a later
	// review time). Nothing changed.
	GCCandidateGone GCCleanupOutcome = iota + 1
	// GCBlobLocked: the blob row was held by someone else (the cleanup
	// gives way without waiting). Nothing changed; no lock is held on
	// return.
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
	// GCDeferred: the batch stopped deleting before this candidate (a
	// failed delete, or its time under the blob-row locks used up).
	// Nothing changed; it stays due.
	GCDeferred
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
	GCDeferred:        "deferred",
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
	Key     GCCandidateKey
	Outcome GCCleanupOutcome
	// Blob is the blob row, when one was locked.
	Blob *Blob
	// Err is the reason of GCDeleteStopped and GCDeleteFailed.
	Err error
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
