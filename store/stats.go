package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// StatisticsOfNamespaces reads the precomputed (buffered) counters of
// several namespaces in one query: the display path of the buffered
// counters (docs/schema.md "Buffered counters").
func (s *Store) StatisticsOfNamespaces(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*NamespaceStatistics, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT namespace_id, deduplicated_size_bytes, components_count,
		       CASE WHEN last_reconciled_at > 'epoch' THEN last_reconciled_at END
		FROM namespace_statistics WHERE namespace_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("load namespace statistics: %w", err)
	}
	stats, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*NamespaceStatistics, error) {
		var st NamespaceStatistics
		err := r.Scan(&st.NamespaceID, &st.DeduplicatedSizeBytes, &st.ComponentsCount, &st.LastReconciledAt)
		return &st, err
	})
	if err != nil {
		return nil, fmt.Errorf("load namespace statistics: %w", err)
	}
	out := make(map[uuid.UUID]*NamespaceStatistics, len(stats))
	for _, st := range stats {
		out[st.NamespaceID] = st
	}
	return out, nil
}

// GCQueueSummary describes a namespace's garbage-collection review queue
// (gc_blob_review_queue, docs/garbage-collection.md "Review queue").
type GCQueueSummary struct {
	Tracked             int   // every candidate of the namespace
	Due                 int   // past review_after, not excluded, not backing off
	OldestDueAgeSeconds int64 // now - oldest due review_after; 0 when none is due
	Excluded            int   // excluded after repeated failures
	// LastReclaimedAt: when gc:cleanup last deleted a blob of the
	// namespace (namespace_statistics.gc_last_reclaimed_at); nil if never.
	LastReclaimedAt *time.Time
}

// GCQueueOf summarizes the review queue of one namespace. The queue is
// partitioned by sha256, so this namespace-wide read visits all 64
// partitions: an admin read, never on a request hot path.
func (s *Store) GCQueueOf(ctx context.Context, nsID uuid.UUID) (*GCQueueSummary, error) {
	var q GCQueueSummary
	var oldest *time.Time
	var now time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE due),
		       min(review_after) FILTER (WHERE due),
		       count(*) FILTER (WHERE excluded_at IS NOT NULL),
		       now(),
		       (SELECT gc_last_reclaimed_at FROM namespace_statistics WHERE namespace_id = $1)
		FROM (SELECT review_after, excluded_at,
		             excluded_at IS NULL AND review_after <= now()
		             AND (backoff_until IS NULL OR backoff_until <= now()) AS due
		      FROM gc_blob_review_queue WHERE namespace_id = $1) q`, nsID).
		Scan(&q.Tracked, &q.Due, &oldest, &q.Excluded, &now, &q.LastReclaimedAt)
	if err != nil {
		return nil, fmt.Errorf("summarize gc queue: %w", err)
	}
	if oldest != nil {
		q.OldestDueAgeSeconds = int64(now.Sub(*oldest) / time.Second)
	}
	return &q, nil
}
