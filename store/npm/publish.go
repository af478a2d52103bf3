package npm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
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

// PublishRequest is one version to publish with its tarball. The protocol has
// verified the tarball against the client's dist (sha512 integrity, sha1
// shasum), validated the name, the version and the tags, and built
// PackageJSON; the store validates PackageJSON against the schema.
type PublishRequest struct {
	Name        string
	Version     string
	PackageJSON []byte
	// FileName is the tarball's file name ("lib-1.0.0.tgz", without scope).
	FileName string
	// Tarball and SHA1 are the tarball's bytes, staged by the publish; or
	// Staged is the tarball already staged by the caller (StageStream, with
	// SetSHA1 done), which Publish then owns: it is closed (committed or
	// discarded) whatever the outcome.
	Tarball []byte
	SHA1    [20]byte
	Staged  *store.StagedBlob
	// Tags are the dist-tags to point at the version. "latest" is added
	// when the package has no latest tag yet (every package has one).
	Tags []string
	Hook WriteHook
}

// PublishResult describes a published version.
type PublishResult struct {
	Package        PackageRef
	VersionID      uuid.UUID
	CreatedAt      time.Time
	Tags           []string // dist-tags now pointing at the version
	PackageCreated bool
	// BlobCreated: the tarball's bytes were new in the namespace (not
	// deduplicated).
	BlobCreated bool
}

// publishLockSQL is the first statement of a publish's transaction:
// it locks the package rows of the name FOR SHARE, the active one and any
// tombstone (writers share the lock; a metadata rebuild's swap takes FOR
// NO KEY UPDATE and so waits for them), and returns one row per package
// row with its buffered counters and, when the package has a row of the
// version (one probe of npm_versions_package_idx), whether that row is
// active. The publish refuses a version that exists (active, in the active
// package) or existed (soft-deleted, in the active package or a tombstone
// of the same name). The version limit counts every version ever
// published under the name, soft-deleted ones and those of tombstones
// included (docs/schema.md, Lengths, names and limits), through the buffered counters (versions_count only
// grows, so purging the trash does not lower it); both limits count rows
// exactly (versionRowsSQL, tagRowsSQL) once the buffered counts come
// within a margin of the limit: they lag by the deltas not folded yet, and
// reading every version or tag row on every publish would make a publish
// cost as many index entries as the package has rows. Tags are not read
// here otherwise: the publish statement adds "latest" when it is missing.
// The unique indexes stay the real guard. No active row: the name has no
// active package yet. It runs on the namespace's partitions (perPartition).
const publishLockSQL = `
SELECT p.id, p.soft_deleted_at IS NULL, p.versions_count, p.tags_count,
       CASE WHEN v.id IS NOT NULL THEN v.soft_deleted_at IS NULL END
FROM {npm_packages} p
LEFT JOIN {npm_versions} v ON v.namespace_id = $1 AND v.npm_package_id = p.id AND v.version = $4
WHERE p.namespace_id = $1 AND p.npm_repository_id = $2 AND p.name = $3
  AND (p.soft_deleted_at IS NULL OR p.soft_deleted_at IS NOT NULL) -- npmEveryPackageRow
FOR SHARE OF p`

var publishLockPartitionSQL = partition.Statements(publishLockSQL, "npm_packages", "npm_versions")

// tagRowsSQL counts a package's dist-tags other than the ones a
// publish sets, and tells whether it has a latest tag (the exact count of
// the tag limit).
const tagRowsSQL = `
SELECT count(*) FILTER (WHERE name <> ALL($3::text[])), coalesce(bool_or(name = 'latest'), false)
FROM npm_tags WHERE namespace_id = $1 AND npm_package_id = $2`

// versionRowsSQL counts the version rows of every package of a name,
// active, soft-deleted and tombstoned (the exact count of the version
// limit), by npm_versions_package_idx.
const versionRowsSQL = `
SELECT count(*) FROM npm_packages p
JOIN npm_versions v ON v.namespace_id = $1 AND v.npm_package_id = p.id
WHERE p.namespace_id = $1 AND p.npm_repository_id = $2 AND p.name = $3
  AND (p.soft_deleted_at IS NULL OR p.soft_deleted_at IS NOT NULL) -- npmEveryPackageRow`

// npmEveryPackageRow: "soft_deleted_at IS NULL OR soft_deleted_at IS NOT
// NULL" is always true, and lets PostgreSQL read the package rows of a
// name through npm_packages' two partial name indexes (active, trashed),
// one per branch; without it no index matches and the whole partition is
// scanned (TestNpmPublishCheckReadsOnePackage).

// publishSQL attaches the tarball's blob (its row is locked by the
// staged commit before this statement), writes the version, its file, its
// tags, force-expires the package's metadata files and records the
// buffered counters, in one statement. $1 version id, $2 namespace,
// $3 package, $4 version, $5 package_json, $6 file id, $7 file name,
// $8 sha256, $9/$10 tag ids/names, $11 tarball size, $12 delta ids, $13
// add "latest" if the package has no latest tag (with id $14). The
// repository's and the namespace's counters (artifacts, sizes, components)
// are recorded by the accounting triggers of the rows written here
// (docs/schema.md, Storage accounting). It runs on the namespace's partitions of
// the npm tables (perPartition); the blob layer's tables are partitioned
// by sha256 and only inserted into, which needs no pruning.
const publishSQL = `
WITH a AS (
	INSERT INTO blob_storage_attachments (namespace_id, sha256) VALUES ($2, $8)
	RETURNING id
), v AS (
	INSERT INTO {npm_versions} (id, namespace_id, npm_package_id, version, package_json)
	VALUES ($1, $2, $3, $4, $5)
	RETURNING id, created_at
), f AS (
	INSERT INTO {npm_files} (id, namespace_id, npm_version_id, file_name, blob_storage_attachment_id, blob_sha256)
	SELECT $6, $2, v.id, $7, a.id, $8 FROM v, a
), t AS (
	INSERT INTO {npm_tags} AS t (id, namespace_id, npm_package_id, npm_version_id, name)
	SELECT u.id, $2, $3, v.id, u.name FROM v, unnest($9::uuid[], $10::text[]) AS u(id, name)
	ON CONFLICT (namespace_id, npm_package_id, name) DO UPDATE SET npm_version_id = EXCLUDED.npm_version_id
	RETURNING (t.id = ANY($9::uuid[])) AS inserted
), l AS (
	INSERT INTO {npm_tags} (id, namespace_id, npm_package_id, npm_version_id, name)
	SELECT $14, $2, $3, v.id, 'latest' FROM v WHERE $13::boolean
	ON CONFLICT (namespace_id, npm_package_id, name) DO NOTHING
	RETURNING 1
), e AS (
	UPDATE {npm_metadata_files} SET expires_at = now()
	WHERE namespace_id = $2 AND npm_package_id = $3 AND expires_at > now()
), d AS (
	INSERT INTO {counter_deltas} (id, namespace_id, target, target_id, field, delta)
	SELECT ($12::uuid[])[x.n], $2, x.target, x.target_id, x.field, x.delta
	FROM (VALUES
		(1, 8::smallint, $3::uuid, 3::smallint, 1::bigint),               -- npm_packages.versions_count
		(2, 8, $3, 4, (SELECT count(*) FROM t WHERE inserted) + (SELECT count(*) FROM l)), -- npm_packages.tags_count
		(3, 9, $1, 2, $11::bigint)                                        -- npm_versions.size_bytes
	) AS x(n, target, target_id, field, delta)
	WHERE x.delta <> 0 AND EXISTS (SELECT 1 FROM v)
)
SELECT v.id, v.created_at, EXISTS (SELECT 1 FROM l) FROM v`

var publishPartitionSQL = partition.Statements(publishSQL, "npm_versions", "npm_files", "npm_tags", "npm_metadata_files", "counter_deltas")

// Publish publishes one version: the tarball is staged in the blob
// layer (session row, temporary bytes), then one foreground transaction
// locks (or creates) the package row and checks the publish, commits the
// blob row (dedup), attaches it, writes the version, its file, its
// dist-tags, the cache expiry and the counters, and runs the hook. A
// failure, a refusal included, leaves no row and no object (the staged
// upload is discarded). Errors: CodeVersionExists,
// CodeVersionUnpublished, CodeLimit, CodeInvalid, CodeRetryable.
func (s *Store) Publish(ctx context.Context, repo *Repository, in PublishRequest) (*PublishResult, error) {
	res, err := s.publish(ctx, repo, in)
	if err != nil && in.Staged != nil {
		in.Staged.Close(ctx, false) // a no-op when already closed
	}
	return res, err
}

func (s *Store) publish(ctx context.Context, repo *Repository, in PublishRequest) (*PublishResult, error) {
	if err := ValidatePackageJSON(in.PackageJSON); err != nil {
		return nil, err
	}
	tags := slices.Clone(in.Tags)
	slices.Sort(tags)
	tags = slices.Compact(tags)

	part, err := partition.Of(ctx, s.pool, repo.NamespaceID)
	if err != nil {
		return nil, err
	}

	// The bytes: the first phase of the upload runs concurrently with the
	// start of the transaction (the package lock and the checks), unless
	// the caller staged them already, and their sync (SealAsync) with the
	// whole transaction until they move.
	pending := in.stage(ctx, s, repo)
	res := &PublishResult{}
	err = s.core.WithStagedTx(ctx, pending, func(tx pgx.Tx) error {
		*res = PublishResult{Tags: slices.Clone(tags)}
		target, err := lockPackageForPublish(ctx, tx, repo, part, in, res)
		if err != nil {
			return err
		}
		staged, err := pending.Wait()
		if err != nil {
			return fmt.Errorf("store: npm publish %s@%s: tarball: %w", in.Name, in.Version, err)
		}
		return s.publishTx(ctx, tx, repo, in, staged, target, res)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// publishTx is the rest of a publish's transaction, once the package
// is locked and the publish checked: commit the staged tarball, and in one
// statement attach it and write the version, its file, tags, cache expiry
// and counters; then the hook, all before the tarball's bytes move to
// their blob key.
func (s *Store) publishTx(ctx context.Context, tx pgx.Tx, repo *Repository, in PublishRequest, staged *store.StagedBlob, target publishTarget, res *PublishResult) error {
	tags, pkgID := res.Tags, target.id
	var latestAdded bool
	committed, err := s.core.CommitStaged(ctx, tx, staged, func(u store.StagedUse) error {
		if err := store.ClearStagedCandidate(ctx, tx, u); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, publishPartitionSQL[target.part], pgx.QueryExecModeCacheStatement,
			db.NewID(), repo.NamespaceID, pkgID, in.Version, in.PackageJSON,
			db.NewID(), in.FileName, u.Blob.SHA256[:],
			db.NewIDs(len(tags)), tags, staged.Size(), db.NewIDs(3),
			target.addLatest, db.NewID(),
		).Scan(&res.VersionID, &res.CreatedAt, &latestAdded)
		// The only unique key this statement can hit is the active
		// version key (reported under the partition's index name).
		if db.IsPgCode(err, pgerrcode.UniqueViolation, "") {
			return errs.New(CodeVersionExists, "npm version already published: %s@%s", in.Name, in.Version)
		}
		if err != nil {
			return fmt.Errorf("store: npm publish %s@%s: %w", in.Name, in.Version, err)
		}
		res.Package = PackageRef{NamespaceID: repo.NamespaceID, NpmRepositoryID: repo.NpmRepositoryID, PackageID: pkgID, Name: in.Name}
		res.PackageCreated = target.created
		if latestAdded {
			res.Tags = append(res.Tags, "latest")
		}
		if in.Hook != nil {
			if err := in.Hook(ctx, tx, res.Package); err != nil {
				return fmt.Errorf("store: npm publish hook: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res.BlobCreated = committed.Created
	return nil
}

// stage starts the staging of in.Tarball, or the sealing of in.Staged.
func (in PublishRequest) stage(ctx context.Context, s *Store, repo *Repository) *store.PendingStage {
	if in.Staged != nil {
		in.Staged.SealAsync()
		return store.StagedPending(in.Staged)
	}
	sum := sha256.Sum256(in.Tarball)
	sha1 := in.SHA1
	return s.core.StageBlobAsync(ctx, store.UploadRef{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID},
		in.Tarball, store.Expected{SHA256: sum, Size: int64(len(in.Tarball)), SHA1: &sha1})
}

// exactVersionsMargin and exactTagsMargin are how far below its
// limit a package's buffered count must be for a publish to trust it
// without counting rows: what the folder may not have folded yet of
// publishes (store.UnfoldedWritesMargin) and of tag changes.
const (
	exactVersionsMargin = store.UnfoldedWritesMargin
	exactTagsMargin     = 500
)

// publishCheck is what publishLockSQL tells of a name.
type publishCheck struct {
	active          *uuid.UUID // the active package row; nil: none yet
	exists, existed bool
	// versions: of all package rows of the name, buffered (or counted
	// rows, near the limit); tags: of the active row, buffered.
	versions, tags int64
}

// lockPackageForPublish locks the package rows of in.Name FOR SHARE and
// checks the publish (publishLockSQL), inserting the active row on
// first publish. It sets res.Tags to the tags the publish sets for sure;
// addLatest: the publish statement must add "latest" if the package has
// none (the check did not read the tags).
func lockPackageForPublish(ctx context.Context, tx pgx.Tx, repo *Repository, part int, in PublishRequest, res *PublishResult) (publishTarget, error) {
	c, err := checkPublish(ctx, tx, repo, part, in)
	if err != nil {
		return publishTarget{}, err
	}
	switch {
	case c.exists:
		return publishTarget{}, errs.New(CodeVersionExists, "npm version already published: %s@%s", in.Name, in.Version)
	case c.existed:
		return publishTarget{}, errs.New(CodeVersionUnpublished, "npm version was unpublished and cannot be published again: %s@%s", in.Name, in.Version)
	case c.versions >= MaxVersionsPerPackage:
		return publishTarget{}, errs.New(CodeLimit, "npm package limit reached: %s has %d versions (unpublished ones count); the limit is %d", in.Name, c.versions, MaxVersionsPerPackage)
	}
	if c.active == nil {
		if !slices.Contains(res.Tags, "latest") {
			res.Tags = append(res.Tags, "latest")
		}
		id, created, err := createPackage(ctx, tx, repo, in.Name)
		return publishTarget{id: id, part: part, created: created}, err
	}
	t := publishTarget{id: *c.active, part: part, addLatest: !slices.Contains(res.Tags, "latest")}
	if c.tags+int64(len(res.Tags))+1 > MaxTagsPerPackage-exactTagsMargin {
		if err := checkTagLimit(ctx, tx, repo, in.Name, t.id, res); err != nil {
			return publishTarget{}, err
		}
		t.addLatest = false // res.Tags now has latest if it was missing
	}
	return t, nil
}

// publishTarget is the package a publish writes to.
type publishTarget struct {
	id      uuid.UUID
	part    int  // the namespace's partition (partition.Of)
	created bool // by this publish
	// addLatest: the publish adds "latest" if the package has none (the
	// check did not read the tags).
	addLatest bool
}

// checkPublish runs publishLockSQL and, near the version limit,
// versionRowsSQL.
func checkPublish(ctx context.Context, tx pgx.Tx, repo *Repository, part int, in PublishRequest) (*publishCheck, error) {
	rows, err := tx.Query(ctx, publishLockPartitionSQL[part], pgx.QueryExecModeCacheStatement,
		repo.NamespaceID, repo.NpmRepositoryID, in.Name, in.Version)
	if err != nil {
		return nil, fmt.Errorf("store: npm publish check %s: %w", in.Name, err)
	}
	var (
		c    publishCheck
		seen = map[uuid.UUID]bool{}
	)
	for rows.Next() {
		var (
			id             uuid.UUID
			active         bool
			versions, tags int64
			versionActive  *bool
		)
		if err := rows.Scan(&id, &active, &versions, &tags, &versionActive); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: npm publish check %s: %w", in.Name, err)
		}
		if active {
			c.active, c.tags = &id, tags
		}
		if !seen[id] { // a package row comes once per row of the version
			seen[id] = true
			c.versions += versions
		}
		if versionActive != nil {
			c.exists = c.exists || (active && *versionActive)
			c.existed = c.existed || !*versionActive
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: npm publish check %s: %w", in.Name, err)
	}
	if c.versions >= MaxVersionsPerPackage-exactVersionsMargin {
		var total int64
		if err := tx.QueryRow(ctx, versionRowsSQL, execMode, repo.NamespaceID, repo.NpmRepositoryID, in.Name).Scan(&total); err != nil {
			return nil, fmt.Errorf("store: npm publish count %s: %w", in.Name, err)
		}
		c.versions = max(c.versions, total)
	}
	return &c, nil
}

// checkTagLimit counts the tags of a package near the tag limit: "latest"
// joins res.Tags when the package has none, and a publish that would leave
// more than MaxTagsPerPackage is refused;
// res.Tags then says exactly which tags the publish sets.
func checkTagLimit(ctx context.Context, tx pgx.Tx, repo *Repository, name string, pkgID uuid.UUID, res *PublishResult) error {
	var others int64
	var hasLatest bool
	if err := tx.QueryRow(ctx, tagRowsSQL, execMode, repo.NamespaceID, pkgID, res.Tags).Scan(&others, &hasLatest); err != nil {
		return fmt.Errorf("store: npm publish tags %s: %w", name, err)
	}
	if !hasLatest && !slices.Contains(res.Tags, "latest") {
		res.Tags = append(res.Tags, "latest")
	}
	if n := others + int64(len(res.Tags)); n > MaxTagsPerPackage {
		return errs.New(CodeLimit, "npm package limit reached: %s would have %d dist-tags; the limit is %d", name, n, MaxTagsPerPackage)
	}
	return nil
}

// createPackage inserts the active package row of a name, or locks the
// one a concurrent first publish inserted.
func createPackage(ctx context.Context, tx pgx.Tx, repo *Repository, name string) (uuid.UUID, bool, error) {
	var scope *string
	if sc, _, ok := strings.Cut(name, "/"); ok && strings.HasPrefix(sc, "@") {
		sc = sc[1:]
		scope = &sc
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `
		INSERT INTO npm_packages (id, namespace_id, npm_repository_id, name, scope)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (namespace_id, npm_repository_id, name) WHERE soft_deleted_at IS NULL DO NOTHING
		RETURNING id`, execMode, db.NewID(), repo.NamespaceID, repo.NpmRepositoryID, name, scope).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, fmt.Errorf("store: npm package %s: %w", name, err)
	}
	// A concurrent first publish inserted it (and committed: ON CONFLICT
	// waited for it): lock that row. Its versions are not in this
	// statement's checks; the unique version key still guards them.
	id, err = lockPackage(ctx, tx, repo, name, "FOR SHARE")
	if store.HasCode(err, CodePackageUnknown) {
		return uuid.Nil, false, db.ErrRace // and deleted again: start over
	}
	return id, false, err
}

// lockPackage locks the active package row of a name (lock: "FOR SHARE"
// or "FOR NO KEY UPDATE"); CodePackageUnknown when there is none.
func lockPackage(ctx context.Context, tx pgx.Tx, repo *Repository, name, lock string) (uuid.UUID, error) {
	var id uuid.UUID
	err := tx.QueryRow(ctx, `
		SELECT id FROM npm_packages
		WHERE namespace_id = $1 AND npm_repository_id = $2 AND name = $3 AND soft_deleted_at IS NULL `+lock, execMode,
		repo.NamespaceID, repo.NpmRepositoryID, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, errs.New(CodePackageUnknown, "npm package unknown: %s", name)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("store: lock npm package %s: %w", name, err)
	}
	return id, nil
}

// metadataKinds are the kinds of npm_metadata_files, in kind order.
var metadataKinds = []enum.NpmMetadataKind{enum.NpmMetadataFull, enum.NpmMetadataDistTags, enum.NpmMetadataAbbreviated}
