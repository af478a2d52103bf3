package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
