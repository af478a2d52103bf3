package maven

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// StoredPackage tells, per repository id, whether a repository holds
// the package groupID:artifactID in stored content (hosted: an active
// package with an active version) or cached content (remote: a cached
// package), and with version, whether it holds that version (hosted:
// active; remote: cached). Repositories without it are left out. What
// the management API answers "where would this resolve from" with,
// without asking any upstream.
func (s *Store) StoredPackage(ctx context.Context, nsID uuid.UUID, repositoryIDs []uuid.UUID, groupID, artifactID, version string) (map[uuid.UUID]bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT mr.repository_id FROM maven_repositories mr
		JOIN maven_packages p ON p.namespace_id = $1 AND p.maven_repository_id = mr.id
		  AND p.group_id = $3 AND p.artifact_id = $4 AND p.soft_deleted_at IS NULL
		WHERE mr.namespace_id = $1 AND mr.repository_id = ANY($2)
		  AND EXISTS (SELECT 1 FROM maven_versions v WHERE v.namespace_id = $1 AND v.maven_package_id = p.id
		        AND v.soft_deleted_at IS NULL AND ($5 = '' OR v.version = $5))
		UNION ALL
		SELECT rr.repository_id FROM maven_remote_repositories rr
		JOIN maven_remote_packages p ON p.namespace_id = $1 AND p.maven_remote_repository_id = rr.id
		  AND p.group_id = $3 AND p.artifact_id = $4 AND p.soft_deleted_at IS NULL
		WHERE rr.namespace_id = $1 AND rr.repository_id = ANY($2)
		  AND ($5 = '' OR EXISTS (SELECT 1 FROM maven_remote_versions v WHERE v.namespace_id = $1 AND v.maven_remote_package_id = p.id
		        AND v.soft_deleted_at IS NULL AND v.version = $5))`,
		nsID, repositoryIDs, groupID, artifactID, version)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stored Maven package %s:%s: %w", groupID, artifactID, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stored Maven package %s:%s: %w", groupID, artifactID, err))
	}
	out := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
