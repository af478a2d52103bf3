package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// GCQueueStats are the fleet-wide queue gauges (docs/garbage-collection.md
// "Operational controls").
type GCQueueStats struct {
	// Tracked: every candidate (a large number is the normal steady state:
	// most wait for their review delay).
	Tracked int64
	// Due: past review_after, not excluded, not backing off (the drain
	// signal; same definition as GCQueueSummary.Due).
	Due int64
	// BackingOff: not excluded, backoff_until in the future.
	BackingOff int64
	// Excluded: struck out, waiting for an operator.
	Excluded int64
	// OldestDue: review_after of the oldest due candidate; nil when none.
	OldestDue *time.Time
}

// GCQueueStats computes the queue gauges at now. It reads the whole queue
// (64 partitions): call it from a metrics refresh, not a request path.
func (s *Store) GCQueueStats(ctx context.Context, now time.Time) (*GCQueueStats, error) {
	var st GCQueueStats
	err := s.pool.QueryRow(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE due),
		       count(*) FILTER (WHERE excluded_at IS NULL AND backoff_until > $1),
		       count(*) FILTER (WHERE excluded_at IS NOT NULL),
		       min(review_after) FILTER (WHERE due)
		FROM (SELECT review_after, excluded_at, backoff_until,
		             excluded_at IS NULL AND review_after <= $1
		             AND (backoff_until IS NULL OR backoff_until <= $1) AS due
		      FROM gc_blob_review_queue) q`, now).
		Scan(&st.Tracked, &st.Due, &st.BackingOff, &st.Excluded, &st.OldestDue)
	if err != nil {
		return nil, fmt.Errorf("store: gc queue stats: %w", err)
	}
	return &st, nil
}

// GCExcludedCursor is the keyset position in ExcludedGCCandidates.
type GCExcludedCursor struct {
	ExcludedAt time.Time
	SHA256     [32]byte
}

const excludedGCKeyset = "AND ROW(q.excluded_at, q.sha256) < ROW($3::timestamptz, $4::bytea)"

// excludedGCCandidatesSQL walks gc_blob_review_queue_excluded_idx in each
// partition (cond: the keyset condition, or empty for the first page).
func excludedGCCandidatesSQL(cond string) string {
	return `
		SELECT ` + gcCandidateColumns + `
		FROM gc_blob_review_queue q
		WHERE q.namespace_id = $1 AND q.excluded_at IS NOT NULL ` + cond + `
		ORDER BY q.excluded_at DESC, q.sha256 DESC
		LIMIT $2`
}

// ExcludedGCCandidates lists the excluded candidates of a namespace, most
// recently excluded first, at most limit after the cursor (keyset on
// (excluded_at, sha256) descending). It reports whether more follow.
func (s *Store) ExcludedGCCandidates(ctx context.Context, namespaceID uuid.UUID, after *GCExcludedCursor, limit int) ([]*GCCandidate, bool, error) {
	if limit <= 0 {
		return nil, false, nil
	}
	args := []any{namespaceID, limit + 1}
	cond := ""
	if after != nil {
		cond = excludedGCKeyset
		args = append(args, after.ExcludedAt, after.SHA256[:])
	}
	rows, err := s.pool.Query(ctx, excludedGCCandidatesSQL(cond), args...)
	if err != nil {
		return nil, false, fmt.Errorf("store: excluded gc candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*GCCandidate, error) { return scanGCCandidate(r) })
	if err != nil {
		return nil, false, fmt.Errorf("store: excluded gc candidates: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// Cursor returns the keyset cursor that follows c in ExcludedGCCandidates.
func (c *GCCandidate) Cursor() *GCExcludedCursor {
	if c.ExcludedAt == nil {
		return nil
	}
	return &GCExcludedCursor{ExcludedAt: *c.ExcludedAt, SHA256: c.SHA256}
}

// RequeueGCCandidate puts an excluded candidate back into the queue
// (GraphQL requeueGcCandidate): exclusion, strikes, attempts, backoff and
// last error are cleared. Its review time is kept (it is already past), so
// the next sweep picks it up; requeueing never shortens a review delay.
// CodeGCCandidateUnknown when the namespace has no excluded candidate with
// that digest.
func (s *Store) RequeueGCCandidate(ctx context.Context, namespaceID uuid.UUID, sha256 [32]byte) (*GCCandidate, error) {
	c, err := scanGCCandidate(s.pool.QueryRow(ctx, `
		UPDATE gc_blob_review_queue q
		SET excluded_at = NULL, strikes = 0, attempts = 0, backoff_until = NULL, last_error = NULL
		WHERE q.namespace_id = $1 AND q.sha256 = $2 AND q.excluded_at IS NOT NULL
		RETURNING `+gcCandidateColumns, namespaceID, sha256[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.WithDigest(CodeGCCandidateUnknown, sha256, "gc candidate unknown")
	}
	if err != nil {
		return nil, fmt.Errorf("store: requeue gc candidate: %w", err)
	}
	return c, nil
}
