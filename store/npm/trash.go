package npm

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

// Trash operations on npm versions and packages by id, for the management
// API: soft delete (the same as an npm unpublish: dist-tags move, latest is
// recomputed, the package goes to the trash with its last version) and
// restore. Each runs in one transaction that locks the package row first
// and force-expires the package's metadata files.

// CodeConflict: a restore would collide with an active row (a package of
// the same name was published after the delete).
var CodeConflict = store.Code{Name: "NPM_CONFLICT", Kind: store.KindConflict}

// CodeTrashState: the item is not where the operation needs it (deleting
// what is already in the trash, restoring what is not in it).
var CodeTrashState = store.Code{Name: "NPM_TRASH_STATE", Kind: store.KindConflict}

// versionRow is what the trash operations read about a version.
type versionRow struct {
	packageID, npmRepositoryID uuid.UUID
	name, version              string
	versionDeleted             *time.Time
	packageDeleted             *time.Time
}

func versionByID(ctx context.Context, tx pgx.Tx, namespaceID, versionID uuid.UUID) (*versionRow, error) {
	var r versionRow
	err := tx.QueryRow(ctx, `
		SELECT v.npm_package_id, p.npm_repository_id, p.name, v.version, v.soft_deleted_at, p.soft_deleted_at
		FROM npm_versions v
		JOIN npm_packages p ON p.namespace_id = $1 AND p.id = v.npm_package_id
		WHERE v.namespace_id = $1 AND v.id = $2`, execMode, namespaceID, versionID).
		Scan(&r.packageID, &r.npmRepositoryID, &r.name, &r.version, &r.versionDeleted, &r.packageDeleted)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeVersionUnknown, "npm version unknown: version %s", versionID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: npm version %s: %w", versionID, err)
	}
	return &r, nil
}

// lockPackageByID locks a package row (trashed or not) FOR NO KEY UPDATE
// and returns its name, repository and deletion time.
func lockPackageByID(ctx context.Context, tx pgx.Tx, namespaceID, packageID uuid.UUID) (string, uuid.UUID, *time.Time, error) {
	var (
		name    string
		repoID  uuid.UUID
		deleted *time.Time
	)
	err := tx.QueryRow(ctx, `
		SELECT name, npm_repository_id, soft_deleted_at FROM npm_packages
		WHERE namespace_id = $1 AND id = $2 FOR NO KEY UPDATE`, execMode, namespaceID, packageID).Scan(&name, &repoID, &deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", uuid.Nil, nil, errs.New(CodePackageUnknown, "npm package unknown: package %s", packageID)
	}
	if err != nil {
		return "", uuid.Nil, nil, fmt.Errorf("store: npm package %s: %w", packageID, err)
	}
	return name, repoID, deleted, nil
}

// DeleteVersionByID moves an active version to the trash, exactly as
// npm's unpublish of that version does.
func (s *Store) DeleteVersionByID(ctx context.Context, namespaceID, versionID uuid.UUID, hook WriteHook) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		v, err := versionByID(ctx, tx, namespaceID, versionID)
		if err != nil {
			return err
		}
		if _, _, _, err := lockPackageByID(ctx, tx, namespaceID, v.packageID); err != nil {
			return err
		}
		// Re-read under the lock.
		if v, err = versionByID(ctx, tx, namespaceID, versionID); err != nil {
			return err
		}
		if v.versionDeleted != nil || v.packageDeleted != nil {
			return errs.New(CodeTrashState, "%s@%s is already in the trash", v.name, v.version)
		}
		pkg := PackageRef{NamespaceID: namespaceID, NpmRepositoryID: v.npmRepositoryID, PackageID: v.packageID, Name: v.name}
		active, err := activeVersions(ctx, tx, pkg)
		if err != nil {
			return err
		}
		var remaining []activeVersion
		for _, a := range active {
			if a.id != versionID {
				remaining = append(remaining, a)
			}
		}
		deltas, err := s.unpublishVersions(ctx, tx, pkg, []uuid.UUID{versionID}, remaining)
		if err != nil {
			return err
		}
		if len(remaining) == 0 {
			return s.trashPackage(ctx, tx, pkg, hook, deltas)
		}
		return s.finishWrite(ctx, tx, pkg, hook, deltas)
	})
}

// DeletePackageByID moves an active package with its versions to the
// trash (npm unpublish --force).
func (s *Store) DeletePackageByID(ctx context.Context, namespaceID, packageID uuid.UUID, hook WriteHook) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		name, repoID, deleted, err := lockPackageByID(ctx, tx, namespaceID, packageID)
		if err != nil {
			return err
		}
		if deleted != nil {
			return errs.New(CodeTrashState, "%s is already in the trash", name)
		}
		pkg := PackageRef{NamespaceID: namespaceID, NpmRepositoryID: repoID, PackageID: packageID, Name: name}
		return s.trashPackage(ctx, tx, pkg, hook, nil)
	})
}

// RestoreVersion brings a version and its files back from the trash
// (and its package, when the package is in the trash too and its name is
// free). latest is set when the package has none.
func (s *Store) RestoreVersion(ctx context.Context, namespaceID, versionID uuid.UUID, hook WriteHook) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		v, err := versionByID(ctx, tx, namespaceID, versionID)
		if err != nil {
			return err
		}
		if _, _, _, err := lockPackageByID(ctx, tx, namespaceID, v.packageID); err != nil {
			return err
		}
		if v, err = versionByID(ctx, tx, namespaceID, versionID); err != nil {
			return err
		}
		if v.versionDeleted == nil {
			return errs.New(CodeTrashState, "%s@%s is not in the trash", v.name, v.version)
		}
		pkg := PackageRef{NamespaceID: namespaceID, NpmRepositoryID: v.npmRepositoryID, PackageID: v.packageID, Name: v.name}
		if v.packageDeleted != nil {
			if err := restorePackageRow(ctx, tx, pkg); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `
			WITH v AS (
				UPDATE npm_versions SET soft_deleted_at = NULL
				WHERE namespace_id = $1 AND id = $2 AND soft_deleted_at = $3
			)
			UPDATE npm_files SET soft_deleted_at = NULL
			WHERE namespace_id = $1 AND npm_version_id = $2 AND soft_deleted_at = $3`,
			execMode, namespaceID, versionID, *v.versionDeleted); err != nil {
			if db.IsPgCode(err, pgerrcode.UniqueViolation, "") {
				return errs.New(CodeConflict, "npm restore conflict: %s@%s is active", v.name, v.version)
			}
			return fmt.Errorf("store: npm restore %s@%s: %w", v.name, v.version, err)
		}
		return s.finishRestore(ctx, tx, pkg, hook)
	})
}

// RestorePackage brings a package back from the trash with the versions
// (and files) that went to the trash with it; versions unpublished before
// stay in the trash.
func (s *Store) RestorePackage(ctx context.Context, namespaceID, packageID uuid.UUID, hook WriteHook) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		name, repoID, deleted, err := lockPackageByID(ctx, tx, namespaceID, packageID)
		if err != nil {
			return err
		}
		if deleted == nil {
			return errs.New(CodeTrashState, "%s is not in the trash", name)
		}
		pkg := PackageRef{NamespaceID: namespaceID, NpmRepositoryID: repoID, PackageID: packageID, Name: name}
		if err := restorePackageRow(ctx, tx, pkg); err != nil {
			return err
		}
		// The package's delete stamped its versions and files with its own
		// transaction time.
		if _, err := tx.Exec(ctx, `
			WITH v AS (
				UPDATE npm_versions SET soft_deleted_at = NULL
				WHERE namespace_id = $1 AND npm_package_id = $2 AND soft_deleted_at = $3
				RETURNING id
			)
			UPDATE npm_files SET soft_deleted_at = NULL
			WHERE namespace_id = $1 AND npm_version_id IN (SELECT id FROM v) AND soft_deleted_at = $3`,
			execMode, namespaceID, packageID, *deleted); err != nil {
			return fmt.Errorf("store: npm restore %s: %w", name, err)
		}
		return s.finishRestore(ctx, tx, pkg, hook)
	})
}

// restorePackageRow clears a package's soft delete unless an active
// package of the same name exists.
func restorePackageRow(ctx context.Context, tx pgx.Tx, pkg PackageRef) error {
	_, err := tx.Exec(ctx, `UPDATE npm_packages SET soft_deleted_at = NULL WHERE namespace_id = $1 AND id = $2`,
		execMode, pkg.NamespaceID, pkg.PackageID)
	if db.IsPgCode(err, pgerrcode.UniqueViolation, "") {
		return errs.New(CodeConflict, "npm restore conflict: a package named %s was published after it went to the trash", pkg.Name)
	}
	if err != nil {
		return fmt.Errorf("store: npm restore %s: %w", pkg.Name, err)
	}
	return nil
}

// finishRestore makes sure the package has a latest tag, then expires
// the metadata files and runs the hook.
func (s *Store) finishRestore(ctx context.Context, tx pgx.Tx, pkg PackageRef, hook WriteHook) error {
	active, err := activeVersions(ctx, tx, pkg)
	if err != nil {
		return err
	}
	if len(active) == 0 {
		return errs.New(CodeTrashState, "%s has no version to restore with it; restore a version instead", pkg.Name)
	}
	var hasLatest bool
	if err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM npm_tags t JOIN npm_versions v ON v.namespace_id = t.namespace_id AND v.id = t.npm_version_id
		               WHERE t.namespace_id = $1 AND t.npm_package_id = $2 AND t.name = 'latest' AND v.soft_deleted_at IS NULL)`,
		execMode, pkg.NamespaceID, pkg.PackageID).Scan(&hasLatest); err != nil {
		return fmt.Errorf("store: npm restore %s: %w", pkg.Name, err)
	}
	var deltas []counterDelta
	if !hasLatest {
		latest := pickLatest(active)
		var created bool
		if err := tx.QueryRow(ctx, `
			INSERT INTO npm_tags AS t (id, namespace_id, npm_package_id, npm_version_id, name)
			VALUES ($1, $2, $3, $4, 'latest')
			ON CONFLICT (namespace_id, npm_package_id, name) DO UPDATE SET npm_version_id = EXCLUDED.npm_version_id
			RETURNING t.id = $1`, execMode, db.NewID(), pkg.NamespaceID, pkg.PackageID, latest.id).Scan(&created); err != nil {
			return fmt.Errorf("store: npm restore %s: latest: %w", pkg.Name, err)
		}
		deltas = tagsDelta(pkg.PackageID, boolInt(created))
	}
	return s.finishWrite(ctx, tx, pkg, hook, deltas)
}
