package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ManifestRow is an active manifest of an image. Payload, the blob
// row holding its bytes, is filled by ManifestPayload (lookups by
// tag or digest leave it empty, so that a caller holding the bytes in a
// cache saves the round trip).
type ManifestRow struct {
	ID        uuid.UUID
	Digest    [32]byte
	MediaType string
	// Size is the whole tree's size (container_manifests.size); the payload
	// size is Payload.Size.
	Size    int64
	Payload store.Blob
}

// ManifestPayload fills m.Payload: one lookup on the digest's partition
// of the blob rows, on a plan cached per connection (every manifest GET
// runs it; withPayloads, on the partitioned parent, is planned again at
// each call).
func (s *Store) ManifestPayload(ctx context.Context, t *Target, m *ManifestRow) error {
	b, err := s.core.StatBlob(ctx, t.NamespaceID, m.Digest)
	if err != nil {
		return err
	}
	m.Payload = *b
	return nil
}

const manifestRowColumns = `cm.id, cm.digest, cm.media_type, cm.size`

func scanManifestRow(row pgx.Row) (*ManifestRow, error) {
	var (
		m   ManifestRow
		dig []byte
	)
	if err := row.Scan(&m.ID, &dig, &m.MediaType, &m.Size); err != nil {
		return nil, err
	}
	if len(dig) != 32 {
		return nil, fmt.Errorf("store: manifest row with a %d-byte digest", len(dig))
	}
	m.Digest = [32]byte(dig)
	return &m, nil
}

// withPayloads fills the payload blob rows of manifests (their digest is
// their payload's sha256) in one pruned lookup.
func (s *Store) withPayloads(ctx context.Context, nsID uuid.UUID, ms []*ManifestRow) error {
	if len(ms) == 0 {
		return nil
	}
	shas := make([][]byte, len(ms))
	for i, m := range ms {
		shas[i] = m.Digest[:]
	}
	blobs, err := statBlobs(ctx, s.pool, nsID, shas)
	if err != nil {
		return err
	}
	for _, m := range ms {
		b, ok := blobs[m.Digest]
		if !ok {
			return errs.WithDigest(store.CodeBlobUnknown, m.Digest, "blob unknown")
		}
		m.Payload = *b
	}
	return nil
}

// The manifest lookups of every pull name the namespace's partitions
// (see resolveTargetSQL).
var (
	manifestByTagSQL = partition.Statements(`
		SELECT `+manifestRowColumns+`
		FROM {container_tags} ct
		JOIN {container_manifests} cm ON cm.namespace_id = ct.namespace_id AND cm.id = ct.container_manifest_id
		WHERE ct.namespace_id = $1 AND cm.namespace_id = $1 AND ct.container_image_id = $2 AND ct.name = $3
		  AND cm.soft_deleted_at IS NULL`, "container_tags", "container_manifests")
	manifestByDigestSQL = partition.Statements(`
		SELECT `+manifestRowColumns+`
		FROM {container_manifests} cm
		WHERE cm.namespace_id = $1 AND cm.container_image_id = $2 AND cm.digest = $3 AND cm.soft_deleted_at IS NULL`,
		"container_manifests")
)

// ManifestUnknown is the error of a tag that names no active manifest.
func ManifestUnknown() error { return errs.New(CodeManifestUnknown, "manifest unknown") }

// ManifestUnknownDigest is ManifestUnknown for a manifest named by its
// digest, which the error carries.
func ManifestUnknownDigest(sha [32]byte) error {
	return errs.WithDigest(CodeManifestUnknown, sha, "manifest unknown")
}

// ManifestByTag returns the active manifest a tag points at.
func (s *Store) ManifestByTag(ctx context.Context, t *Target, tag string) (*ManifestRow, error) {
	if t.ImageID == uuid.Nil {
		return nil, ManifestUnknown()
	}
	m, err := scanManifestRow(partition.QueryRow(ctx, s.pool, &manifestByTagSQL, t.NamespaceID, t.ImageID, tag))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ManifestUnknown()
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: manifest by tag: %w", err))
	}
	return m, nil
}

// ManifestByDigest returns the image's active manifest of a digest.
func (s *Store) ManifestByDigest(ctx context.Context, t *Target, sha [32]byte) (*ManifestRow, error) {
	if t.ImageID == uuid.Nil {
		return nil, ManifestUnknownDigest(sha)
	}
	m, err := scanManifestRow(partition.QueryRow(ctx, s.pool, &manifestByDigestSQL, t.NamespaceID, t.ImageID, sha[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ManifestUnknownDigest(sha)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: manifest by digest: %w", err))
	}
	return m, nil
}

// ReadManifest reads a manifest's payload (bounded by max bytes).
func (s *Store) ReadManifest(ctx context.Context, m *ManifestRow, max int64) ([]byte, error) {
	if m.Payload.ObjectStorageKey == "" {
		return nil, fmt.Errorf("store: manifest %s: payload row not loaded", store.FormatSHA256(m.Digest))
	}
	if m.Payload.Size > max {
		return nil, fmt.Errorf("store: manifest %s payload is %d bytes, over %d", store.FormatSHA256(m.Digest), m.Payload.Size, max)
	}
	r, err := s.core.OpenBlobObject(ctx, &m.Payload, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]byte, 0, m.Payload.Size)
	w := bytes.NewBuffer(buf)
	if _, err := io.Copy(w, io.LimitReader(r, m.Payload.Size+1)); err != nil {
		return nil, fmt.Errorf("store: read manifest %s: %w", store.FormatSHA256(m.Digest), err)
	}
	if int64(w.Len()) != m.Payload.Size {
		return nil, fmt.Errorf("store: manifest %s: object has %d bytes, row says %d", store.FormatSHA256(m.Digest), w.Len(), m.Payload.Size)
	}
	return w.Bytes(), nil
}

// BlobRef is a blob a manifest references.
type BlobRef struct {
	SHA256 [32]byte
	Size   int64
}

// ManifestPut is a validated manifest to store.
type ManifestPut struct {
	Digest    [32]byte
	MediaType string
	Payload   []byte
	// Blobs (config and distributable layers) must be active blobs of the
	// image; Children (index / manifest list entries) active manifests.
	Blobs    []BlobRef
	Children [][32]byte
	// Subject is the digest of the manifest's OCI subject (nil: none);
	// ArtifactType what the referrers API reports for it ("": none). Both
	// are recorded on the row (container_manifests_subject_idx).
	Subject      *[32]byte
	ArtifactType string
	// Tags are pointed at the manifest (created or moved).
	Tags []string
}

// ManifestPutResult reports a stored manifest.
type ManifestPutResult struct {
	ManifestID uuid.UUID
	// Created: a new manifest row (false: it was already in the image).
	Created bool
}

// PutManifest stores a manifest in the target's image (creating
// the image on first push) and points the tags at it.
//
// The payload is stored as a content-addressed blob (deduplicated) in the
// same foreground transaction that records the manifest (manifestLink):
// the referenced container_blobs rows and child manifest rows are locked
// FOR SHARE (so a concurrent delete cannot remove them under the push,
// while other pushes sharing them go on), a missing one failing with
// CodeManifestBlobUnknown / CodeManifestChildUnknown; then the payload's
// blob row is inserted or locked, and the manifest row is inserted with
// its own attachment, its size being the payload plus the referenced
// blobs and child trees; index relationships are inserted; tags are
// upserted (a moved tag keeps its row). A manifest already in the image is
// not stored again: only its tags change. One transaction means one
// commit waiting for the disk per push.
//
// No payload is left behind unreferenced: the bytes wait in an upload
// until every statement has run, so when the transaction fails (a missing
// reference, a limit, a lost connection) its blob row goes with it and the
// upload is cancelled. The references are checked only there, under their
// locks: a separate check before the upload cost every push a round trip
// and a statement planned again at each call (0.48 ms of PostgreSQL's
// time), to spare a refused push the write of its payload to an upload.
//
// The payload is staged (its session row, its bytes written and synced)
// on a connection of its own while the transaction runs the statements
// that come before the blob row; it is committed from there without
// reading its session back.
func (s *Store) PutManifest(ctx context.Context, t *Target, in ManifestPut) (*ManifestPutResult, error) {
	var res ManifestPutResult
	pending := s.core.StageBlobAsync(ctx, t.UploadRef(uuid.Nil), in.Payload,
		store.Expected{SHA256: in.Digest, Size: int64(len(in.Payload))})
	link := s.manifestLink(ctx, t, in, &res)
	err := s.core.WithStagedTx(ctx, pending, func(tx pgx.Tx) error {
		if err := link.Before(tx); err != nil {
			return err
		}
		staged, err := pending.Wait()
		if err != nil {
			return err
		}
		_, err = s.core.CommitStaged(ctx, tx, staged, func(u store.StagedUse) error { return link.Use(tx, u) })
		return err
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// The statements of a manifest push name the namespace's partitions (see
// resolveTargetSQL): on the partitioned parents each was planned again at
// every call (0.15 to 0.4 ms each, about 1.4 ms per push in all).
var (
	// activeManifestSQL reads the image's buffered count of manifests
	// (NULL when the image is no longer active) and its active manifest
	// of the digest, locked FOR SHARE (NULL when none).
	activeManifestSQL = partition.Statements(`
		SELECT (SELECT artifacts_count FROM {container_images}
		        WHERE namespace_id = $1 AND id = $2 AND soft_deleted_at IS NULL),
		       (SELECT id FROM {container_manifests}
		        WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL
		        FOR SHARE)`, "container_images", "container_manifests")
	countManifestsSQL = partition.Statements(`
		SELECT count(*) FROM {container_manifests}
		WHERE namespace_id = $1 AND container_image_id = $2 AND soft_deleted_at IS NULL`, "container_manifests")
	// lockManifestBlobsSQL locks the image's rows of a manifest's blobs
	// and reads their sizes from the namespace's shadow of the blob rows
	// (one partition; the blob rows themselves are partitioned by digest).
	//
	// It and lockChildManifestsSQL look each digest up on its own, in a
	// LATERAL subquery that holds the lock: a subquery with FOR SHARE is
	// never merged into the join, so the rows are locked in the order of
	// $3, which the caller sorts, and on its generic plan (genericPlansOn)
	// the statement reads each digest's row through the image's unique
	// index and no other row. A plain join or digest = ANY($3) leaves the
	// order to the planner, which could read every row of the image and
	// match the digests against them.
	lockManifestBlobsSQL = partition.Statements(`
		SELECT cb.digest, coalesce(s.size, 0) FROM unnest($3::bytea[]) AS d(digest)
		CROSS JOIN LATERAL (
			SELECT digest FROM {container_blobs}
			WHERE namespace_id = $1 AND container_image_id = $2 AND digest = d.digest AND soft_deleted_at IS NULL
			FOR SHARE) cb
		LEFT JOIN {blob_storage_blobs_by_namespace} s ON s.namespace_id = $1 AND s.sha256 = cb.digest`,
		"container_blobs", "blob_storage_blobs_by_namespace")
	lockChildManifestsSQL = partition.Statements(`
		SELECT m.id, m.digest, m.size FROM unnest($3::bytea[]) AS d(digest)
		CROSS JOIN LATERAL (
			SELECT id, digest, size FROM {container_manifests}
			WHERE namespace_id = $1 AND container_image_id = $2 AND digest = d.digest AND soft_deleted_at IS NULL
			FOR SHARE) m`, "container_manifests")
	// insertManifestSQL attaches the payload's blob and inserts the
	// manifest row on it. When a concurrent push inserted the digest
	// first, it inserts no manifest, and the transaction, attachment
	// included, is retried.
	insertManifestSQL = partition.Statements(`
		WITH att AS (
			INSERT INTO blob_storage_attachments (namespace_id, sha256) VALUES ($1, $4) RETURNING id
		)
		INSERT INTO {container_manifests} (namespace_id, id, container_image_id, digest, media_type,
		                                   blob_storage_attachment_id, blob_sha256, size, blob_references_recorded,
		                                   subject_digest, artifact_type, subject_recorded)
		SELECT $1, $2, $3, $4, $5, att.id, $4, $6, true, $7, NULLIF($8, ''), true FROM att
		ON CONFLICT (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL DO NOTHING`,
		"container_manifests")
	insertRelationshipsSQL = partition.Statements(`
		INSERT INTO {container_manifest_relationships}
		       (namespace_id, id, container_image_id, parent_container_manifest_id, child_container_manifest_id)
		SELECT $1, rid, $2, $3, cid FROM unnest($4::uuid[], $5::uuid[]) AS u(rid, cid)
		ON CONFLICT (namespace_id, parent_container_manifest_id, child_container_manifest_id) DO NOTHING`,
		"container_manifest_relationships")
	upsertTagsSQL = partition.Statements(`
		INSERT INTO {container_tags} AS ct (id, namespace_id, container_image_id, container_manifest_id, name)
		SELECT id, $1, $2, $3, name FROM unnest($4::uuid[], $5::text[]) AS u(id, name)
		ORDER BY name
		ON CONFLICT (namespace_id, container_image_id, name) DO UPDATE
		SET container_manifest_id = EXCLUDED.container_manifest_id
		WHERE ct.container_manifest_id IS DISTINCT FROM EXCLUDED.container_manifest_id`, "container_tags")
)

// manifestLink records the manifest in the transaction that commits its
// payload. Before takes what comes ahead of the payload's blob row in the
// lock order: the image, an existing manifest of the digest, and the rows
// the manifest references; Use, under the blob-row lock, attaches the
// payload and inserts the manifest, or only moves the tags of an existing
// one. res is set afresh by every attempt.
func (s *Store) manifestLink(ctx context.Context, t *Target, in ManifestPut, res *ManifestPutResult) store.UploadLink {
	var (
		imageID uuid.UUID
		refs    manifestRefs
	)
	return store.UploadLink{
		Before: func(tx pgx.Tx) (err error) {
			*res = ManifestPutResult{}
			// The image the request resolved, or a new one on its first
			// push; whether it is still active is read with the manifest.
			if imageID = t.ImageID; imageID == uuid.Nil {
				if imageID, err = EnsureImage(ctx, tx, t); err != nil {
					return err
				}
			}
			l, err := lockManifest(ctx, tx, t.NamespaceID, imageID, in)
			switch {
			case err != nil:
				return err
			case l.imageArtifacts == nil:
				t.ImageID = uuid.Nil // deleted since it was read: the retry creates it again
				return db.ErrRace
			case l.existing != nil:
				res.ManifestID = *l.existing
				return nil
			case l.missing != nil:
				return l.missing
			}
			refs = l.refs
			return checkManifestLimit(ctx, tx, t, imageID, *l.imageArtifacts)
		},
		Use: func(tx pgx.Tx, u store.StagedUse) error {
			if res.ManifestID != uuid.Nil {
				return upsertTags(ctx, tx, t.NamespaceID, imageID, res.ManifestID, in.Tags)
			}
			// The manifest's insert attaches the payload.
			if err := store.ClearStagedCandidate(ctx, tx, u); err != nil {
				return err
			}
			id, err := insertManifest(ctx, tx, t, imageID, in, refs)
			if err != nil {
				return err
			}
			res.ManifestID, res.Created = id, true
			return nil
		},
	}
}

// manifestRefs is what a new manifest row takes from the rows it
// references: its size (the payload's, the blobs' and the child trees'),
// its blobs' digests and its children.
type manifestRefs struct {
	size     int64
	blobs    [][]byte
	childIDs []uuid.UUID
}

// manifestLocks is what lockManifest read under its locks.
type manifestLocks struct {
	imageArtifacts *int64     // the image's buffered count of manifests; nil when it is no longer active
	existing       *uuid.UUID // the image's active manifest of the digest
	refs           manifestRefs
	missing        error // a reference the image does not hold
}

// lockManifest reads, in one pipeline, the image's buffered count of
// manifests (whether it is still active) and its manifest of the digest,
// locked FOR SHARE when it exists, then locks the rows a new manifest of
// in would reference FOR SHARE, in digest order, and sums the manifest's
// size. The references are locked even when the manifest exists, which
// the caller learns only from the results: a lookup per reference is
// cheaper than a round trip. The lock statements run on their generic
// plan (genericPlansOn).
func lockManifest(ctx context.Context, tx pgx.Tx, nsID, imageID uuid.UUID, in ManifestPut) (manifestLocks, error) {
	part, err := partition.Of(ctx, tx, nsID)
	if err != nil {
		return manifestLocks{}, err
	}
	// Each digest counted once, locked in digest order.
	blobs := distinctSHA(func(yield func([32]byte) bool) {
		for _, b := range in.Blobs {
			if !yield(b.SHA256) {
				return
			}
		}
	})
	children := distinctSHA(slices.Values(in.Children))
	b := &pgx.Batch{}
	b.Queue(activeManifestSQL[part], nsID, imageID, in.Digest[:])
	references := len(blobs) > 0 || len(children) > 0
	if references {
		b.Queue(genericPlansOn)
		if len(blobs) > 0 {
			b.Queue(lockManifestBlobsSQL[part], nsID, imageID, blobs)
		}
		if len(children) > 0 {
			b.Queue(lockChildManifestsSQL[part], nsID, imageID, children)
		}
		b.Queue(genericPlansOff)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	l := manifestLocks{refs: manifestRefs{size: int64(len(in.Payload)), blobs: blobs, childIDs: make([]uuid.UUID, 0, len(children))}}
	if err := br.QueryRow().Scan(&l.imageArtifacts, &l.existing); err != nil {
		return manifestLocks{}, fmt.Errorf("store: manifest exists: %w", err)
	}
	if references {
		if err := l.readReferences(br, in, len(blobs) > 0, len(children) > 0); err != nil {
			return manifestLocks{}, err
		}
	}
	if err := br.Close(); err != nil {
		return manifestLocks{}, fmt.Errorf("store: lock manifest references: %w", err)
	}
	return l, nil
}

// readReferences reads the lock statements' results from br: the
// referenced rows' sizes and the children's ids, and the first reference
// the image lacks in l.missing.
func (l *manifestLocks) readReferences(br pgx.BatchResults, in ManifestPut, blobs, children bool) error {
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("store: lock manifest references: %w", err)
	}
	if blobs {
		found := map[[32]byte]bool{}
		if err := scanBatch(br, func(rows pgx.Rows) error {
			var (
				d  []byte
				sz int64
			)
			if err := rows.Scan(&d, &sz); err != nil {
				return err
			}
			found[[32]byte(d)], l.refs.size = true, l.refs.size+sz
			return nil
		}); err != nil {
			return fmt.Errorf("store: lock manifest blobs: %w", err)
		}
		for _, b := range in.Blobs {
			if !found[b.SHA256] && l.missing == nil {
				l.missing = errs.WithDigest(CodeManifestBlobUnknown, b.SHA256, "manifest references a blob unknown in the image")
			}
		}
	}
	if children {
		found := map[[32]byte]bool{}
		if err := scanBatch(br, func(rows pgx.Rows) error {
			var (
				id uuid.UUID
				d  []byte
				sz int64
			)
			if err := rows.Scan(&id, &d, &sz); err != nil {
				return err
			}
			found[[32]byte(d)], l.refs.size = true, l.refs.size+sz
			l.refs.childIDs = append(l.refs.childIDs, id)
			return nil
		}); err != nil {
			return fmt.Errorf("store: lock child manifests: %w", err)
		}
		for _, c := range in.Children {
			if !found[c] && l.missing == nil {
				l.missing = errs.WithDigest(CodeManifestChildUnknown, c, "index references a manifest unknown in the image")
			}
		}
	}
	_, err := br.Exec()
	return err
}

// genericPlansOn and genericPlansOff bracket statements that PostgreSQL
// must run on their generic plan. The lock statements take their digests
// as an array, whose length only a custom plan knows, so PostgreSQL would
// plan them afresh at every call (0.15 to 0.2 ms each) and with the
// statistics of the image's own id: where those take the image for a
// handful of rows, it reads the image's manifests through the wrong index
// of three that start with the image. The generic plan estimates an
// average image, looks each digest up by its unique index, and is built
// once per connection. SET LOCAL keeps the setting to this transaction,
// and TO DEFAULT gives the rest of it back the server's own.
const (
	genericPlansOn  = `SET LOCAL plan_cache_mode = force_generic_plan`
	genericPlansOff = `SET LOCAL plan_cache_mode TO DEFAULT`
)

// scanBatch reads the rows of the next statement of br with scan.
func scanBatch(br pgx.BatchResults, scan func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// checkManifestLimit refuses a new manifest in an image that holds
// MaxManifestsPerImage. Counting the image's manifests reads every one of
// them (1.6 to 2.3 ms a push into an image of a few thousand), so the
// count is made only when the image's buffered count (folded; trashed
// manifests included, so never below the active ones) is within
// store.UnfoldedWritesMargin of the limit.
func checkManifestLimit(ctx context.Context, tx pgx.Tx, t *Target, imageID uuid.UUID, folded int64) error {
	if folded < MaxManifestsPerImage-store.UnfoldedWritesMargin {
		return nil
	}
	var count int
	if err := partition.QueryRow(ctx, tx, &countManifestsSQL, t.NamespaceID, imageID).Scan(&count); err != nil {
		return fmt.Errorf("store: count manifests: %w", err)
	}
	if count >= MaxManifestsPerImage {
		return errs.New(CodeTooManyManifests, "too many manifests in the image: image %q holds %d manifests (limit %d)", t.ImageName, count, MaxManifestsPerImage)
	}
	return nil
}

// insertManifest inserts a new manifest row with its payload's attachment,
// its blob references, its children's relationships and its tags. The
// statements go in one pipeline: each still runs on its own, with its
// own triggers, in this order, and the first failure stops the rest.
func insertManifest(ctx context.Context, tx pgx.Tx, t *Target, imageID uuid.UUID, in ManifestPut, refs manifestRefs) (uuid.UUID, error) {
	part, err := partition.Of(ctx, tx, t.NamespaceID)
	if err != nil {
		return uuid.Nil, err
	}
	id := db.NewID()
	var subject []byte
	if in.Subject != nil {
		subject = in.Subject[:]
	}
	b := &pgx.Batch{}
	b.Queue(insertManifestSQL[part], t.NamespaceID,
		id, imageID, in.Digest[:], in.MediaType, refs.size, subject, in.ArtifactType)
	if imgs, mans, digs := referenceRows([]uuid.UUID{imageID}, []uuid.UUID{id}, [][][]byte{refs.blobs}); len(digs) > 0 {
		b.Queue(insertBlobReferencesSQL[part], t.NamespaceID, imgs, mans, digs)
	}
	if len(refs.childIDs) > 0 {
		b.Queue(insertRelationshipsSQL[part], t.NamespaceID, imageID, id, db.NewIDs(len(refs.childIDs)), refs.childIDs)
	}
	if len(in.Tags) > 0 {
		b.Queue(upsertTagsSQL[part], t.NamespaceID, imageID, id, db.NewIDs(len(in.Tags)), in.Tags)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	tag, err := br.Exec()
	if err != nil {
		return uuid.Nil, fmt.Errorf("store: insert manifest: %w", err)
	}
	if tag.RowsAffected() == 0 {
		// A concurrent push inserted the digest first: the statements
		// after this one fail on its absent row, and the retry sees the
		// other push's manifest instead.
		return uuid.Nil, db.ErrRace
	}
	if err := br.Close(); err != nil {
		return uuid.Nil, fmt.Errorf("store: insert manifest references and tags: %w", err)
	}
	return id, nil
}

// distinctSHA returns the distinct digests in ascending order as bytea
// parameters.
func distinctSHA(seq func(yield func([32]byte) bool)) [][]byte {
	var out [][]byte
	for d := range seq {
		out = append(out, bytes.Clone(d[:]))
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// upsertTags points tags at a manifest: new tags get a row, moved
// tags keep theirs (docs/schema.md, "Format tables": moving a tag updates its row).
func upsertTags(ctx context.Context, tx pgx.Tx, nsID, imageID, manifestID uuid.UUID, tags []string) error {
	if len(tags) == 0 {
		return nil
	}
	if _, err := partition.Exec(ctx, tx, &upsertTagsSQL, nsID, imageID, manifestID, db.NewIDs(len(tags)), tags); err != nil {
		return fmt.Errorf("store: upsert tags: %w", err)
	}
	return nil
}

// DeleteManifestByDigest soft-deletes the image's active manifest
// of a digest and deletes the tags pointing at it (docs/schema.md, "Soft delete, trash and purge": restorable from
// the trash; its attachment stays until the row is purged). A manifest
// listed by an active index is refused with CodeManifestReferenced.
func (s *Store) DeleteManifestByDigest(ctx context.Context, t *Target, sha [32]byte) error {
	if t.ImageID == uuid.Nil {
		return errs.WithDigest(CodeManifestUnknown, sha, "manifest unknown")
	}
	return s.core.WithTx(ctx, func(tx pgx.Tx) error {
		id, parent, err := softDeleteManifest(ctx, tx, t.NamespaceID, t.ImageID, sha[:])
		switch {
		case err != nil:
			return err
		case id == uuid.Nil:
			return errs.WithDigest(CodeManifestUnknown, sha, "manifest unknown")
		case parent != nil:
			return errs.WithDigest(CodeManifestReferenced, [32]byte(parent), "manifest is referenced by an index")
		}
		return nil
	})
}

// softDeleteManifest soft-deletes the image's active manifest of digest
// inside tx and deletes the tags pointing at it: the row is locked, then
// refused when an active index or manifest list lists it (parent is that
// index's digest, nothing changed), then its tags go and the row is marked
// deleted (restorable from the trash; its attachment stays until the row
// is purged). id is uuid.Nil when the image has no such active manifest.
// The protocol (DeleteManifestByDigest) and the admin API
// (DeleteManifest) both soft-delete manifests here.
func softDeleteManifest(ctx context.Context, tx pgx.Tx, nsID, imageID uuid.UUID, digest []byte) (id uuid.UUID, parent []byte, err error) {
	err = tx.QueryRow(ctx, `
			SELECT id FROM container_manifests
			WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL
			FOR UPDATE`, nsID, imageID, digest).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil, nil
	}
	if err != nil {
		return uuid.Nil, nil, fmt.Errorf("store: lock manifest: %w", err)
	}
	err = tx.QueryRow(ctx, `
			SELECT p.digest FROM container_manifest_relationships rel
			JOIN container_manifests p ON p.namespace_id = rel.namespace_id AND p.id = rel.parent_container_manifest_id
			WHERE rel.namespace_id = $1 AND p.namespace_id = $1 AND rel.child_container_manifest_id = $2
			  AND p.soft_deleted_at IS NULL
			LIMIT 1`, nsID, id).Scan(&parent)
	if err == nil {
		return id, parent, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil, fmt.Errorf("store: manifest parents: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM container_tags WHERE namespace_id = $1 AND container_manifest_id = $2`,
		nsID, id); err != nil {
		return uuid.Nil, nil, fmt.Errorf("store: delete tags of manifest: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE container_manifests SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`,
		nsID, id); err != nil {
		return uuid.Nil, nil, fmt.Errorf("store: soft-delete manifest: %w", err)
	}
	return id, nil, nil
}
