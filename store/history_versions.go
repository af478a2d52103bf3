package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// MavenArtifact is a Maven version with its package coordinates and
// repository, as the trash and the publish history show it.
type MavenArtifact struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID
	PackageID        uuid.UUID
	GroupID          string
	ArtifactID       string
	Version          string
	SizeBytes        int64
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

const mavenArtifactColumns = `mv.id, mv.namespace_id, mr.repository_id, mv.maven_package_id, mp.group_id, mp.artifact_id, mv.version,
	mv.size_bytes, mv.created_at, mv.last_downloaded_at, mv.soft_deleted_at`

const mavenArtifactFrom = `maven_versions mv
	JOIN maven_packages mp ON mp.namespace_id = mv.namespace_id AND mp.id = mv.maven_package_id
	JOIN maven_repositories mr ON mr.namespace_id = mp.namespace_id AND mr.id = mp.maven_repository_id`

func scanMavenArtifact(row pgx.Row) (*MavenArtifact, error) {
	var v MavenArtifact
	if err := row.Scan(&v.ID, &v.NamespaceID, &v.RepositoryID, &v.PackageID, &v.GroupID, &v.ArtifactID, &v.Version,
		&v.SizeBytes, &v.CreatedAt, &v.LastDownloadedAt, &v.SoftDeletedAt); err != nil {
		return nil, err
	}
	return &v, nil
}

// MavenArtifactsByIDs loads Maven versions (trash included) by id.
func (s *Store) MavenArtifactsByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) ([]*MavenArtifact, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+mavenArtifactColumns+` FROM `+mavenArtifactFrom+`
		WHERE mv.namespace_id = $1 AND mp.namespace_id = $1 AND mr.namespace_id = $1 AND mv.id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, fmt.Errorf("load maven versions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*MavenArtifact, error) { return scanMavenArtifact(r) })
	if err != nil {
		return nil, fmt.Errorf("load maven versions: %w", err)
	}
	return out, nil
}
