package maven

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/blobsql"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// The cache of a Maven proxy. A cached file is a maven_remote_files row
// under its package (maven-metadata.xml next to the versions) or under
// its version (every other file, and a SNAPSHOT version's
// maven-metadata.xml), with its own blob attachment and the four
// checksums computed while its bytes arrived. Writes take the package row
// first (FOR NO KEY UPDATE, which serializes the writers of one package
// and makes an eviction wait), then the file row, then blob rows in
// ascending digest order.

// RemoteFile is a cached file with its blob row and what the upstream
// said about it.
type RemoteFile struct {
	File
	// CheckedAt is when the upstream last sent or confirmed the file.
	CheckedAt time.Time
	// ETag and LastModified are the upstream's validators ("" and nil
	// when it sent none).
	ETag         string
	LastModified *time.Time
}

// RemoteFileMeta is what the upstream said about a file it sent.
type RemoteFileMeta struct {
	ETag         string
	LastModified *time.Time
}

// remoteVersionFileSQL and remotePackageFileSQL find a cached file on the
// namespace's partitions: a proxy hit, like a hosted download, should not
// plan its statement over the partitioned parents at every call.
var remoteVersionFileSQL = partition.Statements(`
SELECT f.id, f.maven_remote_package_id, f.maven_remote_version_id, f.file_name, f.blob_sha256, f.sha1, f.md5, f.sha512,
       f.upstream_checked_at, f.upstream_etag, f.upstream_last_modified
FROM {maven_remote_packages} p
JOIN {maven_remote_versions} v
  ON v.namespace_id = $1 AND v.maven_remote_package_id = p.id AND v.version = $5 AND v.soft_deleted_at IS NULL
JOIN {maven_remote_files} f
  ON f.namespace_id = $1 AND f.maven_remote_version_id = v.id AND f.file_name = $6 AND f.soft_deleted_at IS NULL
WHERE p.namespace_id = $1 AND p.maven_remote_repository_id = $2 AND p.group_id = $3 AND p.artifact_id = $4
  AND p.soft_deleted_at IS NULL`, "maven_remote_packages", "maven_remote_versions", "maven_remote_files")

var remotePackageFileSQL = partition.Statements(`
SELECT f.id, f.maven_remote_package_id, f.maven_remote_version_id, f.file_name, f.blob_sha256, f.sha1, f.md5, f.sha512,
       f.upstream_checked_at, f.upstream_etag, f.upstream_last_modified
FROM {maven_remote_packages} p
JOIN {maven_remote_files} f
  ON f.namespace_id = $1 AND f.maven_remote_package_id = p.id AND f.maven_remote_version_id IS NULL
 AND f.file_name = $5 AND f.soft_deleted_at IS NULL
WHERE p.namespace_id = $1 AND p.maven_remote_repository_id = $2 AND p.group_id = $3 AND p.artifact_id = $4
  AND p.soft_deleted_at IS NULL`, "maven_remote_packages", "maven_remote_files")

// RemoteFile returns a cached file of a Maven proxy with its blob row;
// nil (and no error) when it is not cached.
func (s *Store) RemoteFile(ctx context.Context, t *Target, ref FileRef) (*RemoteFile, error) {
	if t.Remote == nil {
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository %s/%s is not a remote repository", t.NamespaceSlug, t.RepositoryName)
	}
	var row pgx.Row
	if ref.Version == "" {
		row = partition.QueryRow(ctx, s.pool, &remotePackageFileSQL, t.NamespaceID, t.Remote.ID, ref.GroupID, ref.ArtifactID, ref.FileName)
	} else {
		row = partition.QueryRow(ctx, s.pool, &remoteVersionFileSQL, t.NamespaceID, t.Remote.ID, ref.GroupID, ref.ArtifactID, ref.Version, ref.FileName)
	}
	var (
		rf   RemoteFile
		fr   fileRow
		etag *string
	)
	err := row.Scan(append(fr.dest(), &rf.CheckedAt, &etag, &rf.LastModified)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached maven file %s: %w", ref, err))
	}
	f, err := fr.file()
	if err != nil {
		return nil, err
	}
	rf.File = *f
	if etag != nil {
		rf.ETag = *etag
	}
	b, err := s.core.StatBlob(ctx, t.NamespaceID, f.Checksums.SHA256)
	if store.HasCode(err, store.CodeBlobUnknown) {
		return nil, nil // replaced or evicted after the row was read
	}
	if err != nil {
		return nil, db.MapErr(err)
	}
	rf.Blob = *b
	return &rf, nil
}

// RemoteStaged is an upstream file's bytes written to temporary storage
// with the checksums computed on the way, waiting for CommitRemoteFile.
type RemoteStaged struct {
	blob *store.StagedBlob
	sums fileSums
}

// Size is the staged byte count.
func (r *RemoteStaged) Size() int64 { return r.sums.Size }

// Checksums are the staged bytes' digests.
func (r *RemoteStaged) Checksums() Checksums { return r.sums.checksums() }

// Discard removes the staged bytes (the upstream's file turned out wrong,
// or the commit failed). Safe after a commit (then it does nothing).
func (r *RemoteStaged) Discard(ctx context.Context) { r.blob.Close(ctx, false) }

// StageRemoteFile writes an upstream file's bytes, as they arrive, to an
// upload of the target's repository, computing md5, sha1, sha256 and
// sha512 on the way. A failed read or write leaves nothing.
func (s *Store) StageRemoteFile(ctx context.Context, t *Target, body io.Reader) (*RemoteStaged, error) {
	h := newHashPipe()
	b, err := s.core.StageStream(ctx, t.UploadRef(uuid.Nil), io.TeeReader(body, h))
	sums := h.sums()
	if err != nil {
		return nil, err
	}
	if sums.SHA256 != b.SHA256() || sums.Size != b.Size() {
		b.Close(ctx, false)
		return nil, fmt.Errorf("store: staged maven file: hashed %d bytes, stored %d", sums.Size, b.Size())
	}
	b.SetSHA1(sums.SHA1)
	b.SealAsync() // synced while the caller checks it and commits
	return &RemoteStaged{blob: b, sums: sums}, nil
}

// ensureRemotePackage returns the id of the cached package, creating it,
// and holds it FOR NO KEY UPDATE (the lock an eviction waits on).
func ensureRemotePackage(ctx context.Context, tx pgx.Tx, t *Target, groupID, artifactID string, now time.Time) (uuid.UUID, error) {
	if _, err := tx.Exec(ctx, `
		INSERT INTO maven_remote_packages (id, namespace_id, maven_remote_repository_id, group_id, artifact_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (namespace_id, maven_remote_repository_id, group_id, artifact_id) WHERE soft_deleted_at IS NULL DO NOTHING`,
		db.NewID(), t.NamespaceID, t.Remote.ID, groupID, artifactID, now); err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: cached maven package %s:%s: %w", groupID, artifactID, err))
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `
		SELECT id FROM maven_remote_packages
		WHERE namespace_id = $1 AND maven_remote_repository_id = $2 AND group_id = $3 AND artifact_id = $4
		  AND soft_deleted_at IS NULL
		FOR NO KEY UPDATE`, t.NamespaceID, t.Remote.ID, groupID, artifactID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, db.ErrRace // evicted between the two statements
	}
	if err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: cached maven package %s:%s: %w", groupID, artifactID, err))
	}
	return id, nil
}

// ensureRemoteVersion returns the id of the cached version, creating it
// (the caller holds the package lock).
func ensureRemoteVersion(ctx context.Context, tx pgx.Tx, nsID, pkgID uuid.UUID, version string, now time.Time) (uuid.UUID, error) {
	if _, err := tx.Exec(ctx, `
		INSERT INTO maven_remote_versions (id, namespace_id, maven_remote_package_id, version, created_at, last_downloaded_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (namespace_id, maven_remote_package_id, version) WHERE soft_deleted_at IS NULL DO NOTHING`,
		db.NewID(), nsID, pkgID, version, now); err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: cached maven version %s: %w", version, err))
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `
		SELECT id FROM maven_remote_versions
		WHERE namespace_id = $1 AND maven_remote_package_id = $2 AND version = $3 AND soft_deleted_at IS NULL`,
		nsID, pkgID, version).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, db.ErrRace
	}
	if err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: cached maven version %s: %w", version, err))
	}
	return id, nil
}

type cachedFileRow struct {
	id           uuid.UUID
	attachmentID int64
	sha256       [32]byte
	size         int64
}

// CommitRemoteFile makes staged bytes the cached file ref of the target's
// proxy (creating its package and version rows): one transaction commits
// the blob, inserts the file row with its attachment and replaces (and
// detaches) the previous copy of a mutable file. The same bytes as the
// cached copy only record the upstream's confirmation. The staged bytes
// are released either way.
func (s *Store) CommitRemoteFile(ctx context.Context, t *Target, ref FileRef, st *RemoteStaged, meta RemoteFileMeta) (*RemoteFile, error) {
	if t.Remote == nil {
		st.Discard(ctx)
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository %s/%s is not a remote repository", t.NamespaceSlug, t.RepositoryName)
	}
	if err := ref.Validate(); err != nil {
		st.Discard(ctx)
		return nil, err
	}
	var etag *string
	if meta.ETag != "" && len(meta.ETag) <= 255 {
		etag = &meta.ETag
	}
	sums := st.sums
	var (
		out       *RemoteFile
		committed bool
	)
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		committed = false
		now := s.core.Options().Clock.Now()
		pkgID, err := ensureRemotePackage(ctx, tx, t, ref.GroupID, ref.ArtifactID, now)
		if err != nil {
			return err
		}
		var versionID *uuid.UUID
		if ref.Version != "" {
			v, err := ensureRemoteVersion(ctx, tx, t.NamespaceID, pkgID, ref.Version, now)
			if err != nil {
				return err
			}
			versionID = &v
		}
		cur, err := currentRemoteFile(ctx, tx, t.NamespaceID, pkgID, versionID, ref.FileName)
		if err != nil {
			return err
		}
		out = &RemoteFile{File: File{PackageID: pkgID, VersionID: versionID, FileName: ref.FileName, Checksums: sums.checksums()},
			CheckedAt: now, ETag: meta.ETag, LastModified: meta.LastModified}
		if cur != nil && cur.sha256 == sums.SHA256 {
			out.ID = cur.id
			_, err := tx.Exec(ctx, `
				UPDATE maven_remote_files SET upstream_checked_at = $3, upstream_etag = $4, upstream_last_modified = $5
				WHERE namespace_id = $1 AND id = $2`, t.NamespaceID, cur.id, now, etag, meta.LastModified)
			return db.MapErr(wrapErr("confirm cached file", err))
		}
		digests := [][32]byte{sums.SHA256}
		if cur != nil {
			digests = append(digests, cur.sha256)
		}
		if _, err := blobsql.Lock(ctx, tx, t.NamespaceID, blobsql.SortedDigests(digests)); err != nil {
			return err
		}
		if cur != nil {
			if _, err := tx.Exec(ctx, `DELETE FROM maven_remote_files WHERE namespace_id = $1 AND id = $2`, t.NamespaceID, cur.id); err != nil {
				return db.MapErr(fmt.Errorf("store: replace cached maven file: %w", err))
			}
			if _, err := s.core.Detach(ctx, tx, t.NamespaceID, []store.Attachment{{ID: cur.attachmentID, SHA256: cur.sha256}}); err != nil {
				return err
			}
		}
		out.ID = db.NewID()
		if _, err := s.core.CommitStaged(ctx, tx, st.blob, func(u store.StagedUse) error {
			att, err := s.core.AttachStaged(ctx, tx, u)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `
				INSERT INTO maven_remote_files (id, namespace_id, maven_remote_package_id, maven_remote_version_id, file_name,
				                                blob_storage_attachment_id, blob_sha256, sha1, md5, sha512, size,
				                                upstream_checked_at, upstream_etag, upstream_last_modified)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
				out.ID, t.NamespaceID, pkgID, versionID, ref.FileName, att.ID, sums.SHA256[:], sums.SHA1[:], sums.MD5[:],
				sums.SHA512[:], sums.Size, now, etag, meta.LastModified)
			return db.MapErr(wrapErr("insert cached file", err))
		}); err != nil {
			return err
		}
		committed = true
		if versionID != nil {
			delta := sums.Size
			if cur != nil {
				delta -= cur.size
			}
			if delta != 0 {
				// Kept exact under the package lock, as addVersionSize does
				// for hosted versions.
				if _, err := tx.Exec(ctx, `UPDATE maven_remote_versions SET size_bytes = size_bytes + $3 WHERE namespace_id = $1 AND id = $2`,
					t.NamespaceID, *versionID, delta); err != nil {
					return db.MapErr(fmt.Errorf("store: cached maven version size: %w", err))
				}
			}
		}
		return nil
	})
	st.blob.Close(ctx, err == nil && committed)
	if err != nil {
		return nil, err
	}
	b, err := s.core.StatBlob(ctx, t.NamespaceID, sums.SHA256)
	if err != nil {
		return nil, err
	}
	out.Blob = *b
	return out, nil
}

func currentRemoteFile(ctx context.Context, tx pgx.Tx, nsID, pkgID uuid.UUID, versionID *uuid.UUID, name string) (*cachedFileRow, error) {
	var (
		c   cachedFileRow
		sha []byte
		row pgx.Row
	)
	if versionID == nil {
		row = tx.QueryRow(ctx, `
			SELECT id, blob_storage_attachment_id, blob_sha256, size FROM maven_remote_files
			WHERE namespace_id = $1 AND maven_remote_package_id = $2 AND maven_remote_version_id IS NULL
			  AND file_name = $3 AND soft_deleted_at IS NULL
			FOR UPDATE`, nsID, pkgID, name)
	} else {
		row = tx.QueryRow(ctx, `
			SELECT id, blob_storage_attachment_id, blob_sha256, size FROM maven_remote_files
			WHERE namespace_id = $1 AND maven_remote_version_id = $2 AND file_name = $3 AND soft_deleted_at IS NULL
			FOR UPDATE`, nsID, *versionID, name)
	}
	err := row.Scan(&c.id, &c.attachmentID, &sha, &c.size)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached maven file: %w", err))
	}
	c.sha256 = [32]byte(sha)
	return &c, nil
}

// ConfirmRemoteFile records that the upstream still has the cached file
// as it is (a 304 to a conditional request): only the check time and the
// validators change.
func (s *Store) ConfirmRemoteFile(ctx context.Context, t *Target, fileID uuid.UUID, meta RemoteFileMeta) error {
	var etag *string
	if meta.ETag != "" && len(meta.ETag) <= 255 {
		etag = &meta.ETag
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE maven_remote_files
		SET upstream_checked_at = $3, upstream_etag = coalesce($4, upstream_etag),
		    upstream_last_modified = coalesce($5, upstream_last_modified)
		WHERE namespace_id = $1 AND id = $2`, t.NamespaceID, fileID, s.core.Options().Clock.Now(), etag, meta.LastModified)
	return db.MapErr(wrapErr("confirm cached file", err))
}

// RemoteAccess is one answer of a Maven proxy, for the buffered counters.
type RemoteAccess struct {
	// File is the cached file served or just cached (nil: nothing cached,
	// an upstream failure, or a file streamed without being cached).
	File *RemoteFile
	// Miss: the upstream was asked for the content (a fill or a changed
	// document), as opposed to a cache hit (fresh, revalidated by a 304,
	// or served stale).
	Miss bool
}

// RemoteAccessCount is what a proxy's answer counts: the proxy's hit or
// miss, and for a version file the repository's downloads and the last
// download of the version and its package (what gc:cache-evict goes by).
// A target that is not a proxy counts nothing.
func (s *Store) RemoteAccessCount(t *Target, a RemoteAccess) Count {
	if t.Remote == nil {
		return Count{}
	}
	field := enum.CounterFieldCacheHits
	if a.Miss {
		field = enum.CounterFieldCacheMisses
	}
	deltas := []counterDelta{{target: enum.CounterTargetMavenRemoteRepository, targetID: t.Remote.ID, field: field, delta: 1}}
	if a.File != nil && a.File.VersionID != nil {
		now := s.core.Options().Clock.Now()
		deltas = append(deltas,
			counterDelta{target: enum.CounterTargetRepository, targetID: t.RepositoryID, field: enum.CounterFieldDownloadsCount, delta: 1},
			counterDelta{target: enum.CounterTargetMavenRemotePackage, targetID: a.File.PackageID, field: enum.CounterFieldLastDownloadedAt, at: &now},
			counterDelta{target: enum.CounterTargetMavenRemoteVersion, targetID: *a.File.VersionID, field: enum.CounterFieldLastDownloadedAt, at: &now})
	}
	return Count{namespaceID: t.NamespaceID, deltas: deltas}
}

// InvalidateRemoteMetadata makes the cached maven-metadata.xml documents
// and SNAPSHOT files of a Maven proxy stale, so that their next request
// asks the upstream (and still gets the cached copy while the upstream
// cannot be asked). groupID and artifactID narrow it to one package when
// set. It also bumps the proxy's settings_changed_at: every instance then
// rebuilds its upstream client on the next request, which forgets the
// remembered 404s (a path that appeared upstream is found at once). It
// returns how many files became stale.
func (s *Store) InvalidateRemoteMetadata(ctx context.Context, nsID, repositoryID uuid.UUID, groupID, artifactID string) (int64, error) {
	if _, err := s.pool.Exec(ctx, `
		UPDATE maven_remote_repositories SET settings_changed_at = clock_timestamp()
		WHERE namespace_id = $1 AND repository_id = $2`, nsID, repositoryID); err != nil {
		return 0, db.MapErr(fmt.Errorf("store: invalidate maven remote: %w", err))
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE maven_remote_files f SET upstream_checked_at = 'epoch'
		FROM maven_remote_packages p, maven_remote_repositories r
		WHERE f.namespace_id = $1 AND p.namespace_id = $1 AND r.namespace_id = $1
		  AND r.repository_id = $2 AND p.maven_remote_repository_id = r.id AND f.maven_remote_package_id = p.id
		  AND f.soft_deleted_at IS NULL AND p.soft_deleted_at IS NULL
		  AND ($3::text = '' OR p.group_id = $3) AND ($4::text = '' OR p.artifact_id = $4)
		  AND (f.file_name = 'maven-metadata.xml' OR EXISTS (
		       SELECT 1 FROM maven_remote_versions v
		       WHERE v.namespace_id = $1 AND v.id = f.maven_remote_version_id AND v.version LIKE '%-SNAPSHOT'))`,
		nsID, repositoryID, groupID, artifactID)
	if err != nil {
		return 0, db.MapErr(fmt.Errorf("store: invalidate cached maven metadata: %w", err))
	}
	return tag.RowsAffected(), nil
}

// RemotePackage is a cached package of a Maven proxy, with its newest
// cached versions.
type RemotePackage struct {
	ID               uuid.UUID
	RemoteID         uuid.UUID
	GroupID          string
	ArtifactID       string
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SizeBytes        int64
	Versions         []RemoteVersion
}

// RemoteVersion is a cached version.
type RemoteVersion struct {
	ID               uuid.UUID
	Version          string
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SizeBytes        int64
	FilesCount       int
}

// MaxRemotePackageVersions bounds RemotePackage.Versions.
const MaxRemotePackageVersions = 100

// RemotePackagesOfRemotes lists, for each Maven proxy of remoteIDs (its
// maven_remote_repositories ids), its cached packages in (groupId,
// artifactId) order after (afterGroup, afterArtifact), at most limit per
// proxy, each with its newest MaxRemotePackageVersions versions (the
// management API's batch of one page level).
func (s *Store) RemotePackagesOfRemotes(ctx context.Context, nsID uuid.UUID, remoteIDs []uuid.UUID, afterGroup, afterArtifact string, limit int) (map[uuid.UUID][]*RemotePackage, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, p.maven_remote_repository_id, p.group_id, p.artifact_id, p.created_at, p.last_downloaded_at,
		       (SELECT coalesce(sum(v.size_bytes), 0)::bigint FROM maven_remote_versions v
		        WHERE v.namespace_id = $1 AND v.maven_remote_package_id = p.id AND v.soft_deleted_at IS NULL)
		FROM unnest($2::uuid[]) AS r(id)
		CROSS JOIN LATERAL (
			SELECT * FROM maven_remote_packages mp
			WHERE mp.namespace_id = $1 AND mp.maven_remote_repository_id = r.id AND mp.soft_deleted_at IS NULL
			  AND ROW(mp.group_id, mp.artifact_id) > ROW($3::text, $4::text)
			ORDER BY mp.group_id, mp.artifact_id LIMIT $5) p
		ORDER BY p.maven_remote_repository_id, p.group_id, p.artifact_id`, nsID, remoteIDs, afterGroup, afterArtifact, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached maven packages: %w", err))
	}
	pkgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RemotePackage, error) {
		var p RemotePackage
		err := r.Scan(&p.ID, &p.RemoteID, &p.GroupID, &p.ArtifactID, &p.CreatedAt, &p.LastDownloadedAt, &p.SizeBytes)
		return &p, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached maven packages: %w", err))
	}
	out := map[uuid.UUID][]*RemotePackage{}
	if len(pkgs) == 0 {
		return out, nil
	}
	ids := make([]uuid.UUID, len(pkgs))
	byID := make(map[uuid.UUID]*RemotePackage, len(pkgs))
	for i, p := range pkgs {
		ids[i], byID[p.ID] = p.ID, p
		out[p.RemoteID] = append(out[p.RemoteID], p)
	}
	vrows, err := s.pool.Query(ctx, `
		SELECT v.maven_remote_package_id, v.id, v.version, v.created_at, v.last_downloaded_at, v.size_bytes,
		       (SELECT count(*) FROM maven_remote_files f WHERE f.namespace_id = $1 AND f.maven_remote_version_id = v.id)::int
		FROM unnest($2::uuid[]) AS p(id)
		CROSS JOIN LATERAL (
			SELECT * FROM maven_remote_versions mv
			WHERE mv.namespace_id = $1 AND mv.maven_remote_package_id = p.id AND mv.soft_deleted_at IS NULL
			ORDER BY mv.created_at DESC, mv.id DESC LIMIT $3) v`, nsID, ids, MaxRemotePackageVersions)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached maven versions: %w", err))
	}
	defer vrows.Close()
	for vrows.Next() {
		var (
			pkgID uuid.UUID
			v     RemoteVersion
		)
		if err := vrows.Scan(&pkgID, &v.ID, &v.Version, &v.CreatedAt, &v.LastDownloadedAt, &v.SizeBytes, &v.FilesCount); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: cached maven versions: %w", err))
		}
		p := byID[pkgID]
		p.Versions = append(p.Versions, v)
	}
	if err := vrows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached maven versions: %w", err))
	}
	return out, nil
}
