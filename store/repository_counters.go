package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// RepositoryCounterDelta is one buffered change of a repository's counters
// (docs/schema.md "Buffered counters").
type RepositoryCounterDelta struct {
	RepositoryID   uuid.UUID
	ArtifactsCount int64
	DownloadsCount int64
	SizeBytes      int64
	LastUpdatedAt  *time.Time
}

// MergeRepositoryCounters applies buffered deltas of one namespace's
// repositories in one statement, with the buffered-counter merge
// semantics: counter deltas are summed into the stored value, timestamps
// take the maximum.
// Deltas for the same repository are combined first. It sets counters
// directly (test fixtures, imports); the buffered counters of the request
// paths go through counter_deltas and FoldCounterDeltas. Never called on a
// request path.
func (s *Store) MergeRepositoryCounters(ctx context.Context, nsID uuid.UUID, deltas []RepositoryCounterDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	n := len(deltas)
	ids := make([]uuid.UUID, 0, n)
	artifacts := make([]int64, 0, n)
	downloads := make([]int64, 0, n)
	sizes := make([]int64, 0, n)
	updated := make([]*time.Time, 0, n)
	for _, d := range deltas {
		ids = append(ids, d.RepositoryID)
		artifacts = append(artifacts, d.ArtifactsCount)
		downloads = append(downloads, d.DownloadsCount)
		sizes = append(sizes, d.SizeBytes)
		updated = append(updated, d.LastUpdatedAt)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE repositories r
		SET artifacts_count = r.artifacts_count + d.artifacts,
		    downloads_count = r.downloads_count + d.downloads,
		    size_bytes      = r.size_bytes + d.sizes,
		    last_updated_at = GREATEST(r.last_updated_at, d.updated)
		FROM (SELECT id, sum(artifacts) AS artifacts, sum(downloads) AS downloads,
		             sum(sizes) AS sizes, max(updated) AS updated
		      FROM unnest($2::uuid[], $3::bigint[], $4::bigint[], $5::bigint[], $6::timestamptz[])
		           AS u(id, artifacts, downloads, sizes, updated)
		      GROUP BY id) d
		WHERE r.namespace_id = $1 AND r.id = d.id`,
		nsID, ids, artifacts, downloads, sizes, updated)
	if err != nil {
		return fmt.Errorf("merge repository counters: %w", err)
	}
	return nil
}
