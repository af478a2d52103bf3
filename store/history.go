package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// HistoryKey is the keyset position in the publish history.
type HistoryKey struct {
	CreatedAt time.Time `json:"t"`
	ID        uuid.UUID `json:"i"`
}

// PublishHistory returns manifests published in [from, to) (nil: open),
// newest first, after the key, soft-deleted ones included (a publish event
// is not erased by a delete). It rides the unconditional
// (namespace_id, created_at DESC) index of container_manifests.
func (s *Store) PublishHistory(ctx context.Context, nsID uuid.UUID, from, to *time.Time, after *HistoryKey, limit int) ([]*ContainerManifest, bool, error) {
	args := []any{nsID, limit + 1}
	where := "cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1"
	if from != nil {
		args = append(args, *from)
		where += fmt.Sprintf(" AND cm.created_at >= $%d", len(args))
	}
	if to != nil {
		args = append(args, *to)
		where += fmt.Sprintf(" AND cm.created_at < $%d", len(args))
	}
	if after != nil {
		args = append(args, after.CreatedAt, after.ID)
		where += fmt.Sprintf(" AND ROW(cm.created_at, cm.id) < ROW($%d, $%d)", len(args)-1, len(args))
	}
	rows, err := s.pool.Query(ctx, `SELECT `+manifestColumns+` FROM `+manifestFrom+`
		WHERE `+where+` ORDER BY cm.created_at DESC, cm.id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("publish history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ContainerManifest, error) { return scanManifest(r) })
	if err != nil {
		return nil, false, fmt.Errorf("publish history: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
