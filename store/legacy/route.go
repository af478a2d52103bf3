package legacy

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// RouteRow is what proxy mode needs of an inventory row: its status
// and its target name (the namespace slug, not its id, since requests are
// routed by name).
type RouteRow struct {
	Status         enum.LegacyStatus
	NamespaceSlug  string
	RepositoryName string
	ImageName      string
}

const legacyRouteSQL = `
	SELECT l.status, n.slug, l.repository_name, l.image_name
	FROM legacy_repositories l JOIN namespaces n ON n.id = l.namespace_id
	WHERE l.legacy_path = $1`

// Route reads the route of a legacy path in one indexed lookup;
// found is false when the path is not in the inventory.
func (s *Store) Route(ctx context.Context, path string) (row RouteRow, found bool, err error) {
	row, err = scanLegacyRoute(s.pool.QueryRow(ctx, legacyRouteSQL, path))
	if errors.Is(err, pgx.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, db.MapErr(fmt.Errorf("store: legacy route %q: %w", path, err))
	}
	return row, true, nil
}

// WithRouteShared calls fn with the route of a legacy path while
// holding a share lock on its inventory row, in a foreground transaction.
// A pass claim (FOR UPDATE SKIP LOCKED) skips the row and an operator start
// (FOR UPDATE) waits, so the repository cannot enter its read-only window
// while fn forwards a tag change to the legacy registry. A path not in the
// inventory has no row to lock: fn gets found false.
func (s *Store) WithRouteShared(ctx context.Context, path string, fn func(row RouteRow, found bool) error) error {
	return s.core.WithTx(ctx, func(tx pgx.Tx) error {
		row, err := scanLegacyRoute(tx.QueryRow(ctx, legacyRouteSQL+` FOR SHARE OF l`, path))
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("store: lock legacy route %q: %w", path, err)
		}
		return fn(row, found)
	})
}

func scanLegacyRoute(r pgx.Row) (RouteRow, error) {
	var row RouteRow
	var status int16
	err := r.Scan(&status, &row.NamespaceSlug, &row.RepositoryName, &row.ImageName)
	row.Status = enum.LegacyStatus(status)
	return row, err
}
