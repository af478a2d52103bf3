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

// Count is what one answered request counts: its counter deltas in its
// namespace, taken when it was answered. The protocol buffers them
// (RecordCounts writes a batch) so that a download does not wait for a
// write.
type Count struct {
	namespaceID uuid.UUID
	deltas      []counterDelta
}

// RecordCounts inserts the deltas of counts as counter_deltas rows in one
// statement; zero counter deltas are skipped.
func (s *Store) RecordCounts(ctx context.Context, counts []Count) error {
	var (
		ids     []uuid.UUID
		nss     []uuid.UUID
		targets []int16
		tids    []uuid.UUID
		fields  []int16
		values  []*int64
		ats     []*time.Time
	)
	for _, c := range counts {
		for _, d := range c.deltas {
			if d.at == nil && d.delta == 0 {
				continue
			}
			ids = append(ids, db.NewID())
			nss = append(nss, c.namespaceID)
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
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::smallint[], $4::uuid[], $5::smallint[], $6::bigint[], $7::timestamptz[])`,
		ids, nss, targets, tids, fields, values, ats)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: maven counter deltas: %w", err))
	}
	return nil
}

// DownloadCount is what one download of the hosted file f counts: +1 on
// the repository's downloads_count, and the download time as the
// package's and the version's last_downloaded_at (read by the
// keep_last_downloaded_at lifecycle rule). A package-level file counts
// nothing.
func (s *Store) DownloadCount(t *Target, f *File) Count {
	if f.VersionID == nil {
		return Count{}
	}
	now := s.core.Options().Clock.Now()
	return Count{namespaceID: t.NamespaceID, deltas: []counterDelta{
		{target: enum.CounterTargetRepository, targetID: t.RepositoryID, field: enum.CounterFieldDownloadsCount, delta: 1},
		{target: enum.CounterTargetMavenPackage, targetID: f.PackageID, field: enum.CounterFieldLastDownloadedAt, at: &now},
		{target: enum.CounterTargetMavenVersion, targetID: *f.VersionID, field: enum.CounterFieldLastDownloadedAt, at: &now},
	}}
}

// Empty reports whether c counts nothing.
func (c Count) Empty() bool { return len(c.deltas) == 0 }
