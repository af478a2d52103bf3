package container

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// Container (OCI / Docker) data path of hosted container repositories
// (docs/schema.md, "Format tables"): the operations the OCI distribution
// protocol calls. Reads prune to one partition (namespace_id = $1 first);
// writes run in foreground transactions (WithTx: lock timeout, CodeRetryable)
// and take locks in the order of docs/garbage-collection.md, "Lock protocol".

// Typed errors of the container data path. Protocols test them with
// errors.Is / errors.As.
var (
	// CodeNameUnknown: no such namespace, or no active hosted
	// container repository of that name in it.
	CodeNameUnknown = store.Code{Name: "CONTAINER_NAME_UNKNOWN", Kind: store.KindNotFound}
	// CodeManifestUnknown: no active manifest (or tag) by that
	// reference in the image.
	CodeManifestUnknown = store.Code{Name: "CONTAINER_MANIFEST_UNKNOWN", Kind: store.KindNotFound}
	// CodeBlobUnknown: the image has no active blob of that digest.
	CodeBlobUnknown = store.Code{Name: "CONTAINER_BLOB_UNKNOWN", Kind: store.KindNotFound}
	// CodeManifestBlobUnknown: a manifest references a blob that is
	// not in the image. Error.Digest names it.
	CodeManifestBlobUnknown = store.Code{Name: "CONTAINER_MANIFEST_BLOB_UNKNOWN", Kind: store.KindInvalidInput}
	// CodeManifestChildUnknown: an index references a manifest that
	// is not in the image. Error.Digest names it.
	CodeManifestChildUnknown = store.Code{Name: "CONTAINER_MANIFEST_CHILD_UNKNOWN", Kind: store.KindInvalidInput}
	// CodeManifestReferenced: the manifest is listed by an active
	// index or manifest list. Error.Digest names the index.
	CodeManifestReferenced = store.Code{Name: "CONTAINER_MANIFEST_REFERENCED", Kind: store.KindConflict}
	// CodeTooManyManifests: the image holds MaxManifestsPerImage.
	CodeTooManyManifests = store.Code{Name: "CONTAINER_TOO_MANY_MANIFESTS", Kind: store.KindConflict}
)

// MaxManifestsPerImage bounds one image (25,000; docs/schema.md, "Lengths, names and
// limits").
const MaxManifestsPerImage = 25000

// Target is a resolved /v2/<namespace>/<repository>/<image> name:
// the namespace, the hosted container repository and, once pushed, the
// image.
type Target struct {
	NamespaceID   uuid.UUID
	NamespaceSlug string
	// NamespaceState says why the namespace does not serve everything
	// ("blocked", "disabled", "suspended"); "" when it does.
	NamespaceState        string
	ServesReads           bool // serving predicate for reads (docs/schema.md, "Status columns and serving")
	ServesWrites          bool // ... and for writes (not suspended)
	RepositoryID          uuid.UUID
	RepositoryName        string
	ContainerRepositoryID uuid.UUID
	Format                enum.Format
	Visibility            enum.Visibility
	ImageName             string
	// ImageID is uuid.Nil until the image's first push creates it (for
	// a pull-through cache: until its first pull cached it).
	ImageID uuid.UUID
	// Remote is set when the repository is a pull-through cache (kind
	// REMOTE); ContainerRepositoryID is then its
	// container_remote_repositories row.
	Remote *RemoteTarget
	// Virtual is set when the repository is a virtual repository: the
	// protocol resolves the name through its upstreams (store.VirtualTree);
	// ContainerRepositoryID and ImageID are then unset.
	Virtual bool
	// Via is the name of the virtual repository a write was sent to, when
	// this is its deploy target: the names clients see (Location headers,
	// error details) keep the virtual's.
	Via string
}

// Name is the OCI name <namespace>/<repository>/<image> (the virtual
// repository's name for a deploy target reached through it).
func (t *Target) Name() string {
	repo := t.RepositoryName
	if t.Via != "" {
		repo = t.Via
	}
	return t.NamespaceSlug + "/" + repo + "/" + t.ImageName
}

// resolveTargetSQL resolves the namespace's state, the repository, the
// container repository and the image in one round trip once the namespace
// id is known. Every partitioned table is named with namespace_id = $1, so
// the planner prunes each one to one partition before it plans (a join on
// n.id instead would plan all 64 partitions of each: two orders of
// magnitude slower to plan).
//
// Every OCI request runs it, so it names the namespace's partitions
// (partition.Statements): on the partitioned parents PostgreSQL planned it
// again at each call to prune three tables (about 0.45 ms); on single
// partitions it runs on a plan cached per connection.
var resolveTargetSQL = partition.Statements(`
SELECT `+resolveColumns+`
FROM namespaces n `+resolveJoins+`
WHERE n.id = $1`, "repositories", "container_repositories", "container_images")

const (
	resolveColumns = `n.deleted_at, n.purged_at, n.blocked_at, n.disabled_at, n.suspended_at,
       r.id, r.format, r.kind, r.visibility, cr.id, ci.id`
	resolveJoins = `
LEFT JOIN {repositories} r
       ON r.namespace_id = $1 AND r.name = $2 AND r.soft_deleted_at IS NULL
LEFT JOIN {container_repositories} cr
       ON cr.namespace_id = $1 AND cr.repository_id = r.id
LEFT JOIN {container_images} ci
       ON ci.namespace_id = $1 AND ci.container_repository_id = cr.id AND ci.name = $3 AND ci.soft_deleted_at IS NULL`
)

// resolveTargetTagSQL is resolveTargetSQL that also reads the active
// manifest tag $4 of the image points at (manifestByTagSQL): a manifest
// GET by tag, the commonest pull request, in one round trip instead of
// two.
var resolveTargetTagSQL = partition.Statements(`
SELECT `+resolveColumns+`, `+manifestRowColumns+`
FROM namespaces n `+resolveJoins+`
LEFT JOIN LATERAL (
	SELECT `+manifestRowColumns+` FROM {container_tags} ct
	JOIN {container_manifests} cm ON cm.namespace_id = ct.namespace_id AND cm.id = ct.container_manifest_id
	WHERE ct.namespace_id = $1 AND cm.namespace_id = $1 AND ct.container_image_id = ci.id AND ct.name = $4
	  AND cm.soft_deleted_at IS NULL) cm ON true
WHERE n.id = $1`, "repositories", "container_repositories", "container_images", "container_tags", "container_manifests")

// resolveTargetDigestSQL is resolveTargetTagSQL for a manifest named by
// its digest $4 (manifestByDigestSQL): the GETs of an index's children
// and of pulls by digest.
var resolveTargetDigestSQL = partition.Statements(`
SELECT `+resolveColumns+`, `+manifestRowColumns+`
FROM namespaces n `+resolveJoins+`
LEFT JOIN LATERAL (
	SELECT `+manifestRowColumns+` FROM {container_manifests} cm
	WHERE cm.namespace_id = $1 AND cm.container_image_id = ci.id AND cm.digest = $4 AND cm.soft_deleted_at IS NULL) cm ON true
WHERE n.id = $1`, "repositories", "container_repositories", "container_images", "container_manifests")

// resolvedRow is what the resolve statements read about a name.
type resolvedRow struct {
	deleted, purged, blocked, disabled, suspended *time.Time
	repoID, crID, imageID                         *uuid.UUID
	format, kind, visibility                      *int16
}

func (r *resolvedRow) dest() []any {
	return []any{&r.deleted, &r.purged, &r.blocked, &r.disabled, &r.suspended,
		&r.repoID, &r.format, &r.kind, &r.visibility, &r.crID, &r.imageID}
}

// NamespaceID returns the id of a namespace by slug (deleted ones
// included), cached by the core store. CodeNameUnknown when there is none.
func (s *Store) NamespaceID(ctx context.Context, slug string) (uuid.UUID, error) {
	id, err := s.core.NamespaceID(ctx, slug)
	if store.HasCode(err, store.CodeNotFound) {
		return uuid.Nil, errs.New(CodeNameUnknown, "container repository unknown: namespace %q not found", slug)
	}
	return id, err
}

// ResolveTarget resolves an OCI name (two round trips; see
// ResolveTargetIn for one).
func (s *Store) ResolveTarget(ctx context.Context, namespace, repository, image string) (*Target, error) {
	nsID, err := s.NamespaceID(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return s.ResolveTargetIn(ctx, nsID, namespace, repository, image)
}

// ResolveTargetIn resolves an OCI name in the namespace nsID (whose
// slug is namespace). CodeNameUnknown (wrapped with the reason) when
// the namespace does not exist or is deleted, or when the repository is
// missing, in the trash, or not a container repository. A REMOTE
// repository (a pull-through cache) resolves with Remote set, in a second
// round trip; a VIRTUAL one with Virtual set (its upstreams are the
// protocol's to resolve); hosted names keep their one round trip.
// Blocked, disabled and suspended namespaces resolve, with
// ServesReads/ServesWrites telling what they allow.
func (s *Store) ResolveTargetIn(ctx context.Context, nsID uuid.UUID, namespace, repository, image string) (*Target, error) {
	var r resolvedRow
	err := partition.QueryRow(ctx, s.pool, &resolveTargetSQL, nsID, repository, image).Scan(r.dest()...)
	return s.target(ctx, nsID, namespace, repository, image, &r, err)
}

// ResolveTargetTagIn is ResolveTargetIn that also looks tag up in a
// hosted target's image, in the same round trip: the manifest is nil
// when the tag names no active manifest there (or the target is not
// hosted). The caller authorizes the target before it uses the manifest.
func (s *Store) ResolveTargetTagIn(ctx context.Context, nsID uuid.UUID, namespace, repository, image, tag string) (*Target, *ManifestRow, error) {
	return s.resolveWithManifest(ctx, &resolveTargetTagSQL, nsID, namespace, repository, image, tag)
}

// ResolveTargetDigestIn is ResolveTargetTagIn for a manifest named by its
// digest.
func (s *Store) ResolveTargetDigestIn(ctx context.Context, nsID uuid.UUID, namespace, repository, image string, sha [32]byte) (*Target, *ManifestRow, error) {
	return s.resolveWithManifest(ctx, &resolveTargetDigestSQL, nsID, namespace, repository, image, sha[:])
}

// resolveWithManifest runs a resolve statement that also reads the
// manifest that ref ($4) names in the image.
func (s *Store) resolveWithManifest(ctx context.Context, stmts *[partition.Count]string, nsID uuid.UUID, namespace, repository, image string, ref any) (*Target, *ManifestRow, error) {
	var (
		r   resolvedRow
		m   ManifestRow
		id  *uuid.UUID
		dig []byte
		mt  *string
		sz  *int64
	)
	err := partition.QueryRow(ctx, s.pool, stmts, nsID, repository, image, ref).
		Scan(append(r.dest(), &id, &dig, &mt, &sz)...)
	t, err := s.target(ctx, nsID, namespace, repository, image, &r, err)
	if err != nil || id == nil || t.Remote != nil || t.Virtual {
		return t, nil, err
	}
	if len(dig) != 32 || mt == nil || sz == nil {
		return nil, nil, fmt.Errorf("store: manifest row of %s/%s:%v with a %d-byte digest", repository, image, ref, len(dig))
	}
	m.ID, m.Digest, m.MediaType, m.Size = *id, [32]byte(dig), *mt, *sz
	return t, &m, nil
}

// resolveTargetBlobSQL is resolveTargetSQL that also says whether the
// image links the active blob $4: with the blob row read in the same
// batch, a blob GET or HEAD takes one round trip.
var resolveTargetBlobSQL = partition.Statements(`
SELECT `+resolveColumns+`, EXISTS (
	SELECT 1 FROM {container_blobs} cb
	WHERE cb.namespace_id = $1 AND cb.container_image_id = ci.id AND cb.digest = $4 AND cb.soft_deleted_at IS NULL)
FROM namespaces n `+resolveJoins+`
WHERE n.id = $1`, "repositories", "container_repositories", "container_images", "container_blobs")

// ResolveTargetBlobIn is ResolveTargetIn that also reads, in the same
// round trip, the blob row of sha when the hosted target's image links
// it: the blob is nil when the image does not (or the target is not
// hosted). The caller authorizes the target before it uses the blob.
func (s *Store) ResolveTargetBlobIn(ctx context.Context, nsID uuid.UUID, namespace, repository, image string, sha [32]byte) (*Target, *store.Blob, error) {
	part, err := partition.Of(ctx, s.pool, nsID)
	if err != nil {
		return nil, nil, err
	}
	var (
		r       resolvedRow
		linked  bool
		blob    *store.Blob
		batch   pgx.Batch
		readErr error
	)
	batch.Queue(resolveTargetBlobSQL[part], nsID, repository, image, sha[:]).QueryRow(func(row pgx.Row) error {
		readErr = row.Scan(append(r.dest(), &linked)...)
		return nil // target explains it
	})
	s.core.QueueStatBlob(&batch, nsID, sha, &blob)
	// A batch that failed before the resolve's row (no connection, say)
	// fails whole: its error comes first.
	if err := s.pool.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: resolve %s/%s with a blob: %w", namespace, repository, err))
	}
	t, err := s.target(ctx, nsID, namespace, repository, image, &r, readErr)
	if err != nil {
		return nil, nil, err
	}
	if !linked || blob == nil || t.Remote != nil || t.Virtual {
		return t, nil, nil
	}
	return t, blob, nil
}

// target turns what a resolve statement read (r, or its error) into the
// target: CodeNameUnknown with the reason when the name does not resolve.
func (s *Store) target(ctx context.Context, nsID uuid.UUID, namespace, repository, image string, r *resolvedRow, err error) (*Target, error) {
	t := &Target{NamespaceSlug: namespace, RepositoryName: repository, ImageName: image}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (r.deleted != nil || r.purged != nil)) {
		return nil, errs.New(CodeNameUnknown, "container repository unknown: namespace %q not found", namespace)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: resolve %s/%s: %w", namespace, repository, err))
	}
	if r.repoID == nil {
		return nil, errs.New(CodeNameUnknown, "container repository unknown: repository %q not found in namespace %q", repository, namespace)
	}
	f := enum.Format(*r.format)
	if f != enum.FormatDocker && f != enum.FormatOCI {
		return nil, errs.New(CodeNameUnknown, "container repository unknown: repository %s/%s is not a container repository", namespace, repository)
	}
	remote := enum.Kind(*r.kind) == enum.KindRemote
	virtual := enum.Kind(*r.kind) == enum.KindVirtual
	if !remote && !virtual && (enum.Kind(*r.kind) != enum.KindHosted || r.crID == nil) {
		return nil, errs.New(CodeNameUnknown, "container repository unknown: repository %s/%s is not a hosted or remote container repository", namespace, repository)
	}
	t.NamespaceID, t.RepositoryID = nsID, *r.repoID
	if r.crID != nil {
		t.ContainerRepositoryID = *r.crID
	}
	// Serving predicate (docs/schema.md, "Status columns and serving"): reads need the namespace neither blocked
	// nor disabled; writes also need it not suspended.
	switch {
	case r.blocked != nil:
		t.NamespaceState = "blocked"
	case r.disabled != nil:
		t.NamespaceState = "disabled"
	case r.suspended != nil:
		t.NamespaceState = "suspended"
	}
	t.ServesReads = r.blocked == nil && r.disabled == nil
	t.ServesWrites = t.ServesReads && r.suspended == nil
	t.Format, t.Visibility = f, enum.Visibility(*r.visibility)
	if virtual {
		t.Virtual = true
		return t, nil
	}
	if remote {
		if err := s.resolveRemote(ctx, t); err != nil {
			return nil, err
		}
		return t, nil
	}
	if r.imageID != nil {
		t.ImageID = *r.imageID
	}
	return t, nil
}

// statBlobs reads the blob rows of digests of one namespace. The digests
// are constants of the statement, so blob_storage_blobs (HASH(sha256)) is
// pruned to their partitions at plan time; joining it to a format table on
// its sha256 column instead plans all 64 partitions, which costs far more
// than this second round trip.
func statBlobs(ctx context.Context, q db.Queryer, nsID uuid.UUID, shas [][]byte) (map[[32]byte]*store.Blob, error) {
	rows, err := q.Query(ctx, `SELECT `+store.BlobColumns+` FROM blob_storage_blobs b
		WHERE b.namespace_id = $1 AND b.sha256 = ANY($2::bytea[])`, nsID, shas)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stat blobs: %w", err))
	}
	defer rows.Close()
	out := make(map[[32]byte]*store.Blob, len(shas))
	for rows.Next() {
		b := &store.Blob{}
		dest, finish := store.ScanBlobInto(b)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("store: stat blobs: %w", err)
		}
		if err := finish(); err != nil {
			return nil, err
		}
		out[b.SHA256] = b
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stat blobs: %w", err))
	}
	return out, nil
}

// The statements of EnsureImage, which every blob link and manifest push
// runs, name the namespace's partition (see resolveTargetSQL).
var (
	insertImageSQL = partition.Statements(`
		INSERT INTO {container_images} (id, namespace_id, container_repository_id, name)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (namespace_id, container_repository_id, name) WHERE soft_deleted_at IS NULL DO NOTHING
		RETURNING id`, "container_images")
	selectImageSQL = partition.Statements(`
		SELECT id FROM {container_images}
		WHERE namespace_id = $1 AND container_repository_id = $2 AND name = $3 AND soft_deleted_at IS NULL`, "container_images")
)

// EnsureImage returns the id of the target's active image, creating it on
// first push (inside the caller's transaction, so a failed push leaves no
// image behind). t.ImageID is updated.
func EnsureImage(ctx context.Context, tx pgx.Tx, t *Target) (uuid.UUID, error) {
	part, err := partition.Of(ctx, tx, t.NamespaceID)
	if err != nil {
		return uuid.Nil, err
	}
	// The image exists for every push but an image's first: reading it
	// first costs them one round trip. An insert that finds the image
	// created meanwhile returns no row; the read after it, a new
	// statement, sees it.
	var got uuid.UUID
	selectImage := func() error {
		return tx.QueryRow(ctx, selectImageSQL[part], pgx.QueryExecModeCacheStatement,
			t.NamespaceID, t.ContainerRepositoryID, t.ImageName).Scan(&got)
	}
	err = selectImage()
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, insertImageSQL[part], pgx.QueryExecModeCacheStatement,
			db.NewID(), t.NamespaceID, t.ContainerRepositoryID, t.ImageName).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			err = selectImage()
		}
		if errors.Is(err, pgx.ErrNoRows) {
			// The image another push created, which our insert ran into,
			// was purged before the read: the next attempt creates it.
			return uuid.Nil, db.ErrRace
		}
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("store: image %q: %w", t.ImageName, err)
	}
	t.ImageID = got
	return got, nil
}

// CatalogEntry is one image of the catalog.
type CatalogEntry struct {
	Namespace, Repository, Image string
}

// ReadFilter selects repositories by visibility or id: every one
// (All), or those whose visibility is in Visibilities, or whose id is in
// IDs. auth.ReadableRepositories computes it for a caller.
type ReadFilter struct {
	All          bool
	Visibilities []enum.Visibility
	IDs          []uuid.UUID
}

func (f ReadFilter) args() (bool, []int16, []uuid.UUID) {
	vis := make([]int16, len(f.Visibilities))
	for i, v := range f.Visibilities {
		vis[i] = int16(v)
	}
	ids := f.IDs
	if ids == nil {
		ids = []uuid.UUID{}
	}
	return f.All, vis, ids
}

// CatalogFilter is what a catalog caller may read: Own applies to the
// repositories of namespace NamespaceID (the caller's own, uuid.Nil for
// none), Others to every other namespace.
type CatalogFilter struct {
	NamespaceID uuid.UUID
	Own         ReadFilter
	Others      ReadFilter
}

// Catalog lists the listed images (active, holding a live manifest) of
// active hosted container repositories across namespaces that serve
// reads, ordered by (namespace,
// repository, image), after the given entry (nil: from the start), limited
// to the repositories the filter admits.
func (s *Store) Catalog(ctx context.Context, filter CatalogFilter, after *CatalogEntry, limit int) ([]CatalogEntry, error) {
	var a CatalogEntry
	if after != nil {
		a = *after
	}
	ownAll, ownVis, ownIDs := filter.Own.args()
	othAll, othVis, othIDs := filter.Others.args()
	rows, err := s.pool.Query(ctx, `
		SELECT n.slug, r.name, ci.name
		FROM container_images ci
		JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
		JOIN repositories r ON r.namespace_id = cr.namespace_id AND r.id = cr.repository_id
		JOIN namespaces n ON n.id = ci.namespace_id
		WHERE ci.soft_deleted_at IS NULL AND `+listedImage("ci.namespace_id")+`
		  AND r.soft_deleted_at IS NULL AND r.kind = $1
		  AND n.deleted_at IS NULL AND n.purged_at IS NULL AND n.blocked_at IS NULL AND n.disabled_at IS NULL
		  AND CASE WHEN n.id = $2
		      THEN $3 OR r.visibility = ANY($4::smallint[]) OR r.id = ANY($5::uuid[])
		      ELSE $6 OR r.visibility = ANY($7::smallint[]) OR r.id = ANY($8::uuid[]) END
		  AND (n.slug, r.name, ci.name) > ($9, $10, $11)
		ORDER BY n.slug, r.name, ci.name
		LIMIT $12`,
		int16(enum.KindHosted), filter.NamespaceID, ownAll, ownVis, ownIDs, othAll, othVis, othIDs,
		a.Namespace, a.Repository, a.Image, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: catalog: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CatalogEntry, error) {
		var e CatalogEntry
		err := r.Scan(&e.Namespace, &e.Repository, &e.Image)
		return e, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: catalog: %w", err))
	}
	return out, nil
}
