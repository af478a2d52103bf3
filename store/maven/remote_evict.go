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

// Eviction of a Maven proxy's cache. Cached rows are never soft-deleted:
// evicting a version hard-deletes its files and its row and detaches their
// blobs in the same transaction (store.PurgeAttached), so a blob no other
// row uses becomes a GC candidate like any other; the bytes go only
// through gc:cleanup. A package whose last version goes is evicted with
// its package-level maven-metadata.xml.

// staleVersionSQL is the eviction rule: not downloaded since the cutoff
// (a version is created with its first download as last_downloaded_at).
const staleVersionSQL = `coalesce(v.last_downloaded_at, v.created_at) < $2`

// StaleRemoteVersions lists up to limit cached versions of the
// namespace's Maven proxies not downloaded since cutoff, least recently
// downloaded first (maven_remote_versions_last_downloaded_at_idx).
func (s *Store) StaleRemoteVersions(ctx context.Context, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT v.id FROM maven_remote_versions v
		WHERE v.namespace_id = $1 AND v.soft_deleted_at IS NULL AND `+staleVersionSQL+`
		ORDER BY v.last_downloaded_at NULLS FIRST LIMIT $3`, nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("stale cached versions", err)
}

// EvictRemoteVersions hard-deletes cached versions by id with their files
// and detaches their attachments, inside the caller's transaction: the
// packages are locked first (FOR NO KEY UPDATE, in id order: the lock a
// cache fill takes), then the versions are checked again with recheck
// (when set: a download recorded since the listing keeps a version), then
// the blob rows, then the deletes. A package left without versions goes
// too, with its package-level files. Ids that no longer exist are skipped.
func (s *Store) EvictRemoteVersions(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, recheck *time.Time) (int, store.Released, error) {
	rows, err := tx.Query(ctx, `
		SELECT p.id FROM maven_remote_packages p
		WHERE p.namespace_id = $1 AND p.id IN (
			SELECT maven_remote_package_id FROM maven_remote_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[]))
		ORDER BY p.id FOR NO KEY UPDATE`, nsID, ids)
	pkgs, err := db.CollectIDs(rows, err)
	if err != nil || len(pkgs) == 0 {
		return 0, store.Released{}, wrapErr("lock cached packages", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT v.id FROM maven_remote_versions v
		WHERE v.namespace_id = $1 AND v.id = ANY($3::uuid[]) AND v.soft_deleted_at IS NULL
		  AND ($2::timestamptz IS NULL OR `+staleVersionSQL+`)`, nsID, recheck, ids)
	versions, err := db.CollectIDs(rows, err)
	if err != nil || len(versions) == 0 {
		return 0, store.Released{}, wrapErr("recheck cached versions", err)
	}
	// Packages that keep no version once these go.
	rows, err = tx.Query(ctx, `
		SELECT p FROM unnest($2::uuid[]) AS p
		WHERE NOT EXISTS (SELECT 1 FROM maven_remote_versions v
			WHERE v.namespace_id = $1 AND v.maven_remote_package_id = p AND NOT (v.id = ANY($3::uuid[])))`, nsID, pkgs, versions)
	emptied, err := db.CollectIDs(rows, err)
	if err != nil {
		return 0, store.Released{}, wrapErr("emptied cached packages", err)
	}
	frows, err := tx.Query(ctx, `
		SELECT blob_storage_attachment_id, blob_sha256 FROM maven_remote_files
		WHERE namespace_id = $1 AND maven_remote_version_id = ANY($2::uuid[])
		UNION ALL
		SELECT blob_storage_attachment_id, blob_sha256 FROM maven_remote_files
		WHERE namespace_id = $1 AND maven_remote_version_id IS NULL AND maven_remote_package_id = ANY($3::uuid[])`,
		nsID, versions, emptied)
	if err != nil {
		return 0, store.Released{}, db.MapErr(fmt.Errorf("store: files of cached versions: %w", err))
	}
	atts, err := pgx.CollectRows(frows, func(r pgx.CollectableRow) (store.Attachment, error) {
		var (
			a   store.Attachment
			sha []byte
		)
		err := r.Scan(&a.ID, &sha)
		a.SHA256 = [32]byte(sha)
		return a, err
	})
	if err != nil {
		return 0, store.Released{}, db.MapErr(fmt.Errorf("store: files of cached versions: %w", err))
	}
	rel, err := s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		for _, q := range []struct {
			sql string
			arg []uuid.UUID
		}{
			{`DELETE FROM maven_remote_files WHERE namespace_id = $1 AND maven_remote_version_id = ANY($2::uuid[])`, versions},
			{`DELETE FROM maven_remote_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[])`, versions},
			{`DELETE FROM maven_remote_files WHERE namespace_id = $1 AND maven_remote_version_id IS NULL AND maven_remote_package_id = ANY($2::uuid[])`, emptied},
			{`DELETE FROM maven_remote_packages WHERE namespace_id = $1 AND id = ANY($2::uuid[])`, emptied},
		} {
			if _, err := tx.Exec(ctx, q.sql, nsID, q.arg); err != nil {
				return db.MapErr(fmt.Errorf("store: evict cached versions: %w", err))
			}
		}
		return nil
	})
	if err != nil {
		return 0, store.Released{}, err
	}
	return len(versions), rel, nil
}

// EvictStaleRemoteVersions evicts the namespace's cached versions not
// downloaded since cutoff, in transactions of up to batch versions, until
// none is left or maxBatches batches ran (0: no bound).
func (s *Store) EvictStaleRemoteVersions(ctx context.Context, nsID uuid.UUID, cutoff time.Time, batch, maxBatches int) (int, store.Released, error) {
	var (
		total int
		rel   store.Released
	)
	if batch <= 0 {
		batch = 50
	}
	for n := 0; maxBatches <= 0 || n < maxBatches; n++ {
		ids, err := s.StaleRemoteVersions(ctx, nsID, cutoff, batch)
		if err != nil || len(ids) == 0 {
			return total, rel, err
		}
		var evicted int
		err = s.core.WithTx(ctx, func(tx pgx.Tx) error {
			var r store.Released
			var err error
			evicted, r, err = s.EvictRemoteVersions(ctx, tx, nsID, ids, &cutoff)
			if err == nil {
				rel = rel.Add(r)
			}
			return err
		})
		if err != nil {
			return total, rel, err
		}
		total += evicted
		if len(ids) < batch || evicted == 0 {
			return total, rel, nil
		}
	}
	return total, rel, nil
}
