package maven

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// SnapshotBuild is one timestamped build of a SNAPSHOT version: the files
// sharing one <timestamp>-<buildNumber>.
type SnapshotBuild struct {
	Value     string    // "1.0-20261129.210811-2"
	BuiltAt   time.Time // from the timestamp (UTC)
	Number    int
	FileIDs   []uuid.UUID
	SizeBytes int64
}

// SnapshotBuildsOf lists the active timestamped builds of a SNAPSHOT
// version, newest first (build number, then timestamp). Files without a
// timestamp (maven-metadata.xml, checksums of it) belong to no build.
func (s *Store) SnapshotBuildsOf(ctx context.Context, nsID uuid.UUID, artifactID string, versionID uuid.UUID, version string) ([]*SnapshotBuild, error) {
	if !mavenlayout.IsSnapshotVersion(version) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT f.id, f.file_name, COALESCE(b.size, 0)
		FROM maven_files f
		LEFT JOIN blob_storage_blobs b ON b.namespace_id = $1 AND b.sha256 = f.blob_sha256
		WHERE f.namespace_id = $1 AND f.maven_version_id = $2 AND f.soft_deleted_at IS NULL`, nsID, versionID)
	if err != nil {
		return nil, fmt.Errorf("store: maven snapshot builds: %w", err)
	}
	defer rows.Close()
	byValue := map[string]*SnapshotBuild{}
	var out []*SnapshotBuild
	for rows.Next() {
		var (
			id   uuid.UUID
			name string
			size int64
		)
		if err := rows.Scan(&id, &name, &size); err != nil {
			return nil, fmt.Errorf("store: maven snapshot builds: %w", err)
		}
		f, ok := mavenlayout.ParseSnapshotFile(artifactID, version, name)
		if !ok {
			continue
		}
		v := f.Value(version)
		b := byValue[v]
		if b == nil {
			at, _ := time.Parse("20060102.150405", f.Timestamp)
			b = &SnapshotBuild{Value: v, BuiltAt: at, Number: f.BuildNumber}
			byValue[v] = b
			out = append(out, b)
		}
		b.FileIDs = append(b.FileIDs, id)
		b.SizeBytes += size
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: maven snapshot builds: %w", err)
	}
	sortBuildsNewestFirst(out)
	return out, nil
}

func sortBuildsNewestFirst(bs []*SnapshotBuild) {
	slices.SortFunc(bs, func(a, b *SnapshotBuild) int {
		if a.Number != b.Number {
			return cmp.Compare(b.Number, a.Number)
		}
		return b.BuiltAt.Compare(a.BuiltAt)
	})
}

// SoftDeleteSnapshotBuilds moves files of old builds of a SNAPSHOT
// version to the trash state (soft_deleted_at set; their attachments stay
// until they are purged) and re-renders the version's maven-metadata.xml,
// so clients resolve the newest build that is left. The package row is
// locked first, as by every Maven writer. It returns the files marked.
func (s *Store) SoftDeleteSnapshotBuilds(ctx context.Context, nsID, versionID uuid.UUID, fileIDs []uuid.UUID) (int, error) {
	var (
		n   int64
		t   *Target
		pkg *Package
		ver string
	)
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		var pkgID uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT maven_package_id, version FROM maven_versions
			WHERE namespace_id = $1 AND id = $2 AND soft_deleted_at IS NULL`, nsID, versionID).Scan(&pkgID, &ver); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errs.New(CodeUnknown, "Maven package or version unknown: version %s", versionID)
			}
			return fmt.Errorf("store: maven version %s: %w", versionID, err)
		}
		var err error
		if t, pkg, err = s.targetOfPackage(ctx, tx, nsID, pkgID); err != nil {
			return err
		}
		ok, err := lockPackage(ctx, tx, nsID, pkgID)
		if err != nil || !ok {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE maven_files SET soft_deleted_at = $4
			WHERE namespace_id = $1 AND maven_version_id = $2 AND id = ANY($3::uuid[]) AND soft_deleted_at IS NULL`,
			nsID, versionID, fileIDs, s.core.Options().Clock.Now())
		if err != nil {
			return fmt.Errorf("store: maven soft-delete snapshot builds: %w", err)
		}
		n = tag.RowsAffected()
		return nil
	})
	if err != nil || n == 0 {
		return int(n), err
	}
	vid := versionID
	if _, err := s.refreshAfterWrite(ctx, t, metadataScope{pkgID: pkg.ID, versionID: &vid, groupID: pkg.GroupID, artifactID: pkg.ArtifactID, version: ver}); err != nil {
		return int(n), err
	}
	return int(n), nil
}
