package maven

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Buffered counters of the Maven data path (docs/schema.md, Buffered
// counters): only counter_deltas rows are inserted on the
// request path; the merge job sums counters and takes the maximum of
// timestamps. Per download of a version file: repositories.downloads_count
// and the last_downloaded_at of the package and the version. The storage
// counters of an upload (repositories.size_bytes, artifacts_count and
// last_updated_at, namespace_statistics.components_count and
// deduplicated_size_bytes) are recorded by the accounting triggers of the
// rows it writes (docs/schema.md, Storage accounting), not here.
//
// The periodic counters:fold job (package counters, FoldCounterDeltas)
// merges these rows. maven_versions.size_bytes is also listed as a
// buffered column in docs/schema.md (Buffered counters), but it is kept
// exact in the writing transaction
// (addVersionSize), where the version row is already serialized
// behind the package lock; no delta is written for it, so the fold never
// counts it twice.

type counterDelta struct {
	target   enum.CounterTarget
	targetID uuid.UUID
	field    enum.CounterField
	delta    int64      // counters
	at       *time.Time // timestamps
}

// insertDeltas appends counter_deltas rows (in the caller's
// transaction, or on the pool); zero counter deltas are skipped.
func insertDeltas(ctx context.Context, q db.Queryer, nsID uuid.UUID, deltas []counterDelta) error {
	var (
		ids     []uuid.UUID
		targets []int16
		tids    []uuid.UUID
		fields  []int16
		values  []*int64
		ats     []*time.Time
	)
	for _, d := range deltas {
		if d.at == nil && d.delta == 0 {
			continue
		}
		id := db.NewID()
		ids = append(ids, id)
		targets = append(targets, int16(d.target))
		tids = append(tids, d.targetID)
		fields = append(fields, int16(d.field))
		if d.at != nil {
			values, ats = append(values, nil), append(ats, d.at)
		} else {
			v := d.delta
			values, ats = append(values, &v), append(ats, nil)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
		SELECT u.id, $1, u.target, u.target_id, u.field, u.delta, u.observed_at
		FROM unnest($2::uuid[], $3::smallint[], $4::uuid[], $5::smallint[], $6::bigint[], $7::timestamptz[])
		     AS u(id, target, target_id, field, delta, observed_at)`,
		nsID, ids, targets, tids, fields, values, ats)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: maven counter deltas: %w", err))
	}
	return nil
}

// RecordDownload buffers the counters of one download of a version
// file: +1 on the repository's downloads_count, and the download time as
// the package's and the version's last_downloaded_at (read by the
// keep_last_downloaded_at lifecycle rule).
func (s *Store) RecordDownload(ctx context.Context, t *Target, f *File) error {
	if f.VersionID == nil {
		return nil
	}
	now := s.core.Options().Clock.Now()
	return insertDeltas(ctx, s.pool, t.NamespaceID, []counterDelta{
		{target: enum.CounterTargetRepository, targetID: t.RepositoryID, field: enum.CounterFieldDownloadsCount, delta: 1},
		{target: enum.CounterTargetMavenPackage, targetID: f.PackageID, field: enum.CounterFieldLastDownloadedAt, at: &now},
		{target: enum.CounterTargetMavenVersion, targetID: *f.VersionID, field: enum.CounterFieldLastDownloadedAt, at: &now},
	})
}
