package maven

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Maven virtual repositories (docs/virtual-repositories.md, "Maven
// resolution"): the protocol resolves a request through the virtual's
// flattened upstreams (store.FlattenVirtual); this file answers what it
// needs from the database besides the hosted and cached files.

// HoldingRepositories tells which of the hosted Maven repositories
// repositoryIDs (repositories.id, of namespace namespaceID) hold an
// active package groupID:artifactID, whatever its versions: such a name
// is internal, and a virtual never asks a remote upstream for it
// (dependency confusion). Ids of repositories that are not hosted Maven
// repositories are never in the answer. One statement.
func (s *Store) HoldingRepositories(ctx context.Context, namespaceID uuid.UUID, repositoryIDs []uuid.UUID, groupID, artifactID string) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	if len(repositoryIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT mr.repository_id
		FROM maven_repositories mr
		JOIN maven_packages p
		  ON p.namespace_id = $1 AND p.maven_repository_id = mr.id
		 AND p.group_id = $3 AND p.artifact_id = $4 AND p.soft_deleted_at IS NULL
		WHERE mr.namespace_id = $1 AND mr.repository_id = ANY($2::uuid[])`,
		namespaceID, repositoryIDs, groupID, artifactID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven repositories holding %s:%s: %w", groupID, artifactID, err))
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: maven repositories holding %s:%s: %w", groupID, artifactID, err))
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven repositories holding %s:%s: %w", groupID, artifactID, err))
	}
	return out, nil
}
