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

// Pull is one image pull (a manifest GET).
type Pull struct {
	NamespaceID, RepositoryID, ImageID uuid.UUID
	At                                 time.Time
}

// Pull returns the pull of the target's image now.
func (s *Store) Pull(t *Target) Pull {
	return Pull{NamespaceID: t.NamespaceID, RepositoryID: t.RepositoryID, ImageID: t.ImageID, At: s.core.Options().Clock.Now()}
}

// RecordPulls buffers the counters of image pulls (docs/schema.md,
// "Buffered counters") in one statement: +1 on the repository's
// downloads_count and the pull time for the image's last_downloaded_at
// (which the keep_last_downloaded_at lifecycle rule reads). Only
// counter_deltas rows are inserted; the merge job applies them, so no hot
// row is updated on the request path.
func (s *Store) RecordPulls(ctx context.Context, pulls []Pull) error {
	n := 2 * len(pulls)
	if n == 0 {
		return nil
	}
	var (
		ids     = make([]uuid.UUID, 0, n)
		nss     = make([]uuid.UUID, 0, n)
		targets = make([]int16, 0, n)
		tids    = make([]uuid.UUID, 0, n)
		fields  = make([]int16, 0, n)
		deltas  = make([]*int64, 0, n)
		ats     = make([]*time.Time, 0, n)
	)
	one := int64(1)
	for _, p := range pulls {
		if p.ImageID == uuid.Nil {
			continue
		}
		for range 2 {
			id := db.NewID()
			ids = append(ids, id)
		}
		at := p.At
		nss = append(nss, p.NamespaceID, p.NamespaceID)
		targets = append(targets, int16(enum.CounterTargetRepository), int16(enum.CounterTargetContainerImage))
		tids = append(tids, p.RepositoryID, p.ImageID)
		fields = append(fields, int16(enum.CounterFieldDownloadsCount), int16(enum.CounterFieldLastDownloadedAt))
		deltas = append(deltas, &one, nil)
		ats = append(ats, nil, &at)
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
