package npm

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// StoredPackage tells, per repository id, whether a repository holds
// package name in stored content (hosted: an active package with an
// active version) or cached content (remote: a cached package), and with
// version, whether it holds that version (hosted: active; remote: its
// tarball cached). Repositories without it are left out. What the
// management API answers "where would this resolve from" with, without
// asking any upstream.
func (s *Store) StoredPackage(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID, name, version string) (map[uuid.UUID]bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT nr.repository_id FROM npm_repositories nr
		JOIN npm_packages p ON p.namespace_id = $1 AND p.npm_repository_id = nr.id AND p.name = $3 AND p.soft_deleted_at IS NULL
		WHERE nr.namespace_id = $1 AND nr.repository_id = ANY($2)
		  AND EXISTS (SELECT 1 FROM npm_versions v WHERE v.namespace_id = $1 AND v.npm_package_id = p.id
		        AND v.soft_deleted_at IS NULL AND ($4 = '' OR v.version = $4))
		UNION ALL
		SELECT rr.repository_id FROM npm_remote_repositories rr
		JOIN npm_remote_packages p ON p.namespace_id = $1 AND p.npm_remote_repository_id = rr.id AND p.name = $3 AND p.soft_deleted_at IS NULL
		WHERE rr.namespace_id = $1 AND rr.repository_id = ANY($2)
		  AND ($4 = '' OR EXISTS (SELECT 1 FROM npm_remote_versions v WHERE v.namespace_id = $1 AND v.npm_remote_package_id = p.id
		        AND v.soft_deleted_at IS NULL AND v.version = $4))`,
		execMode, nsID, repositoryIDs, name, version)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stored npm package %s: %w", name, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stored npm package %s: %w", name, err))
	}
	out := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
