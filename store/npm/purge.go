package npm

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Hard delete of npm rows from the trash (docs/schema.md, "Soft delete,
// trash and purge"), shared by the expiry sweep and the purge mutations.
// Each function runs in the caller's transaction in the package's lock
// order: package rows first (FOR NO KEY UPDATE, by id), then the version
// rows, then the blob rows (store.PurgeAttached); the deletes run children
// before parents (tags, files, versions, metadata files, packages), one
// statement each, and the attachments are detached in the same
// transaction. Rows restored (or deleted again after cutoff) since the
// caller chose them no longer match and are left alone.

// Purge is what a purge did.
type Purge struct {
	Versions []uuid.UUID // versions hard-deleted
	Packages []uuid.UUID // packages hard-deleted
	Released store.Released
}

// PurgeVersions hard-deletes trashed versions by id with their files.
// A package in the trash left without versions goes with them; an active
// package keeps its row (its versions_count drops by the purged ones).
func (s *Store) PurgeVersions(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*Purge, error) {
	rows, err := tx.Query(ctx, `
		SELECT p.id FROM npm_packages p
		WHERE p.namespace_id = $1 AND p.id IN (SELECT npm_package_id FROM npm_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[]))
		ORDER BY p.id
		FOR NO KEY UPDATE OF p`, execMode, nsID, ids)
	pkgs, err := db.CollectIDs(rows, err)
	if err != nil || len(pkgs) == 0 {
		return &Purge{}, wrapErr("lock packages of versions to purge", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT id FROM npm_versions
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND soft_deleted_at IS NOT NULL
		  AND ($3::timestamptz IS NULL OR soft_deleted_at <= $3)
		ORDER BY id
		FOR UPDATE`, execMode, nsID, ids, cutoff)
	versions, err := db.CollectIDs(rows, err)
	if err != nil || len(versions) == 0 {
		return &Purge{}, wrapErr("lock versions to purge", err)
	}
	perPackage, err := versionsPerPackage(ctx, tx, nsID, versions)
	if err != nil {
		return nil, err
	}
	out := &Purge{Versions: versions}
	if out.Released, err = s.purgeVersionRows(ctx, tx, nsID, versions); err != nil {
		return nil, err
	}
	// Trashed packages left empty go too; active ones keep their row.
	rows, err = tx.Query(ctx, `
		SELECT p.id FROM npm_packages p
		WHERE p.namespace_id = $1 AND p.id = ANY($2::uuid[]) AND p.soft_deleted_at IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM npm_versions v WHERE v.namespace_id = $1 AND v.npm_package_id = p.id)
		ORDER BY p.id`, execMode, nsID, pkgs)
	empty, err := db.CollectIDs(rows, err)
	if err != nil {
		return nil, wrapErr("empty trashed packages", err)
	}
	// versions_count counts trashed versions (the per-package limit
	// includes them): packages that keep their row count the purged ones
	// out. The package row goes with the others, and its counter with it.
	for _, p := range empty {
		delete(perPackage, p)
	}
	var deltas []counterDelta
	for p, n := range perPackage {
		deltas = append(deltas, counterDelta{enum.CounterTargetNpmPackage, p, enum.CounterFieldVersionsCount, -n})
	}
	if err := insertCounterDeltas(ctx, tx, nsID, deltas); err != nil {
		return nil, err
	}
	if len(empty) > 0 {
		rel, err := s.purgePackageRows(ctx, tx, nsID, empty)
		if err != nil {
			return nil, err
		}
		out.Packages, out.Released = empty, out.Released.Add(rel)
	}
	return out, nil
}

// PurgePackages hard-deletes packages by id with all their versions,
// files, tags and metadata files. trashed limits it to packages in the
// trash (deleted at or before cutoff when not nil); otherwise the caller
// has locked the repository (a repository purge). Ids that do not qualify
// are skipped.
func (s *Store) PurgePackages(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, trashed bool, cutoff *time.Time) (*Purge, error) {
	rows, err := tx.Query(ctx, `
		SELECT id FROM npm_packages
		WHERE namespace_id = $1 AND id = ANY($2::uuid[])
		  AND (NOT $3 OR soft_deleted_at IS NOT NULL) AND ($4::timestamptz IS NULL OR soft_deleted_at <= $4)
		ORDER BY id
		FOR NO KEY UPDATE`, execMode, nsID, ids, trashed, cutoff)
	pkgs, err := db.CollectIDs(rows, err)
	if err != nil || len(pkgs) == 0 {
		return &Purge{}, wrapErr("lock packages to purge", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT id FROM npm_versions WHERE namespace_id = $1 AND npm_package_id = ANY($2::uuid[])
		ORDER BY id FOR UPDATE`, execMode, nsID, pkgs)
	versions, err := db.CollectIDs(rows, err)
	if err != nil {
		return nil, wrapErr("lock versions of packages to purge", err)
	}
	out := &Purge{Versions: versions, Packages: pkgs}
	if len(versions) > 0 {
		if out.Released, err = s.purgeVersionRows(ctx, tx, nsID, versions); err != nil {
			return nil, err
		}
	}
	rel, err := s.purgePackageRows(ctx, tx, nsID, pkgs)
	if err != nil {
		return nil, err
	}
	out.Released = out.Released.Add(rel)
	return out, nil
}

// purgeVersionRows deletes locked versions with their tags and files and
// detaches the files' attachments.
func (s *Store) purgeVersionRows(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, versions []uuid.UUID) (store.Released, error) {
	atts, err := attachmentsOf(ctx, tx, `SELECT blob_storage_attachment_id, blob_sha256 FROM npm_files
		WHERE namespace_id = $1 AND npm_version_id = ANY($2::uuid[]) ORDER BY id`, nsID, versions)
	if err != nil {
		return store.Released{}, wrapErr("files of versions to purge", err)
	}
	return s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		return execEach(ctx, tx, "purge npm versions", nsID, versions,
			`DELETE FROM npm_tags WHERE namespace_id = $1 AND npm_version_id = ANY($2::uuid[])`,
			`DELETE FROM npm_files WHERE namespace_id = $1 AND npm_version_id = ANY($2::uuid[])`,
			`DELETE FROM npm_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	})
}

// purgePackageRows deletes locked packages that hold no versions any
// more, with their tags and metadata files (detached).
func (s *Store) purgePackageRows(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, pkgs []uuid.UUID) (store.Released, error) {
	atts, err := attachmentsOf(ctx, tx, `SELECT blob_storage_attachment_id, blob_sha256 FROM npm_metadata_files
		WHERE namespace_id = $1 AND npm_package_id = ANY($2::uuid[]) ORDER BY id FOR UPDATE`, nsID, pkgs)
	if err != nil {
		return store.Released{}, wrapErr("metadata files of packages to purge", err)
	}
	return s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		return execEach(ctx, tx, "purge npm packages", nsID, pkgs,
			`DELETE FROM npm_tags WHERE namespace_id = $1 AND npm_package_id = ANY($2::uuid[])`,
			`DELETE FROM npm_metadata_files WHERE namespace_id = $1 AND npm_package_id = ANY($2::uuid[])`,
			`DELETE FROM npm_packages WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	})
}

// versionsPerPackage counts the given versions by package.
func versionsPerPackage(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, versions []uuid.UUID) (map[uuid.UUID]int64, error) {
	rows, err := tx.Query(ctx, `SELECT npm_package_id, count(*) FROM npm_versions
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) GROUP BY npm_package_id`, execMode, nsID, versions)
	if err != nil {
		return nil, wrapErr("versions per package", err)
	}
	out := map[uuid.UUID]int64{}
	var (
		pkg uuid.UUID
		n   int64
	)
	_, err = pgx.ForEachRow(rows, []any{&pkg, &n}, func() error { out[pkg] = n; return nil })
	return out, wrapErr("versions per package", err)
}

func attachmentsOf(ctx context.Context, tx pgx.Tx, sql string, nsID uuid.UUID, ids []uuid.UUID) ([]store.Attachment, error) {
	return store.CollectAttachments(tx.Query(ctx, sql, execMode, nsID, ids))
}

func execEach(ctx context.Context, tx pgx.Tx, what string, nsID uuid.UUID, ids []uuid.UUID, stmts ...string) error {
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q, execMode, nsID, ids); err != nil {
			return wrapErr(what, err)
		}
	}
	return nil
}

// PackagesOfRepository lists up to limit package ids of a repository, any
// state (the repository purge empties it package by package).
func (s *Store) PackagesOfRepository(ctx context.Context, q db.Queryer, nsID, repositoryID uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT p.id FROM npm_packages p
		JOIN npm_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_repository_id
		WHERE p.namespace_id = $1 AND r.namespace_id = $1 AND r.repository_id = $2
		ORDER BY p.id LIMIT $3`, execMode, nsID, repositoryID, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("npm packages of repository", err)
}

// ExpiredVersions and ExpiredPackages list up to limit ids of trashed rows
// deleted at or before cutoff, oldest first (a range scan of the table's
// trash index).
func (s *Store) ExpiredVersions(ctx context.Context, q db.Queryer, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	return expired(ctx, q, "npm_versions", nsID, cutoff, limit)
}

// ExpiredPackages: see ExpiredVersions.
func (s *Store) ExpiredPackages(ctx context.Context, q db.Queryer, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	return expired(ctx, q, "npm_packages", nsID, cutoff, limit)
}

func expired(ctx context.Context, q db.Queryer, table string, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, db.ExpiredSQL(table), execMode, nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("expired "+table, err)
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: npm %s: %w", what, err)
}
