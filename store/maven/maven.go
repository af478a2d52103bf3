package maven

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// Typed errors of the Maven data path.
var (
	// CodeRepositoryUnknown: no such namespace (or it is deleted), or no
	// active repository of that name in it, or it is not a hosted Maven
	// repository. Wrapped with the reason.
	CodeRepositoryUnknown = store.Code{Name: "MAVEN_REPOSITORY_UNKNOWN", Kind: store.KindNotFound}
	// CodeNotFound: no such active package, version or file.
	CodeNotFound = store.Code{Name: "MAVEN_NOT_FOUND", Kind: store.KindNotFound}
	// CodeReleaseExists: a release file already exists with different
	// bytes (releases are immutable).
	CodeReleaseExists = store.Code{Name: "MAVEN_RELEASE_EXISTS", Kind: store.KindConflict}
	// CodeChecksumMismatch: a checksum sidecar (or a checksum header)
	// does not match the file's bytes.
	CodeChecksumMismatch = store.Code{Name: "MAVEN_CHECKSUM_MISMATCH", Kind: store.KindInvalidInput}
	// CodeNothingToDescribe: a maven-metadata.xml or checksum was
	// uploaded for a package, version or file that holds nothing yet.
	CodeNothingToDescribe = store.Code{Name: "MAVEN_NOTHING_TO_DESCRIBE", Kind: store.KindNotFound}
)

// Target is a resolved /maven/<namespace>/<repository>: the namespace
// and the hosted Maven repository.
type Target struct {
	NamespaceID   uuid.UUID
	NamespaceSlug string
	// NamespaceCondition names why the namespace does not serve everything
	// ("BLOCKED", "DISABLED", "SUSPENDED"), "" when it is active.
	NamespaceCondition string
	ServesReads        bool // serving predicate for reads (docs/schema.md, Status columns and serving)
	ServesWrites       bool // ... and for writes (not suspended)
	RepositoryID       uuid.UUID
	RepositoryName     string
	MavenRepositoryID  uuid.UUID
	Visibility         enum.Visibility
	// Remote is set for a Maven proxy (kind REMOTE), whose
	// MavenRepositoryID is uuid.Nil.
	Remote *RemoteTarget
	// Virtual is set for a virtual repository (kind VIRTUAL, no
	// MavenRepositoryID either): the protocol resolves its requests
	// through its upstreams (store.VirtualTree, VirtualMemberTargets).
	Virtual bool
}

// UploadRef returns the reference of an upload session of the target's
// repository.
func (t *Target) UploadRef(uploadID uuid.UUID) store.UploadRef {
	return store.UploadRef{NamespaceID: t.NamespaceID, RepositoryID: t.RepositoryID, UploadID: uploadID}
}

// resolveSQL reads a namespace's state, and a repository of it with its
// Maven row, on the namespace's partitions: on the partitioned parents,
// planning it took about 1 ms, at every Maven request. The namespace id
// comes from the core store's cache, so a warm resolve is one round trip.
const resolveSQL = `
SELECT n.deleted_at, n.purged_at, n.blocked_at, n.disabled_at, n.suspended_at,
       r.id, r.format, r.kind, r.visibility, mr.id,
       mrr.id, mrr.url, mrr.metadata_cache_validity_hours, mrr.negative_cache_minutes,
       mrr.settings_changed_at, mrr.wrapped_dek IS NOT NULL`

const resolveFrom = `
FROM namespaces n
LEFT JOIN {repositories} r ON r.namespace_id = $1 AND r.name = $2 AND r.soft_deleted_at IS NULL
LEFT JOIN {maven_repositories} mr ON mr.namespace_id = $1 AND mr.repository_id = r.id
LEFT JOIN {maven_remote_repositories} mrr ON mrr.namespace_id = $1 AND mrr.repository_id = r.id`

var resolveRepositorySQL = partition.Statements(resolveSQL+resolveFrom+`
WHERE n.id = $1`, "repositories", "maven_repositories", "maven_remote_repositories")

// resolveVersionFileSQL and resolvePackageFileSQL are resolveRepositorySQL
// that also look the file up in the hosted repository it finds, so that
// a download resolves its name and finds its file in one round trip. The
// file's parameters are those of versionFileSQL and packageFileSQL, whose
// $2 (the Maven repository's id) is the resolved mr.id here.
var (
	resolveVersionFileSQL = partition.Statements(resolveSQL+`, f.*`+resolveFrom+`
LEFT JOIN LATERAL (`+strings.ReplaceAll(versionFileBody, "$2", "mr.id")+`) f ON true
WHERE n.id = $1`, "repositories", "maven_repositories", "maven_remote_repositories", "maven_packages", "maven_versions", "maven_files")
	resolvePackageFileSQL = partition.Statements(resolveSQL+`, f.*`+resolveFrom+`
LEFT JOIN LATERAL (`+strings.ReplaceAll(packageFileBody, "$2", "mr.id")+`) f ON true
WHERE n.id = $1`, "repositories", "maven_repositories", "maven_remote_repositories", "maven_packages", "maven_files")
)

// ResolveTarget resolves /maven/<namespace>/<repository>.
// CodeRepositoryUnknown (wrapped with the reason) when the namespace
// does not exist or is deleted, or the repository is missing, in the
// trash, or not Maven (a REMOTE one has Target.Remote set, a VIRTUAL one
// Target.Virtual). Blocked, disabled and suspended
// namespaces resolve, with ServesReads/ServesWrites telling what they
// allow.
func (s *Store) ResolveTarget(ctx context.Context, namespace, repository string) (*Target, error) {
	t, _, err := s.resolve(ctx, namespace, repository, nil)
	return t, err
}

// ResolveTargetFile is ResolveTarget that also finds, in the same round
// trip, the active file ref of a hosted target, without its blob row
// (FileBlob reads it): the file is nil when the target is not hosted or
// holds no such file. The caller authorizes the target before it uses
// the file.
func (s *Store) ResolveTargetFile(ctx context.Context, namespace, repository string, ref FileRef) (*Target, *File, error) {
	return s.resolve(ctx, namespace, repository, &ref)
}

func (s *Store) resolve(ctx context.Context, namespace, repository string, ref *FileRef) (*Target, *File, error) {
	nsID, err := s.core.NamespaceID(ctx, namespace)
	if store.HasCode(err, store.CodeNotFound) {
		return nil, nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: namespace %q not found", namespace)
	}
	if err != nil {
		return nil, nil, err
	}
	var (
		r    resolvedRow
		f    fileRow
		dest = r.dest()
		row  pgx.Row
	)
	switch {
	case ref == nil:
		row = partition.QueryRow(ctx, s.pool, &resolveRepositorySQL, nsID, repository)
	case ref.Version == "":
		dest = append(dest, f.dest()...)
		row = partition.QueryRow(ctx, s.pool, &resolvePackageFileSQL, nsID, repository, ref.GroupID, ref.ArtifactID, ref.FileName)
	default:
		dest = append(dest, f.dest()...)
		row = partition.QueryRow(ctx, s.pool, &resolveVersionFileSQL, nsID, repository, ref.GroupID, ref.ArtifactID, ref.Version, ref.FileName)
	}
	if err := row.Scan(dest...); errors.Is(err, pgx.ErrNoRows) {
		// The cached id of a namespace whose row is gone.
		return nil, nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: namespace %q not found", namespace)
	} else if err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: resolve %s/%s: %w", namespace, repository, err))
	}
	t, err := r.target(nsID, namespace, repository)
	if err != nil {
		return nil, nil, err
	}
	if ref != nil && f.id != nil && t.MavenRepositoryID != uuid.Nil {
		file, err := f.file()
		if err != nil {
			return nil, nil, err
		}
		return t, file, nil
	}
	return t, nil, nil
}

// resolvedRow is what resolveSQL reads.
type resolvedRow struct {
	deleted, purged, blocked, disabled, suspended *time.Time
	repoID, mrID                                  *uuid.UUID
	format, kind, visibility                      *int16
	// The remote settings, when the repository has them.
	remoteID              *uuid.UUID
	remoteURL             *string
	metaHours, negMinutes *int16
	remoteChanged         *time.Time
	remoteHasCredentials  *bool
}

func (r *resolvedRow) dest() []any {
	return []any{&r.deleted, &r.purged, &r.blocked, &r.disabled, &r.suspended,
		&r.repoID, &r.format, &r.kind, &r.visibility, &r.mrID,
		&r.remoteID, &r.remoteURL, &r.metaHours, &r.negMinutes, &r.remoteChanged, &r.remoteHasCredentials}
}

// remote is the remote settings the row holds.
func (r *resolvedRow) remote(namespace, repository string) (*RemoteTarget, error) {
	if r.remoteID == nil {
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: repository %s/%s has no remote settings", namespace, repository)
	}
	return &RemoteTarget{ID: *r.remoteID, URL: *r.remoteURL,
		MetadataValidity:  time.Duration(*r.metaHours) * time.Hour,
		NegativeTTL:       time.Duration(*r.negMinutes) * time.Minute,
		SettingsChangedAt: *r.remoteChanged, HasCredentials: *r.remoteHasCredentials}, nil
}

// target turns the row into the target of namespace/repository, or the
// CodeRepositoryUnknown that says why there is none.
func (r *resolvedRow) target(nsID uuid.UUID, namespace, repository string) (*Target, error) {
	if r.deleted != nil || r.purged != nil {
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: namespace %q not found", namespace)
	}
	if r.repoID == nil {
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: repository %q not found in namespace %q", repository, namespace)
	}
	if enum.Format(*r.format) != enum.FormatMaven {
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: repository %s/%s is not a Maven repository", namespace, repository)
	}
	t := &Target{NamespaceID: nsID, NamespaceSlug: namespace, RepositoryID: *r.repoID, RepositoryName: repository}
	switch {
	case enum.Kind(*r.kind) == enum.KindRemote:
		remote, err := r.remote(namespace, repository)
		if err != nil {
			return nil, err
		}
		t.Remote = remote
	case enum.Kind(*r.kind) == enum.KindVirtual:
		t.Virtual = true
	case enum.Kind(*r.kind) == enum.KindHosted && r.mrID != nil:
		t.MavenRepositoryID = *r.mrID
	default:
		return nil, errs.New(CodeRepositoryUnknown, "Maven repository unknown: repository %s/%s is not a hosted, remote or virtual Maven repository", namespace, repository)
	}
	switch {
	case r.blocked != nil:
		t.NamespaceCondition = "BLOCKED"
	case r.disabled != nil:
		t.NamespaceCondition = "DISABLED"
	case r.suspended != nil:
		t.NamespaceCondition = "SUSPENDED"
	}
	// Serving predicates (docs/schema.md, Status columns and serving):
	// reads need none of deleted, purged, blocked, disabled; writes need
	// suspended unset too.
	t.ServesReads = r.blocked == nil && r.disabled == nil
	t.ServesWrites = t.ServesReads && r.suspended == nil
	t.Visibility = enum.Visibility(*r.visibility)
	return t, nil
}

// Checksums are the digests of a file's bytes.
type Checksums struct {
	MD5    *[16]byte // nil only for rows written without one (never by this server)
	SHA1   [20]byte
	SHA256 [32]byte
	SHA512 [64]byte
}

// Hex returns the lowercase hex digest of alg; ok is false when the file
// has none (md5 is nullable).
func (c *Checksums) Hex(alg mavenlayout.ChecksumAlgorithm) (string, bool) {
	switch alg {
	case mavenlayout.MD5:
		if c.MD5 == nil {
			return "", false
		}
		return hex.EncodeToString(c.MD5[:]), true
	case mavenlayout.SHA1:
		return hex.EncodeToString(c.SHA1[:]), true
	case mavenlayout.SHA256:
		return hex.EncodeToString(c.SHA256[:]), true
	case mavenlayout.SHA512:
		return hex.EncodeToString(c.SHA512[:]), true
	}
	return "", false
}

// File is an active maven_files row with its blob row.
type File struct {
	ID        uuid.UUID
	PackageID uuid.UUID
	VersionID *uuid.UUID // nil for package-level files
	FileName  string
	Checksums Checksums
	Blob      store.Blob
}

// FileRef names a file of a hosted Maven repository. Version is ""
// for package-level files (maven-metadata.xml next to the versions).
type FileRef struct {
	GroupID, ArtifactID, Version, FileName string
}

func (r FileRef) String() string {
	if r.Version == "" {
		return r.GroupID + ":" + r.ArtifactID + " " + r.FileName
	}
	return r.GroupID + ":" + r.ArtifactID + ":" + r.Version + " " + r.FileName
}

// Validate checks the coordinates and the file name.
func (r FileRef) Validate() error {
	return invalid(mavenlayout.ValidateFile(r.GroupID, r.ArtifactID, r.Version, r.FileName))
}

// versionFileBody finds an active version file, on the namespace's
// partitions (on the parents, planning it cost more than running it, at
// every download). The blob row is read by a second statement on the
// digest's partition (FileBlob): joining blob_storage_blobs on
// f.blob_sha256 leaves its 64 partitions to run-time pruning, which costs
// more to plan than the extra round trip (docs/schema.md, Per-partition
// statements, on the planning cost of opening every partition).
const versionFileBody = `
SELECT f.id, f.maven_package_id, f.maven_version_id, f.file_name, f.blob_sha256, f.sha1, f.md5, f.sha512
FROM {maven_packages} p
JOIN {maven_versions} v
  ON v.namespace_id = $1 AND v.maven_package_id = p.id AND v.version = $5 AND v.soft_deleted_at IS NULL
JOIN {maven_files} f
  ON f.namespace_id = $1 AND f.maven_version_id = v.id AND f.file_name = $6 AND f.soft_deleted_at IS NULL
WHERE p.namespace_id = $1 AND p.maven_repository_id = $2 AND p.group_id = $3 AND p.artifact_id = $4
  AND p.soft_deleted_at IS NULL`

// packageFileBody finds an active package-level file.
const packageFileBody = `
SELECT f.id, f.maven_package_id, f.maven_version_id, f.file_name, f.blob_sha256, f.sha1, f.md5, f.sha512
FROM {maven_packages} p
JOIN {maven_files} f
  ON f.namespace_id = $1 AND f.maven_package_id = p.id AND f.maven_version_id IS NULL
 AND f.file_name = $5 AND f.soft_deleted_at IS NULL
WHERE p.namespace_id = $1 AND p.maven_repository_id = $2 AND p.group_id = $3 AND p.artifact_id = $4
  AND p.soft_deleted_at IS NULL`

var (
	versionFileSQL = partition.Statements(versionFileBody, "maven_packages", "maven_versions", "maven_files")
	packageFileSQL = partition.Statements(packageFileBody, "maven_packages", "maven_files")
)

// fileRow is what a file lookup reads: all nil when a resolve's lookup
// found no file.
type fileRow struct {
	id, packageID, versionID  *uuid.UUID
	name                      *string
	sha256, sha1, md5, sha512 []byte
}

func (f *fileRow) dest() []any {
	return []any{&f.id, &f.packageID, &f.versionID, &f.name, &f.sha256, &f.sha1, &f.md5, &f.sha512}
}

// file is the row as a File without its blob row.
func (f *fileRow) file() (*File, error) {
	if f.id == nil || f.packageID == nil || f.name == nil {
		return nil, errors.New("store: maven file row without its id, package or name")
	}
	if len(f.sha256) != 32 || len(f.sha1) != 20 || len(f.sha512) != 64 || (f.md5 != nil && len(f.md5) != 16) {
		return nil, fmt.Errorf("store: maven file %s has malformed checksums", *f.id)
	}
	out := &File{ID: *f.id, PackageID: *f.packageID, VersionID: f.versionID, FileName: *f.name}
	out.Checksums.SHA256, out.Checksums.SHA1, out.Checksums.SHA512 = [32]byte(f.sha256), [20]byte(f.sha1), [64]byte(f.sha512)
	if f.md5 != nil {
		v := [16]byte(f.md5)
		out.Checksums.MD5 = &v
	}
	return out, nil
}

// File returns an active file and its blob row, from the database
// only. CodeNotFound when the package, the version or the file is
// missing.
func (s *Store) File(ctx context.Context, t *Target, ref FileRef) (*File, error) {
	f, err := s.FileRow(ctx, t, ref)
	if err != nil {
		return nil, err
	}
	if err := s.FileBlob(ctx, t, f); err != nil {
		return nil, err
	}
	return f, nil
}

// FileRow is File without the blob row: what a checksum needs.
func (s *Store) FileRow(ctx context.Context, t *Target, ref FileRef) (*File, error) {
	var row pgx.Row
	if ref.Version == "" {
		row = partition.QueryRow(ctx, s.pool, &packageFileSQL, t.NamespaceID, t.MavenRepositoryID, ref.GroupID, ref.ArtifactID, ref.FileName)
	} else {
		row = partition.QueryRow(ctx, s.pool, &versionFileSQL, t.NamespaceID, t.MavenRepositoryID, ref.GroupID, ref.ArtifactID, ref.Version, ref.FileName)
	}
	var fr fileRow
	err := row.Scan(fr.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, FileNotFound(ref)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven file %s: %w", ref, err))
	}
	return fr.file()
}

// FileNotFound is the error of a file ref that is not stored
// (CodeNotFound).
func FileNotFound(ref FileRef) error {
	return errs.New(CodeNotFound, "Maven file not found: %s", ref)
}

// FileBlob reads the blob row of a file FileRow or ResolveTargetFile
// found into f.Blob. CodeNotFound when the file was replaced meanwhile.
func (s *Store) FileBlob(ctx context.Context, t *Target, f *File) error {
	b, err := s.core.StatBlob(ctx, t.NamespaceID, f.Checksums.SHA256)
	if err != nil {
		// The file row holds an attachment, so its blob row exists;
		// a concurrent replace can only have detached it after we read.
		if store.HasCode(err, store.CodeBlobUnknown) {
			return errs.New(CodeNotFound, "Maven file not found: %s (replaced meanwhile)", f.FileName)
		}
		return db.MapErr(err)
	}
	f.Blob = *b
	return nil
}

// versionFileNames lists the names of a version's active files.
func versionFileNames(ctx context.Context, q db.Queryer, nsID, versionID uuid.UUID) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT file_name FROM maven_files
		WHERE namespace_id = $1 AND maven_version_id = $2 AND soft_deleted_at IS NULL`, nsID, versionID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven version files: %w", err))
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven version files: %w", err))
	}
	return names, nil
}

// findVersion finds an active package and version: CodeNotFound
// when either is missing.
func (s *Store) findVersion(ctx context.Context, t *Target, groupID, artifactID, version string) (pkgID, versionID uuid.UUID, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT p.id, v.id
		FROM maven_packages p
		JOIN maven_versions v
		  ON v.namespace_id = $1 AND v.maven_package_id = p.id AND v.version = $5 AND v.soft_deleted_at IS NULL
		WHERE p.namespace_id = $1 AND p.maven_repository_id = $2 AND p.group_id = $3 AND p.artifact_id = $4
		  AND p.soft_deleted_at IS NULL`,
		t.NamespaceID, t.MavenRepositoryID, groupID, artifactID, version).Scan(&pkgID, &versionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, uuid.Nil, errs.New(CodeNotFound, "Maven file not found: %s:%s:%s", groupID, artifactID, version)
	}
	if err != nil {
		return uuid.Nil, uuid.Nil, db.MapErr(fmt.Errorf("store: maven version %s:%s:%s: %w", groupID, artifactID, version, err))
	}
	return pkgID, versionID, nil
}

// findPackage finds an active package: CodeNotFound when missing.
func (s *Store) findPackage(ctx context.Context, t *Target, groupID, artifactID string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `
		SELECT id FROM maven_packages
		WHERE namespace_id = $1 AND maven_repository_id = $2 AND group_id = $3 AND artifact_id = $4
		  AND soft_deleted_at IS NULL`,
		t.NamespaceID, t.MavenRepositoryID, groupID, artifactID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, errs.New(CodeNotFound, "Maven file not found: %s:%s", groupID, artifactID)
	}
	if err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: maven package %s:%s: %w", groupID, artifactID, err))
	}
	return id, nil
}

// ResolveSnapshotFile maps a non-timestamped file name of a SNAPSHOT
// version ("lib-1.0-SNAPSHOT.jar", "lib-1.0-SNAPSHOT-sources.jar") to the
// latest timestamped build of the same classifier and extension
// ("lib-1.0-20261129.210811-2.jar"), the way a client that reads the
// version-level metadata would. CodeNotFound when the version holds no
// such build.
func (s *Store) ResolveSnapshotFile(ctx context.Context, t *Target, ref FileRef) (string, error) {
	notFound := errs.New(CodeNotFound, "Maven file not found: %s", ref)
	if !mavenlayout.IsSnapshotVersion(ref.Version) {
		return "", notFound
	}
	rest, ok := strings.CutPrefix(ref.FileName, ref.ArtifactID+"-"+ref.Version)
	if !ok || len(rest) < 2 {
		return "", notFound
	}
	var classifier, ext string
	switch rest[0] {
	case '.':
		ext = rest[1:]
	case '-':
		classifier, ext, ok = strings.Cut(rest[1:], ".")
		if !ok {
			return "", notFound
		}
	default:
		return "", notFound
	}
	_, versionID, err := s.findVersion(ctx, t, ref.GroupID, ref.ArtifactID, ref.Version)
	if err != nil {
		return "", err
	}
	names, err := versionFileNames(ctx, s.pool, t.NamespaceID, versionID)
	if err != nil {
		return "", err
	}
	var (
		best     mavenlayout.SnapshotFile
		bestName string
	)
	for _, n := range names {
		f, ok := mavenlayout.ParseSnapshotFile(ref.ArtifactID, ref.Version, n)
		if ok && f.Classifier == classifier && f.Extension == ext && (bestName == "" || f.After(best)) {
			best, bestName = f, n
		}
	}
	if bestName == "" {
		return "", notFound
	}
	return bestName, nil
}

// RenderMetadata generates the metadata document of a package
// (ref.Version == "") or of a SNAPSHOT version from the stored rows, the
// same bytes the server stores as the metadata file. It is the fallback
// for a read that finds no stored document (the refresh after a write did
// not run, e.g. a crash in between). CodeNotFound when there is
// nothing to describe.
func (s *Store) RenderMetadata(ctx context.Context, t *Target, ref FileRef) ([]byte, error) {
	var (
		content []byte
		err     error
	)
	if ref.Version == "" {
		var pkgID uuid.UUID
		if pkgID, err = s.findPackage(ctx, t, ref.GroupID, ref.ArtifactID); err != nil {
			return nil, err
		}
		content, err = renderPackageMetadata(ctx, s.pool, t.NamespaceID, pkgID, ref.GroupID, ref.ArtifactID)
	} else {
		var versionID uuid.UUID
		if _, versionID, err = s.findVersion(ctx, t, ref.GroupID, ref.ArtifactID, ref.Version); err != nil {
			return nil, err
		}
		content, err = renderSnapshotMetadata(ctx, s.pool, t.NamespaceID, versionID, ref.GroupID, ref.ArtifactID, ref.Version)
	}
	if err != nil {
		return nil, err
	}
	if content == nil {
		return nil, errs.New(CodeNotFound, "Maven file not found: %s", ref)
	}
	return content, nil
}

// Versions lists the active versions of an active package in Maven
// order (oldest first).
func (s *Store) Versions(ctx context.Context, t *Target, groupID, artifactID string) ([]string, error) {
	pkgID, err := s.findPackage(ctx, t, groupID, artifactID)
	if err != nil {
		return nil, err
	}
	vs, _, err := activeVersions(ctx, s.pool, t.NamespaceID, pkgID)
	if err != nil {
		return nil, err
	}
	return sortVersions(vs), nil
}
