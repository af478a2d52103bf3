package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ChecksumMatchKind names the table a checksum match comes from.
type ChecksumMatchKind string

const (
	MatchContainerBlob     ChecksumMatchKind = "CONTAINER_BLOB"
	MatchContainerManifest ChecksumMatchKind = "CONTAINER_MANIFEST"
	MatchMavenFile         ChecksumMatchKind = "MAVEN_FILE"
	MatchNpmFile           ChecksumMatchKind = "NPM_FILE"
	MatchNpmMetadataFile   ChecksumMatchKind = "NPM_METADATA_FILE"
)

// ChecksumMatch is one artifact row referencing a blob. Cached rows (a
// remote repository's copy of upstream content) have the same kinds as
// hosted ones; their parent is the cached image, Maven version (or
// package), npm version or package.
type ChecksumMatch struct {
	Kind          ChecksumMatchKind
	ArtifactID    uuid.UUID
	ParentID      uuid.UUID // container image, Maven version (package for package-level files), npm version or package
	RepositoryID  uuid.UUID
	Cached        bool
	SoftDeletedAt *time.Time
}

// ChecksumSearch finds every artifact of the namespace that references the
// blob with this sha256, hosted or cached by a remote repository: a
// cross-format UNION ALL, one arm per table, each pruned to the namespace's
// partition. container_blobs rides its (namespace_id, digest) index
// (digest = blob_sha256); the container_manifests arm scans the
// namespace's partition (no standalone digest index, an accepted cost);
// maven_files, npm_files, npm_metadata_files and the five remote tables
// ride their (namespace_id, blob_sha256) indexes (a cached row's
// blob_sha256 is its digest: the cache stores the upstream bytes as they
// are). activeOnly adds soft_deleted_at IS NULL (vulnerability impact);
// metadata files have no soft delete and always count as active.
func (s *Store) ChecksumSearch(ctx context.Context, nsID uuid.UUID, sha256 []byte, activeOnly bool, limit int) ([]*ChecksumMatch, error) {
	if len(sha256) != 32 {
		return nil, errs.New(store.CodeInvalidInput, "sha256 must be 32 bytes")
	}
	rows, err := s.pool.Query(ctx, checksumSearchSQL(activeOnly), nsID, sha256, limit)
	if err != nil {
		return nil, fmt.Errorf("checksum search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ChecksumMatch, error) {
		var m ChecksumMatch
		var kind string
		err := r.Scan(&kind, &m.ArtifactID, &m.ParentID, &m.RepositoryID, &m.Cached, &m.SoftDeletedAt)
		m.Kind = ChecksumMatchKind(kind)
		return &m, err
	})
	if err != nil {
		return nil, fmt.Errorf("checksum search: %w", err)
	}
	return out, nil
}

// checksumSearchSQL is ChecksumSearch's statement ($1 namespace, $2 sha256,
// $3 limit).
func checksumSearchSQL(activeOnly bool) string {
	active := ""
	if activeOnly {
		active = " AND x.soft_deleted_at IS NULL"
	}
	return `
		SELECT 'CONTAINER_BLOB', x.id, x.container_image_id, cr.repository_id, false, x.soft_deleted_at
		FROM container_blobs x
		JOIN container_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_image_id
		JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
		WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.digest = $2` + active + `
		UNION ALL
		SELECT 'CONTAINER_MANIFEST', x.id, x.container_image_id, cr.repository_id, false, x.soft_deleted_at
		FROM container_manifests x
		JOIN container_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_image_id
		JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
		WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.digest = $2` + active + `
		UNION ALL
		SELECT 'MAVEN_FILE', x.id, COALESCE(x.maven_version_id, x.maven_package_id), mr.repository_id, false, x.soft_deleted_at
		FROM maven_files x
		JOIN maven_packages mp ON mp.namespace_id = x.namespace_id AND mp.id = x.maven_package_id
		JOIN maven_repositories mr ON mr.namespace_id = mp.namespace_id AND mr.id = mp.maven_repository_id
		WHERE x.namespace_id = $1 AND mp.namespace_id = $1 AND mr.namespace_id = $1 AND x.blob_sha256 = $2` + active + `
		UNION ALL
		SELECT 'NPM_FILE', x.id, x.npm_version_id, nr.repository_id, false, x.soft_deleted_at
		FROM npm_files x
		JOIN npm_versions nv ON nv.namespace_id = x.namespace_id AND nv.id = x.npm_version_id
		JOIN npm_packages np ON np.namespace_id = nv.namespace_id AND np.id = nv.npm_package_id
		JOIN npm_repositories nr ON nr.namespace_id = np.namespace_id AND nr.id = np.npm_repository_id
		WHERE x.namespace_id = $1 AND nv.namespace_id = $1 AND np.namespace_id = $1 AND nr.namespace_id = $1
		  AND x.blob_sha256 = $2` + active + `
		UNION ALL
		SELECT 'NPM_METADATA_FILE', x.id, x.npm_package_id, nr.repository_id, false, NULL::timestamptz
		FROM npm_metadata_files x
		JOIN npm_packages np ON np.namespace_id = x.namespace_id AND np.id = x.npm_package_id
		JOIN npm_repositories nr ON nr.namespace_id = np.namespace_id AND nr.id = np.npm_repository_id
		WHERE x.namespace_id = $1 AND np.namespace_id = $1 AND nr.namespace_id = $1 AND x.blob_sha256 = $2
		UNION ALL
		SELECT 'CONTAINER_BLOB', x.id, x.container_remote_image_id, cr.repository_id, true, x.soft_deleted_at
		FROM container_remote_blobs x
		JOIN container_remote_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_remote_image_id
		JOIN container_remote_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_remote_repository_id
		WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.blob_sha256 = $2` + active + `
		UNION ALL
		SELECT 'CONTAINER_MANIFEST', x.id, x.container_remote_image_id, cr.repository_id, true, x.soft_deleted_at
		FROM container_remote_manifests x
		JOIN container_remote_images ci ON ci.namespace_id = x.namespace_id AND ci.id = x.container_remote_image_id
		JOIN container_remote_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_remote_repository_id
		WHERE x.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND x.blob_sha256 = $2` + active + `
		UNION ALL
		SELECT 'MAVEN_FILE', x.id, COALESCE(x.maven_remote_version_id, x.maven_remote_package_id), mr.repository_id, true, x.soft_deleted_at
		FROM maven_remote_files x
		JOIN maven_remote_packages mp ON mp.namespace_id = x.namespace_id AND mp.id = x.maven_remote_package_id
		JOIN maven_remote_repositories mr ON mr.namespace_id = mp.namespace_id AND mr.id = mp.maven_remote_repository_id
		WHERE x.namespace_id = $1 AND mp.namespace_id = $1 AND mr.namespace_id = $1 AND x.blob_sha256 = $2` + active + `
		UNION ALL
		SELECT 'NPM_FILE', x.id, x.npm_remote_version_id, nr.repository_id, true, x.soft_deleted_at
		FROM npm_remote_files x
		JOIN npm_remote_versions nv ON nv.namespace_id = x.namespace_id AND nv.id = x.npm_remote_version_id
		JOIN npm_remote_packages np ON np.namespace_id = nv.namespace_id AND np.id = nv.npm_remote_package_id
		JOIN npm_remote_repositories nr ON nr.namespace_id = np.namespace_id AND nr.id = np.npm_remote_repository_id
		WHERE x.namespace_id = $1 AND nv.namespace_id = $1 AND np.namespace_id = $1 AND nr.namespace_id = $1
		  AND x.blob_sha256 = $2` + active + `
		UNION ALL
		SELECT 'NPM_METADATA_FILE', x.id, x.npm_remote_package_id, nr.repository_id, true, NULL::timestamptz
		FROM npm_remote_metadata_files x
		JOIN npm_remote_packages np ON np.namespace_id = x.namespace_id AND np.id = x.npm_remote_package_id
		JOIN npm_remote_repositories nr ON nr.namespace_id = np.namespace_id AND nr.id = np.npm_remote_repository_id
		WHERE x.namespace_id = $1 AND np.namespace_id = $1 AND nr.namespace_id = $1 AND x.blob_sha256 = $2
		LIMIT $3`
}
