package container

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Tags lists the image's tag names in order after last ("" from
// the start), at most limit of them: a keyset range scan of the
// (namespace_id, container_image_id, name) index.
func (s *Store) Tags(ctx context.Context, t *Target, last string, limit int) ([]string, error) {
	if t.ImageID == uuid.Nil || limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT name FROM container_tags
		WHERE namespace_id = $1 AND container_image_id = $2 AND name > $3
		ORDER BY name
		LIMIT $4`, t.NamespaceID, t.ImageID, last, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: list tags: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: list tags: %w", err))
	}
	return out, nil
}

// DeleteTagByName deletes one tag of the image (tags have no soft
// delete; the manifest stays addressable by digest).
// CodeManifestUnknown when there is no such tag.
func (s *Store) DeleteTagByName(ctx context.Context, t *Target, tag string) error {
	if t.ImageID == uuid.Nil {
		return errs.New(CodeManifestUnknown, "manifest unknown")
	}
	return s.core.WithTx(ctx, func(tx pgx.Tx) error {
		deleted, err := deleteTag(ctx, tx, t.NamespaceID, t.ImageID, tag)
		if err != nil {
			return err
		}
		if !deleted {
			return errs.New(CodeManifestUnknown, "manifest unknown")
		}
		return nil
	})
}

// deleteTag deletes one tag of an image inside tx (tags have no soft
// delete); deleted is false when the image has no such tag. The protocol
// (DeleteTagByName) and the admin API (DeleteTag) both delete tags here.
func deleteTag(ctx context.Context, tx pgx.Tx, nsID, imageID uuid.UUID, tag string) (deleted bool, err error) {
	ct, err := tx.Exec(ctx, `DELETE FROM container_tags WHERE namespace_id = $1 AND container_image_id = $2 AND name = $3`,
		nsID, imageID, tag)
	if err != nil {
		return false, fmt.Errorf("store: delete tag %q: %w", tag, err)
	}
	return ct.RowsAffected() > 0, nil
}

// Pull is one image pull (a manifest GET), or, through a pull-through
// cache, one content request whose cache outcome counts.
type Pull struct {
	NamespaceID, RepositoryID, ImageID uuid.UUID
	At                                 time.Time
	// RemoteID is the pull-through cache's container_remote_repositories
	// row (uuid.Nil for a hosted repository); ImageID is then a
	// container_remote_images row.
	RemoteID uuid.UUID
	// CacheOnly: not a pull (a blob request through a cache); only the
	// cache outcome counts.
	CacheOnly bool
	// Miss: the content had to be fetched upstream; otherwise the cache
	// answered. Only for a pull-through cache.
	Miss bool
}

// Pull returns the pull of the target's image now.
func (s *Store) Pull(t *Target) Pull {
	p := Pull{NamespaceID: t.NamespaceID, RepositoryID: t.RepositoryID, ImageID: t.ImageID, At: s.core.Options().Clock.Now()}
	if t.Remote != nil {
		p.RemoteID = t.Remote.ID
	}
	return p
}

// RecordPulls buffers the counters of image pulls (docs/schema.md,
// "Buffered counters") in one statement: +1 on the repository's
// downloads_count and the pull time for the image's last_downloaded_at
// (which the keep_last_downloaded_at lifecycle rule and gc:cache-evict
// read), and for a pull-through cache its hits and misses, summed per
// cache. Only counter_deltas rows are inserted; the merge job applies
// them, so no hot row is updated on the request path.
func (s *Store) RecordPulls(ctx context.Context, pulls []Pull) error {
	var (
		ids     []uuid.UUID
		nss     []uuid.UUID
		targets []int16
		tids    []uuid.UUID
		fields  []int16
		deltas  []*int64
		ats     []*time.Time
	)
	add := func(ns uuid.UUID, target enum.CounterTarget, tid uuid.UUID, field enum.CounterField, delta *int64, at *time.Time) {
		ids = append(ids, db.NewID())
		nss = append(nss, ns)
		targets = append(targets, int16(target))
		tids = append(tids, tid)
		fields = append(fields, int16(field))
		deltas = append(deltas, delta)
		ats = append(ats, at)
	}
	type cacheKey struct {
		ns, remote uuid.UUID
		miss       bool
	}
	outcomes := map[cacheKey]int64{}
	var order []cacheKey
	one := int64(1)
	for _, p := range pulls {
		if p.RemoteID != uuid.Nil {
			k := cacheKey{p.NamespaceID, p.RemoteID, p.Miss}
			if outcomes[k] == 0 {
				order = append(order, k)
			}
			outcomes[k]++
		}
		if p.CacheOnly || p.ImageID == uuid.Nil {
			continue
		}
		at := p.At
		image := enum.CounterTargetContainerImage
		if p.RemoteID != uuid.Nil {
			image = enum.CounterTargetContainerRemoteImage
		}
		add(p.NamespaceID, enum.CounterTargetRepository, p.RepositoryID, enum.CounterFieldDownloadsCount, &one, nil)
		add(p.NamespaceID, image, p.ImageID, enum.CounterFieldLastDownloadedAt, nil, &at)
	}
	for _, k := range order {
		n := outcomes[k]
		field := enum.CounterFieldCacheHits
		if k.miss {
			field = enum.CounterFieldCacheMisses
		}
		add(k.ns, enum.CounterTargetContainerRemoteRepository, k.remote, field, &n, nil)
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::smallint[], $4::uuid[], $5::smallint[], $6::bigint[], $7::timestamptz[])`,
		ids, nss, targets, tids, fields, deltas, ats)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: record pulls: %w", err))
	}
	return nil
}
