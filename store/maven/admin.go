package maven

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// Management side of hosted Maven repositories, for the GraphQL API:
// keyset-paginated listings of packages, versions and files, and soft
// delete and restore of versions and packages. Every change of the active
// version set refreshes the package's maven-metadata.xml, so clients never
// see a deleted version listed (or miss a restored one).

// Package is a maven_packages row.
type Package struct {
	ID                uuid.UUID
	NamespaceID       uuid.UUID
	MavenRepositoryID uuid.UUID
	GroupID           string
	ArtifactID        string
	LastDownloadedAt  *time.Time
	SoftDeletedAt     *time.Time
}

// Version is a maven_versions row.
type Version struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	PackageID        uuid.UUID
	Version          string
	SizeBytes        int64
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
	CreatedAt        time.Time
}

// FileInfo is a maven_files row with its size.
type FileInfo struct {
	ID        uuid.UUID
	PackageID uuid.UUID
	VersionID *uuid.UUID
	FileName  string
	Size      int64
	Checksums Checksums
}

// PackageKey is the keyset position of the package listing.
type PackageKey struct {
	GroupID    string `json:"g"`
	ArtifactID string `json:"a"`
}

const packageColumns = `p.id, p.namespace_id, p.maven_repository_id, p.group_id, p.artifact_id, p.last_downloaded_at, p.soft_deleted_at`

func scanPackage(row pgx.Row) (*Package, error) {
	var p Package
	err := row.Scan(&p.ID, &p.NamespaceID, &p.MavenRepositoryID, &p.GroupID, &p.ArtifactID, &p.LastDownloadedAt, &p.SoftDeletedAt)
	return &p, err
}

const versionColumns = `v.id, v.namespace_id, v.maven_package_id, v.version, v.size_bytes, v.last_downloaded_at, v.soft_deleted_at, v.created_at`

func scanVersion(row pgx.Row) (*Version, error) {
	var v Version
	err := row.Scan(&v.ID, &v.NamespaceID, &v.PackageID, &v.Version, &v.SizeBytes, &v.LastDownloadedAt, &v.SoftDeletedAt, &v.CreatedAt)
	return &v, err
}

// ListPackages lists the active packages of a hosted Maven repository
// (repositoryID is repositories.id) by (groupId, artifactId), after the
// key, riding the active-coordinates index. It reports whether more
// follow.
func (s *Store) ListPackages(ctx context.Context, nsID, repositoryID uuid.UUID, after *PackageKey, limit int) ([]*Package, bool, error) {
	args := []any{nsID, repositoryID, limit + 1}
	keyset := ""
	if after != nil {
		args = append(args, after.GroupID, after.ArtifactID)
		keyset = ` AND (p.group_id, p.artifact_id) > ($4, $5)`
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+packageColumns+`
		FROM maven_packages p
		WHERE p.namespace_id = $1 AND p.soft_deleted_at IS NULL
		  AND p.maven_repository_id = (SELECT mr.id FROM maven_repositories mr WHERE mr.namespace_id = $1 AND mr.repository_id = $2)`+keyset+`
		ORDER BY p.group_id, p.artifact_id
		LIMIT $3`, args...)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven packages: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Package, error) { return scanPackage(r) })
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven packages: %w", err))
	}
	return trimPage(out, limit)
}

// ListVersions lists the active versions of a package in version
// string order (the index order; Maven's own order is not indexable),
// after the given version. It reports whether more follow.
func (s *Store) ListVersions(ctx context.Context, nsID, packageID uuid.UUID, after *string, limit int) ([]*Version, bool, error) {
	args := []any{nsID, packageID, limit + 1}
	keyset := ""
	if after != nil {
		args = append(args, *after)
		keyset = ` AND v.version > $4`
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+versionColumns+`
		FROM maven_versions v
		WHERE v.namespace_id = $1 AND v.maven_package_id = $2 AND v.soft_deleted_at IS NULL`+keyset+`
		ORDER BY v.version
		LIMIT $3`, args...)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven versions: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Version, error) { return scanVersion(r) })
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven versions: %w", err))
	}
	return trimPage(out, limit)
}

// ListFiles lists the active files of a version (or, with versionID
// nil, the package-level files of packageID) by name, after the given
// name. It reports whether more follow.
func (s *Store) ListFiles(ctx context.Context, nsID, packageID uuid.UUID, versionID *uuid.UUID, after *string, limit int) ([]*FileInfo, bool, error) {
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
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*FileInfo, error) { return scanFileInfo(r) })
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list maven files: %w", err))
	}
	return trimPage(out, limit)
}

func trimPage[T any](rows []T, limit int) ([]T, bool, error) {
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// Typed errors of the Maven management operations.
var (
	// CodeUnknown: no such package or version in the namespace.
	CodeUnknown = store.Code{Name: "MAVEN_UNKNOWN", Kind: store.KindNotFound}
	// CodeStateConflict: the row is not in the state the operation
	// needs (already in the trash, not in the trash, an active namesake
	// blocks a restore, its package is in the trash).
	CodeStateConflict = store.Code{Name: "MAVEN_STATE_CONFLICT", Kind: store.KindConflict}
)

// targetOfPackage builds the target a metadata refresh needs from a
// package row.
func (s *Store) targetOfPackage(ctx context.Context, q db.Queryer, nsID, pkgID uuid.UUID) (*Target, *Package, error) {
	t := &Target{NamespaceID: nsID}
	var p Package
	err := q.QueryRow(ctx, `
		SELECT `+packageColumns+`, mr.repository_id
		FROM maven_packages p
		JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.id = p.maven_repository_id
		WHERE p.namespace_id = $1 AND p.id = $2`, nsID, pkgID).Scan(
		&p.ID, &p.NamespaceID, &p.MavenRepositoryID, &p.GroupID, &p.ArtifactID, &p.LastDownloadedAt, &p.SoftDeletedAt, &t.RepositoryID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, errs.New(CodeUnknown, "Maven package or version unknown: package %s", pkgID)
	}
	if err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: maven package %s: %w", pkgID, err))
	}
	t.MavenRepositoryID = p.MavenRepositoryID
	return t, &p, nil
}

// SoftDeleteVersion moves an active version to the trash (its files
// keep their blobs and attachments, so a restore brings them back) and
// refreshes the package metadata.
func (s *Store) SoftDeleteVersion(ctx context.Context, nsID, versionID uuid.UUID) (*Version, error) {
	return s.setVersionTrash(ctx, nsID, versionID, true)
}

// RestoreVersion brings a version back from the trash; refused while
// an active version of the same name exists (re-deployed meanwhile) or the
// package is in the trash.
func (s *Store) RestoreVersion(ctx context.Context, nsID, versionID uuid.UUID) (*Version, error) {
	return s.setVersionTrash(ctx, nsID, versionID, false)
}

func (s *Store) setVersionTrash(ctx context.Context, nsID, versionID uuid.UUID, trash bool) (*Version, error) {
	var (
		out *Version
		t   *Target
		pkg *Package
	)
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		var pkgID uuid.UUID
		err := tx.QueryRow(ctx, `SELECT maven_package_id FROM maven_versions WHERE namespace_id = $1 AND id = $2`,
			nsID, versionID).Scan(&pkgID)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeUnknown, "Maven package or version unknown: version %s", versionID)
		}
		if err != nil {
			return db.MapErr(fmt.Errorf("store: maven version %s: %w", versionID, err))
		}
		if t, pkg, err = s.targetOfPackage(ctx, tx, nsID, pkgID); err != nil {
			return err
		}
		// Lock order of every Maven writer: the package row first.
		ok, err := lockPackage(ctx, tx, nsID, pkgID)
		if err != nil {
			return err
		}
		if !ok {
			return errs.New(CodeStateConflict, "Maven package or version state conflict: package %s:%s is in the trash", pkg.GroupID, pkg.ArtifactID)
		}
		set, cond := `soft_deleted_at = now()`, `soft_deleted_at IS NULL`
		if !trash {
			set, cond = `soft_deleted_at = NULL`, `soft_deleted_at IS NOT NULL`
		}
		out, err = scanVersion(tx.QueryRow(ctx, `
			UPDATE maven_versions v SET `+set+`
			WHERE v.namespace_id = $1 AND v.id = $2 AND v.`+cond+`
			RETURNING `+versionColumns, nsID, versionID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			state := "already in the trash"
			if !trash {
				state = "not in the trash"
			}
			return errs.New(CodeStateConflict, "Maven package or version state conflict: version %s is %s", versionID, state)
		case db.IsPgCode(err, pgerrcode.UniqueViolation, ""):
			return errs.New(CodeStateConflict, "Maven package or version state conflict: an active version of the same name exists (deployed again after the delete)")
		case err != nil:
			return db.MapErr(fmt.Errorf("store: maven version %s: %w", versionID, err))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := s.refreshAfterWrite(ctx, t, metadataScope{pkgID: pkg.ID, groupID: pkg.GroupID, artifactID: pkg.ArtifactID}); err != nil {
		return nil, err
	}
	return out, nil
}

// SoftDeletePackage moves an active package to the trash: only the
// package row is marked (docs/schema.md, Soft delete, trash and purge),
// its versions and files stay as they
// are and come back with a restore. The package's URLs answer 404 while
// it is in the trash, and a new deploy of the same coordinates starts a
// new package.
func (s *Store) SoftDeletePackage(ctx context.Context, nsID, packageID uuid.UUID) (*Package, error) {
	return s.setPackageTrash(ctx, nsID, packageID, true)
}

// RestorePackage brings a package back from the trash; refused while
// an active package of the same coordinates exists.
func (s *Store) RestorePackage(ctx context.Context, nsID, packageID uuid.UUID) (*Package, error) {
	return s.setPackageTrash(ctx, nsID, packageID, false)
}

func (s *Store) setPackageTrash(ctx context.Context, nsID, packageID uuid.UUID, trash bool) (*Package, error) {
	var (
		out *Package
		t   *Target
	)
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		set, cond := `soft_deleted_at = now()`, `soft_deleted_at IS NULL`
		if !trash {
			set, cond = `soft_deleted_at = NULL`, `soft_deleted_at IS NOT NULL`
		}
		var err error
		out, err = scanPackage(tx.QueryRow(ctx, `
			UPDATE maven_packages p SET `+set+`
			WHERE p.namespace_id = $1 AND p.id = $2 AND p.`+cond+`
			RETURNING `+packageColumns, nsID, packageID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, _, err := s.targetOfPackage(ctx, tx, nsID, packageID); err != nil {
				return err
			}
			state := "already in the trash"
			if !trash {
				state = "not in the trash"
			}
			return errs.New(CodeStateConflict, "Maven package or version state conflict: package %s is %s", packageID, state)
		case db.IsPgCode(err, pgerrcode.UniqueViolation, ""):
			return errs.New(CodeStateConflict, "Maven package or version state conflict: an active package of the same coordinates exists (deployed again after the delete)")
		case err != nil:
			return db.MapErr(fmt.Errorf("store: maven package %s: %w", packageID, err))
		}
		t, _, err = s.targetOfPackage(ctx, tx, nsID, packageID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !trash {
		// Versions cannot change while the package is in the trash, but
		// the stored document may be stale from a crash: refresh it on the
		// way back (a no-op when it is current).
		if _, err := s.refreshAfterWrite(ctx, t, metadataScope{pkgID: out.ID, groupID: out.GroupID, artifactID: out.ArtifactID}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
