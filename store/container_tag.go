package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// ContainerTags lists the image's tag names in order after last ("" from
// the start), at most limit of them: a keyset range scan of the
// (namespace_id, container_image_id, name) index.
func (s *Store) ContainerTags(ctx context.Context, t *ContainerTarget, last string, limit int) ([]string, error) {
	if t.ImageID == uuid.Nil || limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT name FROM container_tags
		WHERE namespace_id = $1 AND container_image_id = $2 AND name > $3
		ORDER BY name
		LIMIT $4`, t.NamespaceID, t.ImageID, last, limit)
	if err != nil {
		return nil, mapErr(fmt.Errorf("store: list tags: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, mapErr(fmt.Errorf("store: list tags: %w", err))
	}
	return out, nil
}

// DeleteContainerTagByName deletes one tag of the image (tags have no soft
// delete; the manifest stays addressable by digest).
// ErrContainerManifestUnknown when there is no such tag.
func (s *Store) DeleteContainerTagByName(ctx context.Context, t *ContainerTarget, tag string) error {
	if t.ImageID == uuid.Nil {
		return ErrContainerManifestUnknown
	}
	return s.WithTx(ctx, func(tx pgx.Tx) error {
		ct, err := tx.Exec(ctx, `DELETE FROM container_tags WHERE namespace_id = $1 AND container_image_id = $2 AND name = $3`,
			t.NamespaceID, t.ImageID, tag)
		if err != nil {
			return fmt.Errorf("store: delete tag: %w", err)
		}
		if ct.RowsAffected() == 0 {
			return ErrContainerManifestUnknown
		}
		return nil
	})
}

// RecordContainerPull buffers the counters of one image pull (ADR-007
// buffered counters): +1 on the repository's downloads_count and the pull
// time for the image's last_downloaded_at (which the keep_last_downloaded_at
// lifecycle rule reads). Only counter_deltas rows are inserted; the merge
// job applies them, so no hot row is updated on the request path.
func (s *Store) RecordContainerPull(ctx context.Context, t *ContainerTarget) error {
	if t.ImageID == uuid.Nil {
		return nil
	}
	id1, err := uuid.NewV7()
	if err != nil {
		return err
	}
	id2, err := uuid.NewV7()
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
		VALUES ($1, $3, $4, $5, $6, 1, NULL), ($2, $3, $7, $8, $9, NULL, $10)`,
		id1, id2, t.NamespaceID,
		int16(enum.CounterTargetRepository), t.RepositoryID, int16(enum.CounterFieldDownloadsCount),
		int16(enum.CounterTargetContainerImage), t.ImageID, int16(enum.CounterFieldLastDownloadedAt),
		s.opts.Clock.Now())
	if err != nil {
		return mapErr(fmt.Errorf("store: record pull: %w", err))
	}
	return nil
}
