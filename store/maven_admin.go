package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Management side of hosted Maven repositories, for the GraphQL API:
// keyset-paginated listings of packages, versions and files, and soft
// delete and restore of versions and packages. Every change of the active
// version set refreshes the package's maven-metadata.xml, so clients never
// see a deleted version listed (or miss a restored one).

// MavenPackage is a maven_packages row.
type MavenPackage struct {
	ID                uuid.UUID
	NamespaceID       uuid.UUID
	MavenRepositoryID uuid.UUID
	GroupID           string
	ArtifactID        string
	LastDownloadedAt  *time.Time
	SoftDeletedAt     *time.Time
}

// MavenVersion is a maven_versions row.
type MavenVersion struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	PackageID        uuid.UUID
	Version          string
	SizeBytes        int64
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
	CreatedAt        time.Time
}

// MavenFileInfo is a maven_files row with its size.
type MavenFileInfo struct {
	ID        uuid.UUID
	PackageID uuid.UUID
	VersionID *uuid.UUID
	FileName  string
	Size      int64
	Checksums MavenChecksums
}

// MavenPackageKey is the keyset position of the package listing.
type MavenPackageKey struct {
	GroupID    string `json:"g"`
	ArtifactID string `json:"a"`
}

const mavenPackageColumns = `p.id, p.namespace_id, p.maven_repository_id, p.group_id, p.artifact_id, p.last_downloaded_at, p.soft_deleted_at`

func scanMavenPackage(row pgx.Row) (*MavenPackage, error) {
	var p MavenPackage
	err := row.Scan(&p.ID, &p.NamespaceID, &p.MavenRepositoryID, &p.GroupID, &p.ArtifactID, &p.LastDownloadedAt, &p.SoftDeletedAt)
	return &p, err
}

const mavenVersionColumns = `v.id, v.namespace_id, v.maven_package_id, v.version, v.size_bytes, v.last_downloaded_at, v.soft_deleted_at, v.created_at`

func scanMavenVersion(row pgx.Row) (*MavenVersion, error) {
	var v MavenVersion
	err := row.Scan(&v.ID, &v.NamespaceID, &v.PackageID, &v.Version, &v.SizeBytes, &v.LastDownloadedAt, &v.SoftDeletedAt, &v.CreatedAt)
	return &v, err
}

// ListMavenPackages lists the active packages of a hosted Maven repository
// (repositoryID is repositories.id) by (groupId, artifactId), after the
// key, riding the active-coordinates index. It reports whether more
// follow.
func (s *Store) ListMavenPackages(ctx context.Context, nsID, repositoryID uuid.UUID, after *MavenPackageKey, limit int) ([]*MavenPackage, bool, error) {
	args := []any{nsID, repositoryID, limit + 1}
	keyset := ""
	if after != nil {
		args = append(args, after.GroupID, after.ArtifactID)
		keyset = ` AND (p.group_id, p.artifact_id) > ($4, $5)`
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+mavenPackageColumns+`
		FROM maven_packages p
		WHERE p.namespace_id = $1 AND p.soft_deleted_at IS NULL
		  AND p.maven_repository_id = (SELECT mr.id FROM maven_repositories mr WHERE mr.namespace_id = $1 AND mr.repository_id = $2)`+keyset+`
		ORDER BY p.group_id, p.artifact_id
		LIMIT $3`, args...)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven packages: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*MavenPackage, error) { return scanMavenPackage(r) })
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven packages: %w", err))
	}
	return mavenPage(out, limit)
}

// ListMavenVersions lists the active versions of a package in version
// string order (the index order; Maven's own order is not indexable),
// after the given version. It reports whether more follow.
func (s *Store) ListMavenVersions(ctx context.Context, nsID, packageID uuid.UUID, after *string, limit int) ([]*MavenVersion, bool, error) {
	args := []any{nsID, packageID, limit + 1}
	keyset := ""
	if after != nil {
		args = append(args, *after)
		keyset = ` AND v.version > $4`
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+mavenVersionColumns+`
		FROM maven_versions v
		WHERE v.namespace_id = $1 AND v.maven_package_id = $2 AND v.soft_deleted_at IS NULL`+keyset+`
		ORDER BY v.version
		LIMIT $3`, args...)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven versions: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*MavenVersion, error) { return scanMavenVersion(r) })
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven versions: %w", err))
	}
	return mavenPage(out, limit)
}

// ListMavenFiles lists the active files of a version (or, with versionID
// nil, the package-level files of packageID) by name, after the given
// name. It reports whether more follow.
func (s *Store) ListMavenFiles(ctx context.Context, nsID, packageID uuid.UUID, versionID *uuid.UUID, after *string, limit int) ([]*MavenFileInfo, bool, error) {
	args := []any{nsID, packageID, limit + 1}
	scope := `f.maven_package_id = $2 AND f.maven_version_id IS NULL`
	if versionID != nil {
		args = append(args, *versionID)
		scope = fmt.Sprintf(`f.maven_package_id = $2 AND f.maven_version_id = $%d`, len(args))
	}
	if after != nil {
		args = append(args, *after)
		scope += fmt.Sprintf(` AND f.file_name > $%d`, len(args))
	}
	rows, err := s.pool.Query(ctx, `
		SELECT f.id, f.maven_package_id, f.maven_version_id, f.file_name, f.blob_sha256, f.sha1, f.md5, f.sha512, bn.size
		FROM maven_files f
		JOIN blob_storage_blobs_by_namespace bn ON bn.namespace_id = $1 AND bn.sha256 = f.blob_sha256
		WHERE f.namespace_id = $1 AND `+scope+` AND f.soft_deleted_at IS NULL
		ORDER BY f.file_name
		LIMIT $3`, args...)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven files: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*MavenFileInfo, error) {
		var (
			fi                        MavenFileInfo
			sha256, sha1, md5, sha512 []byte
		)
		if err := r.Scan(&fi.ID, &fi.PackageID, &fi.VersionID, &fi.FileName, &sha256, &sha1, &md5, &sha512, &fi.Size); err != nil {
			return nil, err
		}
		if len(sha256) != 32 || len(sha1) != 20 || len(sha512) != 64 || (md5 != nil && len(md5) != 16) {
			return nil, fmt.Errorf("maven file %s has malformed checksums", fi.ID)
		}
		fi.Checksums.SHA256, fi.Checksums.SHA1, fi.Checksums.SHA512 = [32]byte(sha256), [20]byte(sha1), [64]byte(sha512)
		if md5 != nil {
			v := [16]byte(md5)
			fi.Checksums.MD5 = &v
		}
		return &fi, nil
	})
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven files: %w", err))
	}
	return mavenPage(out, limit)
}

func mavenPage[T any](rows []T, limit int) ([]T, bool, error) {
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// Typed errors of the Maven management operations.
var (
	// CodeMavenUnknown: no such package or version in the namespace.
	CodeMavenUnknown = Code{Name: "MAVEN_UNKNOWN", Kind: KindNotFound}
	// CodeMavenStateConflict: the row is not in the state the operation
	// needs (already in the trash, not in the trash, an active namesake
	// blocks a restore, its package is in the trash).
	CodeMavenStateConflict = Code{Name: "MAVEN_STATE_CONFLICT", Kind: KindConflict}
)

// isMavenUniqueViolation reports a unique_violation (23505).
func isMavenUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgerrcode.UniqueViolation
}

// mavenTargetOfPackage builds the target a metadata refresh needs from a
// package row.
func (s *Store) mavenTargetOfPackage(ctx context.Context, q db.Queryer, nsID, pkgID uuid.UUID) (*MavenTarget, *MavenPackage, error) {
	t := &MavenTarget{NamespaceID: nsID}
	var p MavenPackage
	err := q.QueryRow(ctx, `
		SELECT `+mavenPackageColumns+`, mr.repository_id
		FROM maven_packages p
		JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.id = p.maven_repository_id
		WHERE p.namespace_id = $1 AND p.id = $2`, nsID, pkgID).Scan(
		&p.ID, &p.NamespaceID, &p.MavenRepositoryID, &p.GroupID, &p.ArtifactID, &p.LastDownloadedAt, &p.SoftDeletedAt, &t.RepositoryID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, errs.New(CodeMavenUnknown, "Maven package or version unknown: package %s", pkgID)
	}
	if err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: maven package %s: %w", pkgID, err))
	}
	t.MavenRepositoryID = p.MavenRepositoryID
	return t, &p, nil
}

// SoftDeleteMavenVersion moves an active version to the trash (its files
// keep their blobs and attachments, so a restore brings them back) and
// refreshes the package metadata.
func (s *Store) SoftDeleteMavenVersion(ctx context.Context, nsID, versionID uuid.UUID) (*MavenVersion, error) {
	return s.setMavenVersionTrash(ctx, nsID, versionID, true)
}

// RestoreMavenVersion brings a version back from the trash; refused while
// an active version of the same name exists (re-deployed meanwhile) or the
// package is in the trash.
func (s *Store) RestoreMavenVersion(ctx context.Context, nsID, versionID uuid.UUID) (*MavenVersion, error) {
	return s.setMavenVersionTrash(ctx, nsID, versionID, false)
}

func (s *Store) setMavenVersionTrash(ctx context.Context, nsID, versionID uuid.UUID, trash bool) (*MavenVersion, error) {
	var (
		out *MavenVersion
		t   *MavenTarget
		pkg *MavenPackage
	)
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		var pkgID uuid.UUID
		err := tx.QueryRow(ctx, `SELECT maven_package_id FROM maven_versions WHERE namespace_id = $1 AND id = $2`,
			nsID, versionID).Scan(&pkgID)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeMavenUnknown, "Maven package or version unknown: version %s", versionID)
		}
		if err != nil {
			return db.MapErr(fmt.Errorf("store: maven version %s: %w", versionID, err))
		}
		if t, pkg, err = s.mavenTargetOfPackage(ctx, tx, nsID, pkgID); err != nil {
			return err
		}
		// Lock order of every Maven writer: the package row first.
		ok, err := lockMavenPackage(ctx, tx, nsID, pkgID)
		if err != nil {
			return err
		}
		if !ok {
			return errs.New(CodeMavenStateConflict, "Maven package or version state conflict: package %s:%s is in the trash", pkg.GroupID, pkg.ArtifactID)
		}
		set, cond := `soft_deleted_at = now()`, `soft_deleted_at IS NULL`
		if !trash {
			set, cond = `soft_deleted_at = NULL`, `soft_deleted_at IS NOT NULL`
		}
		out, err = scanMavenVersion(tx.QueryRow(ctx, `
			UPDATE maven_versions v SET `+set+`
			WHERE v.namespace_id = $1 AND v.id = $2 AND v.`+cond+`
			RETURNING `+mavenVersionColumns, nsID, versionID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			state := "already in the trash"
			if !trash {
				state = "not in the trash"
			}
			return errs.New(CodeMavenStateConflict, "Maven package or version state conflict: version %s is %s", versionID, state)
		case isMavenUniqueViolation(err):
			return errs.New(CodeMavenStateConflict, "Maven package or version state conflict: an active version of the same name exists (deployed again after the delete)")
		case err != nil:
			return db.MapErr(fmt.Errorf("store: maven version %s: %w", versionID, err))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.refreshAfterWrite(ctx, t, mavenMetadataScope{pkgID: pkg.ID, groupID: pkg.GroupID, artifactID: pkg.ArtifactID}); err != nil {
		return nil, err
	}
	return out, nil
}

// SoftDeleteMavenPackage moves an active package to the trash: only the
// package row is marked (ADR-007), its versions and files stay as they
// are and come back with a restore. The package's URLs answer 404 while
// it is in the trash, and a new deploy of the same coordinates starts a
// new package.
func (s *Store) SoftDeleteMavenPackage(ctx context.Context, nsID, packageID uuid.UUID) (*MavenPackage, error) {
	return s.setMavenPackageTrash(ctx, nsID, packageID, true)
}

// RestoreMavenPackage brings a package back from the trash; refused while
// an active package of the same coordinates exists.
func (s *Store) RestoreMavenPackage(ctx context.Context, nsID, packageID uuid.UUID) (*MavenPackage, error) {
	return s.setMavenPackageTrash(ctx, nsID, packageID, false)
}

func (s *Store) setMavenPackageTrash(ctx context.Context, nsID, packageID uuid.UUID, trash bool) (*MavenPackage, error) {
	var (
		out *MavenPackage
		t   *MavenTarget
	)
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		set, cond := `soft_deleted_at = now()`, `soft_deleted_at IS NULL`
		if !trash {
			set, cond = `soft_deleted_at = NULL`, `soft_deleted_at IS NOT NULL`
		}
		var err error
		out, err = scanMavenPackage(tx.QueryRow(ctx, `
			UPDATE maven_packages p SET `+set+`
			WHERE p.namespace_id = $1 AND p.id = $2 AND p.`+cond+`
			RETURNING `+mavenPackageColumns, nsID, packageID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, _, err := s.mavenTargetOfPackage(ctx, tx, nsID, packageID); err != nil {
				return err
			}
			state := "already in the trash"
			if !trash {
				state = "not in the trash"
			}
			return errs.New(CodeMavenStateConflict, "Maven package or version state conflict: package %s is %s", packageID, state)
		case isMavenUniqueViolation(err):
			return errs.New(CodeMavenStateConflict, "Maven package or version state conflict: an active package of the same coordinates exists (deployed again after the delete)")
		case err != nil:
			return db.MapErr(fmt.Errorf("store: maven package %s: %w", packageID, err))
		}
		t, _, err = s.mavenTargetOfPackage(ctx, tx, nsID, packageID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !trash {
		// Versions cannot change while the package is in the trash, but
		// the stored document may be stale from a crash: refresh it on the
		// way back (a no-op when it is current).
		if _, err := s.refreshAfterWrite(ctx, t, mavenMetadataScope{pkgID: out.ID, groupID: out.GroupID, artifactID: out.ArtifactID}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
