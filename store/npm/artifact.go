package npm

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Artifact is an npm version with its package name and repository, as
// the trash and the publish history show it.
type Artifact struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID
	PackageID        uuid.UUID
	PackageName      string
	Version          string
	SizeBytes        int64
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

const artifactColumns = `nv.id, nv.namespace_id, nr.repository_id, nv.npm_package_id, np.name, nv.version,
	nv.size_bytes, nv.created_at, nv.last_downloaded_at, nv.soft_deleted_at`

const artifactFrom = `npm_versions nv
	JOIN npm_packages np ON np.namespace_id = nv.namespace_id AND np.id = nv.npm_package_id
	JOIN npm_repositories nr ON nr.namespace_id = np.namespace_id AND nr.id = np.npm_repository_id`

func scanArtifact(row pgx.Row) (*Artifact, error) {
	var v Artifact
	if err := row.Scan(&v.ID, &v.NamespaceID, &v.RepositoryID, &v.PackageID, &v.PackageName, &v.Version,
		&v.SizeBytes, &v.CreatedAt, &v.LastDownloadedAt, &v.SoftDeletedAt); err != nil {
		return nil, err
	}
	return &v, nil
}

// ArtifactsByIDs loads npm versions (trash included) by id.
func (s *Store) ArtifactsByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) ([]*Artifact, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+artifactColumns+` FROM `+artifactFrom+`
		WHERE nv.namespace_id = $1 AND np.namespace_id = $1 AND nr.namespace_id = $1 AND nv.id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, fmt.Errorf("load npm versions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Artifact, error) { return scanArtifact(r) })
	if err != nil {
		return nil, fmt.Errorf("load npm versions: %w", err)
	}
	return out, nil
}
