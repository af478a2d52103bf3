package maven

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Hard delete of Maven rows from the trash (docs/schema.md, "Soft delete,
// trash and purge"), shared by the expiry sweep and the purge mutations.
// Each function runs in the caller's transaction in the package's lock
// order: package rows first (FOR NO KEY UPDATE, by id), then version rows,
// then the blob rows (store.PurgeAttached); the deletes run children
// before parents (files, versions, packages), one statement each, and the
// attachments are detached in the same transaction. A trashed version's
// files are already out of maven-metadata.xml (the soft delete refreshed
// it), so a purge leaves the metadata alone. Rows restored (or deleted
// again after cutoff) since the caller chose them no longer match and are
// left alone.

// Purge is what a purge did.
type Purge struct {
	Versions []uuid.UUID // versions hard-deleted
	Packages []uuid.UUID // packages hard-deleted
	Files    []uuid.UUID // files hard-deleted on their own (PurgeFiles)
	Released store.Released
}

// PurgeFiles hard-deletes files soft-deleted on their own by id (the old
// SNAPSHOT builds a lifecycle policy removed from a live version), deleted
// at or before cutoff when not nil, and detaches their attachments. Files
// of a trashed version or package go with it instead, so they are skipped.
// The version's size_bytes, which counts trashed files until they are
// purged, loses their sizes. maven-metadata.xml already left them out
// when they were soft-deleted.
func (s *Store) PurgeFiles(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*Purge, error) {
	rows, err := tx.Query(ctx, `
		SELECT p.id FROM maven_packages p
		WHERE p.namespace_id = $1 AND p.soft_deleted_at IS NULL
		  AND p.id IN (SELECT maven_package_id FROM maven_files WHERE namespace_id = $1 AND id = ANY($2::uuid[]))
		ORDER BY p.id
		FOR NO KEY UPDATE OF p`, nsID, ids)
	if _, err := db.CollectIDs(rows, err); err != nil {
		return nil, wrapErr("lock packages of files to purge", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT f.id, f.blob_storage_attachment_id, f.blob_sha256, f.maven_version_id, b.size
		FROM maven_files f
		JOIN maven_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_package_id
		JOIN blob_storage_blobs b ON b.namespace_id = f.namespace_id AND b.sha256 = f.blob_sha256
		WHERE f.namespace_id = $1 AND f.id = ANY($2::uuid[]) AND f.soft_deleted_at IS NOT NULL
		  AND ($3::timestamptz IS NULL OR f.soft_deleted_at <= $3) AND p.soft_deleted_at IS NULL
		  AND NOT EXISTS (SELECT 1 FROM maven_versions v WHERE v.namespace_id = f.namespace_id
		                  AND v.id = f.maven_version_id AND v.soft_deleted_at IS NOT NULL)
		ORDER BY f.id
		FOR UPDATE OF f`, nsID, ids, cutoff)
	if err != nil {
		return nil, wrapErr("lock files to purge", db.MapErr(err))
	}
	var (
		files []uuid.UUID
		atts  []store.Attachment
		sizes = map[uuid.UUID]int64{}
	)
	for rows.Next() {
		var (
			id        uuid.UUID
			a         store.Attachment
			sha       []byte
			versionID *uuid.UUID
			size      int64
		)
		if err := rows.Scan(&id, &a.ID, &sha, &versionID, &size); err != nil {
			rows.Close()
			return nil, wrapErr("lock files to purge", err)
		}
		a.SHA256 = [32]byte(sha)
		files, atts = append(files, id), append(atts, a)
		if versionID != nil {
			sizes[*versionID] += size
		}
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("lock files to purge", db.MapErr(err))
	}
	if len(files) == 0 {
		return &Purge{}, nil
	}
	rel, err := s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		return execEach(ctx, tx, "purge Maven files", nsID, files,
			`DELETE FROM maven_files WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	})
	if err != nil {
		return nil, err
	}
	for versionID, size := range sizes {
		if err := addVersionSize(ctx, tx, nsID, &versionID, -size); err != nil {
			return nil, err
		}
	}
	return &Purge{Files: files, Released: rel}, nil
}

// PurgeVersions hard-deletes trashed versions by id with their files.
// The package keeps its row (a package in the trash is purged on its own).
func (s *Store) PurgeVersions(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*Purge, error) {
	rows, err := tx.Query(ctx, `
		SELECT p.id FROM maven_packages p
		WHERE p.namespace_id = $1 AND p.id IN (SELECT maven_package_id FROM maven_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[]))
		ORDER BY p.id
		FOR NO KEY UPDATE OF p`, nsID, ids)
	if _, err := db.CollectIDs(rows, err); err != nil {
		return nil, wrapErr("lock packages of versions to purge", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT id FROM maven_versions
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND soft_deleted_at IS NOT NULL
		  AND ($3::timestamptz IS NULL OR soft_deleted_at <= $3)
		ORDER BY id
		FOR UPDATE`, nsID, ids, cutoff)
	versions, err := db.CollectIDs(rows, err)
	if err != nil || len(versions) == 0 {
		return &Purge{}, wrapErr("lock versions to purge", err)
	}
	rel, err := s.purgeVersionRows(ctx, tx, nsID, versions)
	if err != nil {
		return nil, err
	}
	return &Purge{Versions: versions, Released: rel}, nil
}

// PurgePackages hard-deletes packages by id with all their versions and
// files (package-level files included). trashed limits it to packages in
// the trash (deleted at or before cutoff when not nil); otherwise the
// caller has locked the repository (a repository purge). Ids that do not
// qualify are skipped.
func (s *Store) PurgePackages(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, trashed bool, cutoff *time.Time) (*Purge, error) {
	rows, err := tx.Query(ctx, `
		SELECT id FROM maven_packages
		WHERE namespace_id = $1 AND id = ANY($2::uuid[])
		  AND (NOT $3 OR soft_deleted_at IS NOT NULL) AND ($4::timestamptz IS NULL OR soft_deleted_at <= $4)
		ORDER BY id
		FOR NO KEY UPDATE`, nsID, ids, trashed, cutoff)
	pkgs, err := db.CollectIDs(rows, err)
	if err != nil || len(pkgs) == 0 {
		return &Purge{}, wrapErr("lock packages to purge", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT id FROM maven_versions WHERE namespace_id = $1 AND maven_package_id = ANY($2::uuid[])
		ORDER BY id FOR UPDATE`, nsID, pkgs)
	versions, err := db.CollectIDs(rows, err)
	if err != nil {
		return nil, wrapErr("lock versions of packages to purge", err)
	}
	atts, err := attachmentsOf(ctx, tx, `SELECT blob_storage_attachment_id, blob_sha256 FROM maven_files
		WHERE namespace_id = $1 AND maven_package_id = ANY($2::uuid[]) ORDER BY id`, nsID, pkgs)
	if err != nil {
		return nil, wrapErr("files of packages to purge", err)
	}
	rel, err := s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		if err := execEach(ctx, tx, "purge Maven packages", nsID, pkgs,
			`DELETE FROM maven_files WHERE namespace_id = $1 AND maven_package_id = ANY($2::uuid[])`,
			`DELETE FROM maven_versions WHERE namespace_id = $1 AND maven_package_id = ANY($2::uuid[])`); err != nil {
			return err
		}
		return execEach(ctx, tx, "purge Maven packages", nsID, pkgs,
			`DELETE FROM maven_packages WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	})
	if err != nil {
		return nil, err
	}
	return &Purge{Versions: versions, Packages: pkgs, Released: rel}, nil
}

// purgeVersionRows deletes locked versions with their files and detaches
// the files' attachments.
func (s *Store) purgeVersionRows(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, versions []uuid.UUID) (store.Released, error) {
	atts, err := attachmentsOf(ctx, tx, `SELECT blob_storage_attachment_id, blob_sha256 FROM maven_files
		WHERE namespace_id = $1 AND maven_version_id = ANY($2::uuid[]) ORDER BY id`, nsID, versions)
	if err != nil {
		return store.Released{}, wrapErr("files of versions to purge", err)
	}
	return s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		return execEach(ctx, tx, "purge Maven versions", nsID, versions,
			`DELETE FROM maven_files WHERE namespace_id = $1 AND maven_version_id = ANY($2::uuid[])`,
			`DELETE FROM maven_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	})
}

func attachmentsOf(ctx context.Context, tx pgx.Tx, sql string, nsID uuid.UUID, ids []uuid.UUID) ([]store.Attachment, error) {
	return store.CollectAttachments(tx.Query(ctx, sql, nsID, ids))
}

func execEach(ctx context.Context, tx pgx.Tx, what string, nsID uuid.UUID, ids []uuid.UUID, stmts ...string) error {
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q, nsID, ids); err != nil {
			return wrapErr(what, err)
		}
	}
	return nil
}

// PackagesOfRepository lists up to limit package ids of a repository, any
// state (the repository purge empties it package by package).
func (s *Store) PackagesOfRepository(ctx context.Context, q db.Queryer, nsID, repositoryID uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT p.id FROM maven_packages p
		JOIN maven_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.maven_repository_id
		WHERE p.namespace_id = $1 AND r.namespace_id = $1 AND r.repository_id = $2
		ORDER BY p.id LIMIT $3`, nsID, repositoryID, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("Maven packages of repository", err)
}

// ExpiredVersions and ExpiredPackages list up to limit ids of trashed rows
// deleted at or before cutoff, oldest first (a range scan of the table's
// trash index).
func (s *Store) ExpiredVersions(ctx context.Context, q db.Queryer, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	return expired(ctx, q, "maven_versions", nsID, cutoff, limit)
}

// ExpiredPackages: see ExpiredVersions.
func (s *Store) ExpiredPackages(ctx context.Context, q db.Queryer, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	return expired(ctx, q, "maven_packages", nsID, cutoff, limit)
}

// ExpiredFiles lists up to limit files soft-deleted on their own (their
// version and package live) at or before cutoff, oldest first, through the
// files' trash index.
func (s *Store) ExpiredFiles(ctx context.Context, q db.Queryer, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `SELECT f.id FROM maven_files f
		WHERE f.namespace_id = $1 AND f.soft_deleted_at IS NOT NULL AND f.soft_deleted_at <= $2
		  AND NOT EXISTS (SELECT 1 FROM maven_versions v WHERE v.namespace_id = f.namespace_id
		                  AND v.id = f.maven_version_id AND v.soft_deleted_at IS NOT NULL)
		  AND NOT EXISTS (SELECT 1 FROM maven_packages p WHERE p.namespace_id = f.namespace_id
		                  AND p.id = f.maven_package_id AND p.soft_deleted_at IS NOT NULL)
		ORDER BY f.soft_deleted_at, f.id LIMIT $3`, nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("expired files", err)
}

func expired(ctx context.Context, q db.Queryer, table string, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, db.ExpiredSQL(table), nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("expired "+table, err)
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: maven %s: %w", what, err)
}
