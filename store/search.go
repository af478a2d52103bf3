package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ChecksumMatchKind names the table a checksum match comes from.
type ChecksumMatchKind string

const (
	MatchContainerBlob     ChecksumMatchKind = "CONTAINER_BLOB"
	MatchContainerManifest ChecksumMatchKind = "CONTAINER_MANIFEST"
)

// ChecksumMatch is one artifact row referencing a blob.
type ChecksumMatch struct {
	Kind          ChecksumMatchKind
	ArtifactID    uuid.UUID
	ParentID      uuid.UUID // container image
	RepositoryID  uuid.UUID
	SoftDeletedAt *time.Time
}

// ChecksumSearch finds every artifact of the namespace that references the
// blob with this sha256: the cross-format UNION ALL of ADR-007, one arm per
// table, each pruned to the namespace's partition. container_blobs rides
// its (namespace_id, digest) index (digest = blob_sha256); the
// container_manifests arm scans the namespace's partition (no standalone
// digest index, accepted by ADR-007). activeOnly adds
// soft_deleted_at IS NULL (vulnerability impact). Maven and npm arms join
// when their tables land.
func (s *Store) ChecksumSearch(ctx context.Context, nsID uuid.UUID, sha256 []byte, activeOnly bool, limit int) ([]*ChecksumMatch, error) {
	if len(sha256) != 32 {
		return nil, domainErr(CodeInvalidInput, "sha256 must be 32 bytes")
	}
	active := ""
	if activeOnly {
		active = " AND x.soft_deleted_at IS NULL"
	}
	rows, err := s.pool.Query(ctx, `
		SELECT 'CONTAINER_BLOB', x.id, x.container_image_id, cr.repository_id, x.soft_deleted_at
		FROM container_blobs x
		JOIN container_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_image_id
		JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
		WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.digest = $2`+active+`
		UNION ALL
		SELECT 'CONTAINER_MANIFEST', x.id, x.container_image_id, cr.repository_id, x.soft_deleted_at
		FROM container_manifests x
		JOIN container_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_image_id
		JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
		WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.digest = $2`+active+`
		LIMIT $3`, nsID, sha256, limit)
	if err != nil {
		return nil, fmt.Errorf("checksum search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ChecksumMatch, error) {
		var m ChecksumMatch
		var kind string
		err := r.Scan(&kind, &m.ArtifactID, &m.ParentID, &m.RepositoryID, &m.SoftDeletedAt)
		m.Kind = ChecksumMatchKind(kind)
		return &m, err
	})
	if err != nil {
		return nil, fmt.Errorf("checksum search: %w", err)
	}
	return out, nil
}
