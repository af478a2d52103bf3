package npm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// The cache of an npm pull-through cache. A package
// (npm_remote_packages) holds the upstream's full packument verbatim
// (npm_remote_metadata_files, kind full: a blob of the namespace, with
// the upstream's ETag, Last-Modified and the time it was last confirmed)
// and the versions whose tarballs were fetched (npm_remote_versions with
// the version's name, version and dist as the upstream listed them, and
// npm_remote_files with the tarball's blob). Dist-tags are not stored
// apart: they are the cached packument's. Writes take the package row
// first (FOR UPDATE for a packument and for eviction, FOR KEY SHARE for a
// tarball), then the blob rows.

// RemotePackument is a cached upstream packument.
type RemotePackument struct {
	PackageID uuid.UUID
	FileID    uuid.UUID
	Blob      store.Blob
	CheckedAt time.Time
	// ETag and LastModified are the upstream's ("" when it sent none).
	ETag, LastModified string
}

// The cached-content lookups of a proxy hit name the namespace's
// partitions: planned over the partitioned parents, they cost more to
// plan than to run, at every hit.
var (
	remotePackumentSQL = partition.Statements(`
SELECT p.id, m.id, m.blob_sha256, m.upstream_checked_at, m.upstream_etag, m.upstream_last_modified
FROM {npm_remote_packages} p
JOIN {npm_remote_metadata_files} m ON m.namespace_id = $1 AND m.npm_remote_package_id = p.id AND m.kind = $4
WHERE p.namespace_id = $1 AND p.npm_remote_repository_id = $2 AND p.name = $3 AND p.soft_deleted_at IS NULL`,
		"npm_remote_packages", "npm_remote_metadata_files")
	remoteTarballSQL = partition.Statements(`
SELECT p.id, v.id, f.blob_sha256
FROM {npm_remote_packages} p
JOIN {npm_remote_versions} v ON v.namespace_id = $1 AND v.npm_remote_package_id = p.id AND v.soft_deleted_at IS NULL
JOIN {npm_remote_files} f ON f.namespace_id = $1 AND f.npm_remote_version_id = v.id AND f.file_name = $4 AND f.soft_deleted_at IS NULL
WHERE p.namespace_id = $1 AND p.npm_remote_repository_id = $2 AND p.name = $3 AND p.soft_deleted_at IS NULL
LIMIT 1`, "npm_remote_packages", "npm_remote_versions", "npm_remote_files")
)

// RemotePackument returns the cached packument of name, nil (and no
// error) when there is none.
func (s *Store) RemotePackument(ctx context.Context, repo *Repository, name string) (*RemotePackument, error) {
	var (
		p        RemotePackument
		sha      []byte
		etag, lm *string
	)
	err := partition.QueryRow(ctx, s.pool, &remotePackumentSQL, repo.NamespaceID, repo.Remote.ID, name, int16(enum.NpmMetadataFull)).
		Scan(&p.PackageID, &p.FileID, &sha, &p.CheckedAt, &etag, &lm)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached packument %s: %w", name, err))
	}
	b, err := s.core.StatBlob(ctx, repo.NamespaceID, [32]byte(sha))
	if err != nil {
		return nil, db.MapErr(err)
	}
	p.Blob = *b
	if etag != nil {
		p.ETag = *etag
	}
	if lm != nil {
		p.LastModified = *lm
	}
	return &p, nil
}

// ReadRemotePackument reads a cached packument's bytes (at most max).
func (s *Store) ReadRemotePackument(ctx context.Context, p *RemotePackument, max int64) ([]byte, error) {
	if p.Blob.Size > max {
		return nil, errs.New(CodeLimit, "cached packument of %d bytes exceeds the %d byte limit", p.Blob.Size, max)
	}
	rc, err := s.core.OpenBlobObject(ctx, &p.Blob, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, p.Blob.Size))
	if _, err := io.Copy(buf, io.LimitReader(rc, max+1)); err != nil {
		return nil, fmt.Errorf("store: read cached packument: %w", err)
	}
	if int64(buf.Len()) != p.Blob.Size {
		return nil, fmt.Errorf("store: cached packument object has %d bytes, %d expected", buf.Len(), p.Blob.Size)
	}
	return buf.Bytes(), nil
}

// scopeOf is the scope column of a package name ("@scope" or NULL).
func scopeOf(name string) *string {
	if strings.HasPrefix(name, "@") {
		if i := strings.IndexByte(name, '/'); i > 0 {
			sc := name[:i]
			return &sc
		}
	}
	return nil
}

// ensureRemotePackage returns the id of the cached package name, creating
// it inside tx, and locks it (lock: "FOR UPDATE" or "FOR KEY SHARE").
func (s *Store) ensureRemotePackage(ctx context.Context, tx pgx.Tx, repo *Repository, name, lock string) (uuid.UUID, error) {
	if _, err := tx.Exec(ctx, `
		INSERT INTO npm_remote_packages (id, namespace_id, npm_remote_repository_id, name, scope)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (namespace_id, npm_remote_repository_id, name) WHERE soft_deleted_at IS NULL DO NOTHING`,
		db.NewID(), repo.NamespaceID, repo.Remote.ID, name, scopeOf(name)); err != nil {
		return uuid.Nil, raceOnForeignKey(err, "cached package")
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `
		SELECT id FROM npm_remote_packages
		WHERE namespace_id = $1 AND npm_remote_repository_id = $2 AND name = $3 AND soft_deleted_at IS NULL
		`+lock, repo.NamespaceID, repo.Remote.ID, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, db.ErrRace // evicted between the two statements
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("store: cached package %s: %w", name, err)
	}
	return id, nil
}

// raceOnForeignKey turns a foreign key violation (a row evicted under the
// write) into a race the retry rule runs again.
func raceOnForeignKey(err error, what string) error {
	if code, _ := db.PgCode(err); code == pgerrcode.ForeignKeyViolation {
		return db.ErrRace
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

func optional(s string) *string {
	if s == "" || len(s) > 255 {
		return nil
	}
	return &s
}

// RemotePackumentPut is a packument the upstream sent (status 200).
type RemotePackumentPut struct {
	Name string
	Body []byte
	// ETag and LastModified are the upstream's headers ("" when absent).
	ETag, LastModified string
	// Listed are the versions the packument lists: cached versions not
	// among them are dropped (the upstream said they are gone).
	Listed map[string]bool
}

// CacheRemotePackument stores a packument the upstream sent and returns
// the cached row. The same bytes only confirm the cached row; other bytes
// replace it (a new row and attachment, the old one detached). Cached
// versions the packument no longer lists are dropped with their tarballs.
// It returns the number of versions dropped.
func (s *Store) CacheRemotePackument(ctx context.Context, repo *Repository, in RemotePackumentPut) (*RemotePackument, int, error) {
	sum := sha256.Sum256(in.Body)
	staged, err := s.core.StageBlob(ctx, store.UploadRef{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID},
		bytes.NewReader(in.Body), store.Expected{SHA256: sum, Size: int64(len(in.Body))})
	if err != nil {
		return nil, 0, err
	}
	var (
		out       *RemotePackument
		dropped   int
		committed bool
	)
	now := s.core.Options().Clock.Now()
	err = db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		committed, dropped = false, 0
		pkgID, err := s.ensureRemotePackage(ctx, tx, repo, in.Name, "FOR UPDATE")
		if err != nil {
			return err
		}
		var (
			oldID  uuid.UUID
			oldSHA []byte
			oldAtt int64
		)
		err = tx.QueryRow(ctx, `
			SELECT id, blob_sha256, blob_storage_attachment_id FROM npm_remote_metadata_files
			WHERE namespace_id = $1 AND npm_remote_package_id = $2 AND kind = $3`,
			repo.NamespaceID, pkgID, int16(enum.NpmMetadataFull)).Scan(&oldID, &oldSHA, &oldAtt)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			oldID = uuid.Nil
		case err != nil:
			return fmt.Errorf("store: cached packument row: %w", err)
		}
		out = &RemotePackument{PackageID: pkgID, CheckedAt: now, ETag: in.ETag, LastModified: in.LastModified}
		if oldID != uuid.Nil && bytes.Equal(oldSHA, sum[:]) {
			out.FileID = oldID
			if _, err := tx.Exec(ctx, `
				UPDATE npm_remote_metadata_files
				SET upstream_checked_at = $3, upstream_etag = $4, upstream_last_modified = $5
				WHERE namespace_id = $1 AND id = $2`, repo.NamespaceID, oldID, now, optional(in.ETag), optional(in.LastModified)); err != nil {
				return fmt.Errorf("store: confirm cached packument: %w", err)
			}
		} else {
			if oldID != uuid.Nil {
				old := []store.Attachment{{ID: oldAtt, SHA256: [32]byte(oldSHA)}}
				if _, err := s.core.PurgeAttached(ctx, tx, repo.NamespaceID, old, func() error {
					_, err := tx.Exec(ctx, `DELETE FROM npm_remote_metadata_files WHERE namespace_id = $1 AND id = $2`, repo.NamespaceID, oldID)
					return wrapErr("replace cached packument", err)
				}); err != nil {
					return err
				}
			}
			out.FileID = db.NewID()
			if _, err := s.core.CommitStaged(ctx, tx, staged, func(u store.StagedUse) error {
				att, err := s.core.AttachStaged(ctx, tx, u)
				if err != nil {
					return err
				}
				_, err = tx.Exec(ctx, `
					INSERT INTO npm_remote_metadata_files (id, namespace_id, npm_remote_package_id, kind, blob_storage_attachment_id,
					                                       blob_sha256, upstream_checked_at, upstream_etag, upstream_last_modified)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
					out.FileID, repo.NamespaceID, pkgID, int16(enum.NpmMetadataFull), att.ID, sum[:], now,
					optional(in.ETag), optional(in.LastModified))
				return wrapErr("insert cached packument", err)
			}); err != nil {
				return err
			}
			committed = true
		}
		if in.Listed != nil {
			gone, err := s.unlistedVersions(ctx, tx, repo.NamespaceID, pkgID, in.Listed)
			if err != nil {
				return err
			}
			if len(gone) > 0 {
				if _, err := s.evictRemoteVersionRows(ctx, tx, repo.NamespaceID, gone); err != nil {
					return err
				}
				dropped = len(gone)
			}
		}
		return nil
	})
	staged.Close(ctx, err == nil && committed)
	if err != nil {
		return nil, 0, err
	}
	b, err := s.core.StatBlob(ctx, repo.NamespaceID, sum)
	if err != nil {
		return nil, 0, db.MapErr(err)
	}
	out.Blob = *b
	return out, dropped, nil
}

func (s *Store) unlistedVersions(ctx context.Context, tx pgx.Tx, nsID, pkgID uuid.UUID, listed map[string]bool) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, version FROM npm_remote_versions
		WHERE namespace_id = $1 AND npm_remote_package_id = $2 AND soft_deleted_at IS NULL`, nsID, pkgID)
	if err != nil {
		return nil, fmt.Errorf("store: cached versions: %w", err)
	}
	var gone []uuid.UUID
	for rows.Next() {
		var (
			id uuid.UUID
			v  string
		)
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: cached versions: %w", err)
		}
		if !listed[v] {
			gone = append(gone, id)
		}
	}
	return gone, wrapErr("cached versions", rows.Err())
}

// ConfirmRemotePackument records that the upstream still has the cached
// packument (a 304): only the check time and the validators change.
func (s *Store) ConfirmRemotePackument(ctx context.Context, repo *Repository, fileID uuid.UUID, etag, lastModified string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE npm_remote_metadata_files
		SET upstream_checked_at = $3, upstream_etag = coalesce($4, upstream_etag),
		    upstream_last_modified = coalesce($5, upstream_last_modified)
		WHERE namespace_id = $1 AND id = $2`, execMode,
		repo.NamespaceID, fileID, s.core.Options().Clock.Now(), optional(etag), optional(lastModified))
	return db.MapErr(wrapErr("confirm cached packument", err))
}

// RemoteTarball is a cached tarball with its blob row.
type RemoteTarball struct {
	PackageID uuid.UUID
	VersionID uuid.UUID
	Blob      store.Blob
}

// RemoteTarball finds the cached tarball fileName of package name
// (CodeFileUnknown when it is not cached).
func (s *Store) RemoteTarball(ctx context.Context, repo *Repository, name, fileName string) (*RemoteTarball, error) {
	var (
		t   RemoteTarball
		sha []byte
	)
	err := partition.QueryRow(ctx, s.pool, &remoteTarballSQL, repo.NamespaceID, repo.Remote.ID, name, fileName).
		Scan(&t.PackageID, &t.VersionID, &sha)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeFileUnknown, "npm tarball unknown: %s", fileName)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached tarball %s: %w", fileName, err))
	}
	b, err := s.core.StatBlob(ctx, repo.NamespaceID, [32]byte(sha))
	if err != nil {
		return nil, db.MapErr(err)
	}
	t.Blob = *b
	return &t, nil
}

// CachedRemoteVersions returns the versions of name whose tarballs are
// cached.
func (s *Store) CachedRemoteVersions(ctx context.Context, repo *Repository, name string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT v.version FROM npm_remote_packages p
		JOIN npm_remote_versions v ON v.namespace_id = $1 AND v.npm_remote_package_id = p.id AND v.soft_deleted_at IS NULL
		WHERE p.namespace_id = $1 AND p.npm_remote_repository_id = $2 AND p.name = $3 AND p.soft_deleted_at IS NULL`,
		execMode, repo.NamespaceID, repo.Remote.ID, name)
	if err != nil {
		return nil, db.MapErr(wrapErr("cached versions", err))
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, db.MapErr(wrapErr("cached versions", err))
	}
	out := make(map[string]bool, len(vs))
	for _, v := range vs {
		out[v] = true
	}
	return out, nil
}

// StageRemoteTarball writes an upstream tarball's bytes, as they arrive,
// to an upload of the remote repository (temporary storage, hashed while
// written); CommitRemoteTarball makes it part of the cache.
func (s *Store) StageRemoteTarball(ctx context.Context, repo *Repository, body io.Reader) (*store.StagedBlob, error) {
	b, err := s.core.StageStream(ctx, store.UploadRef{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID}, body)
	if err == nil {
		b.SealAsync() // synced while the caller checks it and commits
	}
	return b, err
}

// RemoteTarballPut names a verified tarball.
type RemoteTarballPut struct {
	Name, Version, FileName string
	// PackageJSON is what the cache keeps of the version as the upstream
	// listed it (name, version, dist with the upstream's tarball URL).
	PackageJSON []byte
}

// CommitRemoteTarball commits a staged, verified tarball into the cache:
// the package (created when needed), the version and the file with its
// attachment, in one transaction. A tarball cached meanwhile by another
// instance is kept (the staged bytes are discarded). The staged blob is
// closed here.
func (s *Store) CommitRemoteTarball(ctx context.Context, repo *Repository, in RemoteTarballPut, staged *store.StagedBlob) error {
	sha := staged.SHA256()
	committed := false
	now := s.core.Options().Clock.Now()
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		committed = false
		pkgID, err := s.ensureRemotePackage(ctx, tx, repo, in.Name, "FOR KEY SHARE")
		if err != nil {
			return err
		}
		var versionID uuid.UUID
		err = tx.QueryRow(ctx, `
			INSERT INTO npm_remote_versions (id, namespace_id, npm_remote_package_id, version, package_json, size_bytes, last_downloaded_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			ON CONFLICT (namespace_id, npm_remote_package_id, version) WHERE soft_deleted_at IS NULL DO NOTHING
			RETURNING id`, db.NewID(), repo.NamespaceID, pkgID, in.Version, in.PackageJSON, staged.Size(), now).Scan(&versionID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // cached meanwhile
		}
		if err != nil {
			return raceOnForeignKey(err, "insert cached version")
		}
		if _, err := s.core.CommitStaged(ctx, tx, staged, func(u store.StagedUse) error {
			att, err := s.core.AttachStaged(ctx, tx, u)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `
				INSERT INTO npm_remote_files (id, namespace_id, npm_remote_version_id, file_name, blob_storage_attachment_id, blob_sha256, upstream_checked_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				db.NewID(), repo.NamespaceID, versionID, in.FileName, att.ID, sha[:], now)
			return wrapErr("insert cached file", err)
		}); err != nil {
			return err
		}
		committed = true
		return nil
	})
	staged.Close(ctx, err == nil && committed)
	return err
}

// RemoteRequest is one content request of a pull-through cache, for the
// buffered counters: the hit ratio and, for tarballs served, the
// repository's downloads and the last download of the version and its
// package.
type RemoteRequest struct {
	NamespaceID uuid.UUID
	RemoteID    uuid.UUID
	Hit         bool
	// RepositoryID, PackageID and VersionID are set for a cached tarball
	// served.
	RepositoryID, PackageID, VersionID uuid.UUID
	At                                 time.Time
}

// RecordRemoteRequests appends buffered counter rows for content requests
// of npm pull-through caches in one statement; the periodic fold merges
// them.
func (s *Store) RecordRemoteRequests(ctx context.Context, reqs []RemoteRequest) error {
	var (
		nss     []uuid.UUID
		targets []int16
		tids    []uuid.UUID
		fields  []int16
		deltas  []*int64
		ats     []*time.Time
	)
	one := int64(1)
	for _, r := range reqs {
		field := enum.CounterFieldCacheMisses
		if r.Hit {
			field = enum.CounterFieldCacheHits
		}
		nss = append(nss, r.NamespaceID)
		targets = append(targets, int16(enum.CounterTargetNpmRemoteRepository))
		tids = append(tids, r.RemoteID)
		fields = append(fields, int16(field))
		deltas = append(deltas, &one)
		ats = append(ats, nil)
		if r.VersionID != uuid.Nil {
			at := r.At
			nss = append(nss, r.NamespaceID, r.NamespaceID, r.NamespaceID)
			targets = append(targets, int16(enum.CounterTargetRepository), int16(enum.CounterTargetNpmRemotePackage),
				int16(enum.CounterTargetNpmRemoteVersion))
			tids = append(tids, r.RepositoryID, r.PackageID, r.VersionID)
			fields = append(fields, int16(enum.CounterFieldDownloadsCount), int16(enum.CounterFieldLastDownloadedAt),
				int16(enum.CounterFieldLastDownloadedAt))
			deltas = append(deltas, &one, nil, nil)
			ats = append(ats, nil, &at, &at)
		}
	}
	if len(nss) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::smallint[], $4::uuid[], $5::smallint[], $6::bigint[], $7::timestamptz[])`, execMode,
		db.NewIDs(len(nss)), nss, targets, tids, fields, deltas, ats)
	return db.MapErr(wrapErr("npm remote requests", err))
}

// evictRemoteVersionRows deletes cached versions and their files inside
// tx (the package rows locked by the caller), detaching the tarballs.
func (s *Store) evictRemoteVersionRows(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, versionIDs []uuid.UUID) (store.Released, error) {
	atts, err := store.CollectAttachments(tx.Query(ctx, `
		SELECT blob_storage_attachment_id, blob_sha256 FROM npm_remote_files
		WHERE namespace_id = $1 AND npm_remote_version_id = ANY($2::uuid[])`, nsID, versionIDs))
	if err != nil {
		return store.Released{}, wrapErr("files of cached versions", err)
	}
	return s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		for _, q := range []string{
			`DELETE FROM npm_remote_tags WHERE namespace_id = $1 AND npm_remote_version_id = ANY($2::uuid[])`,
			`DELETE FROM npm_remote_files WHERE namespace_id = $1 AND npm_remote_version_id = ANY($2::uuid[])`,
			`DELETE FROM npm_remote_versions WHERE namespace_id = $1 AND id = ANY($2::uuid[])`,
		} {
			if _, err := tx.Exec(ctx, q, nsID, versionIDs); err != nil {
				return wrapErr("evict cached versions", err)
			}
		}
		return nil
	})
}

// EvictRemotePackages evicts cached packages with everything they hold
// (packument, versions, tarballs), inside the caller's transaction: the
// package rows are locked FOR UPDATE first, then the blob rows, then the
// deletes, children before parents. Ids that no longer exist are skipped.
func (s *Store) EvictRemotePackages(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, store.Released, error) {
	rows, err := tx.Query(ctx, `
		SELECT id FROM npm_remote_packages WHERE namespace_id = $1 AND id = ANY($2::uuid[]) ORDER BY id FOR UPDATE`, nsID, ids)
	pkgs, err := db.CollectIDs(rows, err)
	if err != nil || len(pkgs) == 0 {
		return nil, store.Released{}, wrapErr("lock cached packages", err)
	}
	atts, err := store.CollectAttachments(tx.Query(ctx, `
		SELECT f.blob_storage_attachment_id, f.blob_sha256 FROM npm_remote_files f
		JOIN npm_remote_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_remote_version_id
		WHERE f.namespace_id = $1 AND v.namespace_id = $1 AND v.npm_remote_package_id = ANY($2::uuid[])
		UNION ALL
		SELECT blob_storage_attachment_id, blob_sha256 FROM npm_remote_metadata_files
		WHERE namespace_id = $1 AND npm_remote_package_id = ANY($2::uuid[])`, nsID, pkgs))
	if err != nil {
		return nil, store.Released{}, wrapErr("rows of cached packages", err)
	}
	rel, err := s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		for _, q := range []string{
			`DELETE FROM npm_remote_tags WHERE namespace_id = $1 AND npm_remote_package_id = ANY($2::uuid[])`,
			`DELETE FROM npm_remote_files f USING npm_remote_versions v
			 WHERE f.namespace_id = $1 AND v.namespace_id = $1 AND v.id = f.npm_remote_version_id AND v.npm_remote_package_id = ANY($2::uuid[])`,
			`DELETE FROM npm_remote_versions WHERE namespace_id = $1 AND npm_remote_package_id = ANY($2::uuid[])`,
			`DELETE FROM npm_remote_metadata_files WHERE namespace_id = $1 AND npm_remote_package_id = ANY($2::uuid[])`,
			`DELETE FROM npm_remote_packages WHERE namespace_id = $1 AND id = ANY($2::uuid[])`,
		} {
			if _, err := tx.Exec(ctx, q, nsID, pkgs); err != nil {
				return wrapErr("evict cached packages", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, store.Released{}, err
	}
	return pkgs, rel, nil
}

// RemotePackagesOfRepository lists up to limit cached package ids of a
// repository (the repository purge empties a remote package by package).
func (s *Store) RemotePackagesOfRepository(ctx context.Context, q db.Queryer, nsID, repositoryID uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT p.id FROM npm_remote_packages p
		JOIN npm_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_remote_repository_id
		WHERE p.namespace_id = $1 AND r.namespace_id = $1 AND r.repository_id = $2
		ORDER BY p.id LIMIT $3`, nsID, repositoryID, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrapErr("cached packages of repository", err)
}

// StaleRemoteVersions lists up to limit cached versions of the
// namespace's npm remotes not downloaded since cutoff.
func (s *Store) StaleRemoteVersions(ctx context.Context, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM npm_remote_versions
		WHERE namespace_id = $1 AND soft_deleted_at IS NULL AND (last_downloaded_at IS NULL OR last_downloaded_at < $2)
		ORDER BY last_downloaded_at NULLS FIRST LIMIT $3`, nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, db.MapErr(wrapErr("stale cached versions", err))
}

// EvictStaleRemoteVersions evicts, batch by batch (at most maxBatches),
// the cached npm versions of a namespace not downloaded since cutoff:
// their rows go and their tarballs are detached; the packuments stay (a
// later install fetches the tarball again). Each batch is one transaction
// that locks the packages, then re-checks the versions' last download.
func (s *Store) EvictStaleRemoteVersions(ctx context.Context, nsID uuid.UUID, cutoff time.Time, batch, maxBatches int) (int, store.Released, error) {
	var (
		total int
		rel   store.Released
	)
	for range maxBatches {
		ids, err := s.StaleRemoteVersions(ctx, nsID, cutoff, batch)
		if err != nil || len(ids) == 0 {
			return total, rel, err
		}
		var n int
		var r store.Released
		err = db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `
				SELECT 1 FROM npm_remote_packages p
				WHERE p.namespace_id = $1 AND p.id IN (SELECT npm_remote_package_id FROM npm_remote_versions
				                                      WHERE namespace_id = $1 AND id = ANY($2::uuid[]))
				ORDER BY p.id FOR UPDATE`, nsID, ids); err != nil {
				return wrapErr("lock cached packages", err)
			}
			rows, err := tx.Query(ctx, `
				SELECT id FROM npm_remote_versions
				WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND (last_downloaded_at IS NULL OR last_downloaded_at < $3)`,
				nsID, ids, cutoff)
			still, err := db.CollectIDs(rows, err)
			if err != nil {
				return wrapErr("stale cached versions", err)
			}
			n = len(still)
			if n == 0 {
				return nil
			}
			r, err = s.evictRemoteVersionRows(ctx, tx, nsID, still)
			return err
		})
		if err != nil {
			return total, rel, err
		}
		total += n
		rel = rel.Add(r)
		if len(ids) < batch {
			break
		}
	}
	return total, rel, nil
}

// RemotePackageInfo is a cached package as the management API lists it.
type RemotePackageInfo struct {
	ID               uuid.UUID
	Name             string
	CachedVersions   int
	SizeBytes        int64
	LastDownloadedAt *time.Time
	CheckedAt        *time.Time
}

// RemotePackagesOfRemote lists the first limit cached packages of an npm
// remote by name, with their cached versions, tarball bytes, last
// download and packument check.
func (s *Store) RemotePackagesOfRemote(ctx context.Context, nsID, remoteID uuid.UUID, limit int) ([]RemotePackageInfo, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, p.name,
		       (SELECT count(*) FROM npm_remote_versions v WHERE v.namespace_id = $1 AND v.npm_remote_package_id = p.id AND v.soft_deleted_at IS NULL),
		       (SELECT coalesce(sum(v.size_bytes), 0)::bigint FROM npm_remote_versions v
		        WHERE v.namespace_id = $1 AND v.npm_remote_package_id = p.id AND v.soft_deleted_at IS NULL),
		       (SELECT max(v.last_downloaded_at) FROM npm_remote_versions v
		        WHERE v.namespace_id = $1 AND v.npm_remote_package_id = p.id AND v.soft_deleted_at IS NULL),
		       (SELECT m.upstream_checked_at FROM npm_remote_metadata_files m
		        WHERE m.namespace_id = $1 AND m.npm_remote_package_id = p.id AND m.kind = $3)
		FROM npm_remote_packages p
		WHERE p.namespace_id = $1 AND p.npm_remote_repository_id = $2 AND p.soft_deleted_at IS NULL
		ORDER BY p.name LIMIT $4`, nsID, remoteID, int16(enum.NpmMetadataFull), limit)
	if err != nil {
		return nil, db.MapErr(wrapErr("cached packages", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RemotePackageInfo, error) {
		var i RemotePackageInfo
		var n int64
		err := r.Scan(&i.ID, &i.Name, &n, &i.SizeBytes, &i.LastDownloadedAt, &i.CheckedAt)
		i.CachedVersions = int(n)
		return i, err
	})
	return out, db.MapErr(wrapErr("cached packages", err))
}

// InvalidateRemoteMetadata makes the cached packuments of an npm remote
// stale (the package name, or every package when name is ""): their next
// request asks the upstream. It returns how many were invalidated;
// CodePackageUnknown when a named package has no cached packument.
func (s *Store) InvalidateRemoteMetadata(ctx context.Context, ref store.RepositoryRef, name string) (int, error) {
	ns, repo, err := s.core.RepositoryByName(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return 0, err
	}
	var remoteID uuid.UUID
	err = s.pool.QueryRow(ctx, `SELECT id FROM npm_remote_repositories WHERE namespace_id = $1 AND repository_id = $2`,
		ns.ID, repo.ID).Scan(&remoteID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errs.New(store.CodeInvalidInput, "repository %s is not an npm remote repository", ref)
	}
	if err != nil {
		return 0, db.MapErr(wrapErr("invalidate cached packuments", err))
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE npm_remote_metadata_files m SET upstream_checked_at = 'epoch'
		FROM npm_remote_packages p
		WHERE m.namespace_id = $1 AND p.namespace_id = $1 AND p.id = m.npm_remote_package_id
		  AND p.npm_remote_repository_id = $2 AND p.soft_deleted_at IS NULL AND ($3 = '' OR p.name = $3)`,
		ns.ID, remoteID, name)
	if err != nil {
		return 0, db.MapErr(wrapErr("invalidate cached packuments", err))
	}
	if name != "" && tag.RowsAffected() == 0 {
		return 0, errs.New(CodePackageUnknown, "npm package %s has no cached packument in %s", name, ref)
	}
	return int(tag.RowsAffected()), nil
}
