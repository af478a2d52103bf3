package npm

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// The npm side of virtual repositories (docs/virtual-repositories.md):
// which hosted members hold a package name decides whether remote
// members may be asked for it at all (name shadowing).

const holdingRepositoriesSQL = `
SELECT nr.repository_id
FROM npm_repositories nr
JOIN npm_packages p
  ON p.namespace_id = $1 AND p.npm_repository_id = nr.id AND p.name = $3 AND p.soft_deleted_at IS NULL
WHERE nr.namespace_id = $1 AND nr.repository_id = ANY($2)`

// HoldingRepositories tells which of the hosted npm repositories
// repositoryIDs (repositories.id, of one namespace) hold an active package
// named name: the keys of the map, each true. Repositories that are not
// hosted npm repositories, or do not hold it, are absent. One statement.
func (s *Store) HoldingRepositories(ctx context.Context, namespaceID uuid.UUID, repositoryIDs []uuid.UUID, name string) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	if len(repositoryIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, holdingRepositoriesSQL, execMode, namespaceID, repositoryIDs, name)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm repositories holding %s: %w", name, err))
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: npm repositories holding %s: %w", name, err))
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm repositories holding %s: %w", name, err))
	}
	return out, nil
}
