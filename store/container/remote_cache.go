package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// The cache of a container pull-through cache: reads by tag, digest and
// blob, and the writes that store what the upstream sent. Everything is
// keyed by the cached image (container_remote_images, under its upstream
// name). Writes take the image row first (FOR KEY SHARE; eviction takes it
// FOR UPDATE), then the blob row, the lock order of the package.

// RemoteTag is a cached tag: the manifest it points at and when the
// upstream last confirmed it.
type RemoteTag struct {
	Manifest  *ManifestRow
	CheckedAt time.Time
	// ETag is the upstream's ETag of the tag's manifest ("" when none).
	ETag string
}

// The cached-content lookups of a pull-through hit name the namespace's
// partitions: planned over the partitioned parents, they cost more to
// plan than to run, at every hit.
var (
	remoteTagSQL = partition.Statements(`
SELECT `+manifestRowColumns+`, ct.upstream_checked_at, ct.upstream_etag
FROM {container_remote_tags} ct
JOIN {container_remote_manifests} cm ON cm.namespace_id = ct.namespace_id AND cm.id = ct.container_remote_manifest_id
WHERE ct.namespace_id = $1 AND cm.namespace_id = $1 AND ct.container_remote_image_id = $2 AND ct.name = $3
  AND cm.soft_deleted_at IS NULL`, "container_remote_tags", "container_remote_manifests")
	remoteManifestByDigestSQL = partition.Statements(`
SELECT `+manifestRowColumns+`
FROM {container_remote_manifests} cm
WHERE cm.namespace_id = $1 AND cm.container_remote_image_id = $2 AND cm.digest = $3 AND cm.soft_deleted_at IS NULL`,
		"container_remote_manifests")
	remoteBlobLinkedSQL = partition.Statements(`
SELECT EXISTS (SELECT 1 FROM {container_remote_blobs}
WHERE namespace_id = $1 AND container_remote_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL)`, "container_remote_blobs")
)

// RemoteTagByName returns the cached tag of the target's image, nil (and
// no error) when the tag is not cached.
func (s *Store) RemoteTagByName(ctx context.Context, t *Target, tag string) (*RemoteTag, error) {
	if t.ImageID == uuid.Nil {
		return nil, nil
	}
	var (
		rt   RemoteTag
		etag *string
	)
	m, err := scanManifestRow(rowFunc(func(dest ...any) error {
		return partition.QueryRow(ctx, s.pool, &remoteTagSQL, t.NamespaceID, t.ImageID, tag).
			Scan(append(dest, &rt.CheckedAt, &etag)...)
	}))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote tag: %w", err))
	}
	rt.Manifest = m
	if etag != nil {
		rt.ETag = *etag
	}
	return &rt, nil
}

// rowFunc adapts a Scan function to pgx.Row.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

// RemoteManifestByDigest returns the image's cached manifest of a digest
// (CodeManifestUnknown when it is not cached).
func (s *Store) RemoteManifestByDigest(ctx context.Context, t *Target, sha [32]byte) (*ManifestRow, error) {
	if t.ImageID == uuid.Nil {
		return nil, errs.WithDigest(CodeManifestUnknown, sha, "manifest unknown")
	}
	m, err := scanManifestRow(partition.QueryRow(ctx, s.pool, &remoteManifestByDigestSQL, t.NamespaceID, t.ImageID, sha[:]))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.WithDigest(CodeManifestUnknown, sha, "manifest unknown")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote manifest by digest: %w", err))
	}
	return m, nil
}

// RemoteBlob returns the blob row behind a blob cached in the target's
// image (CodeBlobUnknown when the image does not link it).
func (s *Store) RemoteBlob(ctx context.Context, t *Target, sha [32]byte) (*store.Blob, error) {
	return s.linkedBlob(ctx, t, &remoteBlobLinkedSQL, sha)
}

// RemoteBlobInRepository reports whether another image of the target's
// remote caches the digest: its bytes came from the same upstream, so the
// target's image may link them without asking the upstream again.
func (s *Store) RemoteBlobInRepository(ctx context.Context, t *Target, sha [32]byte) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM container_remote_blobs b
		JOIN container_remote_images i ON i.namespace_id = b.namespace_id AND i.id = b.container_remote_image_id
		WHERE b.namespace_id = $1 AND i.namespace_id = $1 AND b.blob_sha256 = $2 AND b.digest = $2
		  AND i.container_remote_repository_id = $3 AND b.soft_deleted_at IS NULL AND i.soft_deleted_at IS NULL)`,
		t.NamespaceID, sha[:], t.Remote.ID).Scan(&ok)
	if err != nil {
		return false, db.MapErr(fmt.Errorf("store: remote blob in repository: %w", err))
	}
	return ok, nil
}

// RemoteTags lists the cached tag names of the target's image in order
// after last, at most limit of them.
func (s *Store) RemoteTags(ctx context.Context, t *Target, last string, limit int) ([]string, error) {
	if t.ImageID == uuid.Nil || limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT name FROM container_remote_tags
		WHERE namespace_id = $1 AND container_remote_image_id = $2 AND name > $3
		ORDER BY name LIMIT $4`, t.NamespaceID, t.ImageID, last, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote tags: %w", err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, db.MapErr(wrap("remote tags", err))
}

// RemoteReferrerCandidates lists the image's cached manifests that can
// carry a subject, with their payload rows: the referrers answer when the
// upstream cannot be asked.
func (s *Store) RemoteReferrerCandidates(ctx context.Context, t *Target, mediaTypes []string) ([]*ManifestRow, error) {
	if t.ImageID == uuid.Nil {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+manifestRowColumns+`
		FROM container_remote_manifests cm
		WHERE cm.namespace_id = $1 AND cm.container_remote_image_id = $2 AND cm.soft_deleted_at IS NULL
		  AND cm.media_type = ANY($3::text[])
		ORDER BY cm.digest`, t.NamespaceID, t.ImageID, mediaTypes)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote referrer candidates: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ManifestRow, error) { return scanManifestRow(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote referrer candidates: %w", err))
	}
	if err := s.withPayloads(ctx, t.NamespaceID, out); err != nil {
		return nil, err
	}
	return out, nil
}

// remoteImageIDSQL finds the live cached image of a remote repository by
// its upstream name ($1 namespace, $2 remote repository, $3 name).
const remoteImageIDSQL = `
		SELECT id FROM container_remote_images
		WHERE namespace_id = $1 AND container_remote_repository_id = $2 AND name = $3 AND soft_deleted_at IS NULL`

// RefreshRemoteImage sets t.ImageID when t was resolved before the first
// pull of its image cached it: a pull that waited for another's upstream
// fetch then finds what that fetch cached instead of fetching again.
func (s *Store) RefreshRemoteImage(ctx context.Context, t *Target) error {
	if t.ImageID != uuid.Nil || t.Remote == nil {
		return nil
	}
	err := s.pool.QueryRow(ctx, remoteImageIDSQL,
		t.NamespaceID, t.Remote.ID, t.Remote.UpstreamImage).Scan(&t.ImageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return db.MapErr(fmt.Errorf("store: cached image %q: %w", t.Remote.UpstreamImage, err))
	}
	return nil
}

// ensureRemoteImage returns the id of the target's cached image, creating
// it (a first pull: last_downloaded_at is set) inside tx, and holds it
// FOR KEY SHARE so that an eviction of the image waits for tx. It does
// not change t, which concurrent requests share.
func (s *Store) ensureRemoteImage(ctx context.Context, tx pgx.Tx, t *Target) (uuid.UUID, error) {
	now := s.core.Options().Clock.Now()
	if _, err := tx.Exec(ctx, `
		INSERT INTO container_remote_images (id, namespace_id, container_remote_repository_id, name, last_downloaded_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (namespace_id, container_remote_repository_id, name) WHERE soft_deleted_at IS NULL DO NOTHING`,
		db.NewID(), t.NamespaceID, t.Remote.ID, t.Remote.UpstreamImage, now); err != nil {
		return uuid.Nil, fmt.Errorf("store: cached image %q: %w", t.Remote.UpstreamImage, err)
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, remoteImageIDSQL+" FOR KEY SHARE",
		t.NamespaceID, t.Remote.ID, t.Remote.UpstreamImage).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, db.ErrRace // evicted between the two statements
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("store: cached image %q: %w", t.Remote.UpstreamImage, err)
	}
	return id, nil
}

// raceOnForeignKey turns a foreign key violation (the image was evicted
// under the write) into a race the retry rule runs again.
func raceOnForeignKey(err error, what string) error {
	if code, _ := db.PgCode(err); code == pgerrcode.ForeignKeyViolation {
		return db.ErrRace
	}
	return fmt.Errorf("store: %s: %w", what, err)
}

// RemoteManifestPut is a manifest the upstream sent, verified against its
// digest and parsed by the protocol.
type RemoteManifestPut struct {
	Digest    [32]byte
	MediaType string
	Payload   []byte
	// BlobsSize is the sum of the sizes the manifest declares for its
	// config and layers (0 for an index): with the payload, an image
	// manifest's whole footprint, known when it is cached.
	BlobsSize int64
	// Children are the manifests an index lists (fetched lazily).
	Children [][32]byte
	// Tag, when not empty, is pointed at the manifest, confirmed now,
	// with the upstream's ETag.
	Tag  string
	ETag string
}

// CacheRemoteManifest stores a manifest in the target's cached image
// (creating the image) and points the tag at it. The payload is staged
// first (a content-addressed blob), then one transaction commits it,
// inserts the manifest row with its attachment, records an index's
// children, links the manifest to the cached indexes that list it (adding
// its size to theirs, and theirs the cached children's), and upserts the
// tag. A manifest already cached only moves the tag. It returns the
// manifest row and the cached image's id.
func (s *Store) CacheRemoteManifest(ctx context.Context, t *Target, in RemoteManifestPut) (*ManifestRow, uuid.UUID, error) {
	staged, err := s.core.StageBlob(ctx, t.UploadRef(uuid.Nil), bytes.NewReader(in.Payload),
		store.Expected{SHA256: in.Digest, Size: int64(len(in.Payload))})
	if err != nil {
		return nil, uuid.Nil, err
	}
	var (
		out       *ManifestRow
		imageID   uuid.UUID
		committed bool
	)
	err = db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		committed = false
		var err error
		imageID, err = s.ensureRemoteImage(ctx, tx, t)
		if err != nil {
			return err
		}
		out, err = scanManifestRow(tx.QueryRow(ctx, `
			SELECT `+manifestRowColumns+` FROM container_remote_manifests cm
			WHERE cm.namespace_id = $1 AND cm.container_remote_image_id = $2 AND cm.digest = $3 AND cm.soft_deleted_at IS NULL
			FOR SHARE`, t.NamespaceID, imageID, in.Digest[:]))
		switch {
		case err == nil:
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := s.core.CommitStaged(ctx, tx, staged, func(u store.StagedUse) error {
				out, err = s.insertRemoteManifest(ctx, tx, t, imageID, in, u)
				return err
			}); err != nil {
				return err
			}
			committed = true
		default:
			return fmt.Errorf("store: cached manifest: %w", err)
		}
		if in.Tag != "" {
			return s.upsertRemoteTag(ctx, tx, t.NamespaceID, imageID, out.ID, in.Tag, in.ETag)
		}
		return nil
	})
	staged.Close(ctx, err == nil && committed)
	if err != nil {
		return nil, uuid.Nil, err
	}
	return out, imageID, nil
}

func (s *Store) insertRemoteManifest(ctx context.Context, tx pgx.Tx, t *Target, imageID uuid.UUID, in RemoteManifestPut, u store.StagedUse) (*ManifestRow, error) {
	att, err := s.core.AttachStaged(ctx, tx, u)
	if err != nil {
		return nil, err
	}
	children := distinctSHA(func(yield func([32]byte) bool) {
		for _, c := range in.Children {
			if !yield(c) {
				return
			}
		}
	})
	// The children cached already count in the index's size at once.
	var cachedChildren int64
	if len(children) > 0 {
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(sum(size), 0)::bigint FROM container_remote_manifests
			WHERE namespace_id = $1 AND container_remote_image_id = $2 AND digest = ANY($3::bytea[]) AND soft_deleted_at IS NULL`,
			t.NamespaceID, imageID, children).Scan(&cachedChildren); err != nil {
			return nil, fmt.Errorf("store: cached children: %w", err)
		}
	}
	m := &ManifestRow{ID: db.NewID(), Digest: in.Digest, MediaType: in.MediaType,
		Size: int64(len(in.Payload)) + in.BlobsSize + cachedChildren}
	tag, err := tx.Exec(ctx, `
		INSERT INTO container_remote_manifests (id, namespace_id, container_remote_image_id, digest, media_type,
		                                        blob_storage_attachment_id, blob_sha256, size, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $4, $7, $8)
		ON CONFLICT (namespace_id, container_remote_image_id, digest) WHERE soft_deleted_at IS NULL DO NOTHING`,
		m.ID, t.NamespaceID, imageID, in.Digest[:], in.MediaType, att.ID, m.Size, s.core.Options().Clock.Now())
	if err != nil {
		return nil, raceOnForeignKey(err, "insert cached manifest")
	}
	if tag.RowsAffected() == 0 {
		return nil, db.ErrRace
	}
	if len(children) > 0 {
		if _, err := tx.Exec(ctx, `
			INSERT INTO container_remote_manifest_children (namespace_id, container_remote_image_id, container_remote_manifest_id, digest)
			SELECT $1, $2, $3, d FROM unnest($4::bytea[]) AS u(d)`, t.NamespaceID, imageID, m.ID, children); err != nil {
			return nil, fmt.Errorf("store: record index children: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO container_remote_manifest_relationships
			       (id, namespace_id, container_remote_image_id, parent_container_remote_manifest_id, child_container_remote_manifest_id)
			SELECT gen_uuidv7(), $1, $2, $3, c.id FROM container_remote_manifests c
			WHERE c.namespace_id = $1 AND c.container_remote_image_id = $2 AND c.digest = ANY($4::bytea[]) AND c.soft_deleted_at IS NULL
			ON CONFLICT DO NOTHING`, t.NamespaceID, imageID, m.ID, children); err != nil {
			return nil, fmt.Errorf("store: link cached children: %w", err)
		}
	}
	// The cached indexes that list this manifest: link it and add its size
	// to theirs (ADR-007: an index's size converges as children arrive).
	if _, err := tx.Exec(ctx, `
		WITH parents AS (
			SELECT container_remote_manifest_id AS id FROM container_remote_manifest_children
			WHERE namespace_id = $1 AND container_remote_image_id = $2 AND digest = $4 AND container_remote_manifest_id <> $3
		), linked AS (
			INSERT INTO container_remote_manifest_relationships
			       (id, namespace_id, container_remote_image_id, parent_container_remote_manifest_id, child_container_remote_manifest_id)
			SELECT gen_uuidv7(), $1, $2, p.id, $3 FROM parents p
			ON CONFLICT DO NOTHING
			RETURNING parent_container_remote_manifest_id AS id
		)
		UPDATE container_remote_manifests cm SET size = cm.size + $5
		FROM linked WHERE cm.namespace_id = $1 AND cm.id = linked.id`,
		t.NamespaceID, imageID, m.ID, in.Digest[:], m.Size); err != nil {
		return nil, fmt.Errorf("store: link to cached indexes: %w", err)
	}
	return m, nil
}

// upsertRemoteTag points a cached tag at a manifest, confirmed now.
func (s *Store) upsertRemoteTag(ctx context.Context, tx pgx.Tx, nsID, imageID, manifestID uuid.UUID, tag, etag string) error {
	var e *string
	if etag != "" && len(etag) <= 255 {
		e = &etag
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO container_remote_tags AS ct
		       (id, namespace_id, container_remote_image_id, container_remote_manifest_id, name, upstream_checked_at, upstream_etag)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (namespace_id, container_remote_image_id, name) DO UPDATE
		SET container_remote_manifest_id = EXCLUDED.container_remote_manifest_id,
		    upstream_checked_at = EXCLUDED.upstream_checked_at, upstream_etag = EXCLUDED.upstream_etag`,
		db.NewID(), nsID, imageID, manifestID, tag, s.core.Options().Clock.Now(), e); err != nil {
		return raceOnForeignKey(err, "upsert cached tag")
	}
	return nil
}

// PointRemoteTag points a cached tag at a manifest the image caches
// already (the upstream moved the tag to content we hold), confirmed now.
func (s *Store) PointRemoteTag(ctx context.Context, t *Target, tag string, manifest [32]byte, etag string) (*ManifestRow, error) {
	var out *ManifestRow
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		imageID, err := s.ensureRemoteImage(ctx, tx, t)
		if err != nil {
			return err
		}
		out, err = scanManifestRow(tx.QueryRow(ctx, `
			SELECT `+manifestRowColumns+` FROM container_remote_manifests cm
			WHERE cm.namespace_id = $1 AND cm.container_remote_image_id = $2 AND cm.digest = $3 AND cm.soft_deleted_at IS NULL
			FOR SHARE`, t.NamespaceID, imageID, manifest[:]))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.WithDigest(CodeManifestUnknown, manifest, "manifest unknown")
		}
		if err != nil {
			return fmt.Errorf("store: cached manifest: %w", err)
		}
		return s.upsertRemoteTag(ctx, tx, t.NamespaceID, imageID, out.ID, tag, etag)
	})
	return out, err
}

// ConfirmRemoteTag records that the upstream still has the tag on the
// cached manifest (a revalidation that found no change): only the check
// time (and the ETag, when the upstream sent one) change. A tag moved or
// dropped meanwhile is left alone.
func (s *Store) ConfirmRemoteTag(ctx context.Context, t *Target, tag string, manifestID uuid.UUID, etag string) error {
	if t.ImageID == uuid.Nil {
		return nil
	}
	var e *string
	if etag != "" && len(etag) <= 255 {
		e = &etag
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE container_remote_tags SET upstream_checked_at = $5, upstream_etag = coalesce($6, upstream_etag)
		WHERE namespace_id = $1 AND container_remote_image_id = $2 AND name = $3 AND container_remote_manifest_id = $4`,
		t.NamespaceID, t.ImageID, tag, manifestID, s.core.Options().Clock.Now(), e)
	return db.MapErr(wrap("confirm cached tag", err))
}

// DropRemoteTag deletes a cached tag the upstream no longer has (the
// manifest stays cached by digest until evicted).
func (s *Store) DropRemoteTag(ctx context.Context, t *Target, tag string) error {
	if t.ImageID == uuid.Nil {
		return nil
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM container_remote_tags WHERE namespace_id = $1 AND container_remote_image_id = $2 AND name = $3`,
		t.NamespaceID, t.ImageID, tag)
	return db.MapErr(wrap("drop cached tag", err))
}

// LinkRemoteBlob links a blob already stored in the namespace to the
// target's cached image, with its own attachment (store.Attach: a blob
// whose object went missing fails with store.CodeBlobMustReupload, and
// with store.CodeBlobUnknown when there is no blob row).
func (s *Store) LinkRemoteBlob(ctx context.Context, t *Target, sha [32]byte, mediaType string) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		imageID, err := s.ensureRemoteImage(ctx, tx, t)
		if err != nil {
			return err
		}
		linked, err := remoteBlobLinked(ctx, tx, t.NamespaceID, imageID, sha)
		if err != nil || linked {
			return err
		}
		att, err := s.core.Attach(ctx, tx, t.NamespaceID, [][32]byte{sha})
		if err != nil {
			return err
		}
		return insertRemoteBlob(ctx, tx, t.NamespaceID, imageID, sha, mediaType, att[0])
	})
}

func remoteBlobLinked(ctx context.Context, tx pgx.Tx, nsID, imageID uuid.UUID, sha [32]byte) (bool, error) {
	var linked bool
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM container_remote_blobs
		WHERE namespace_id = $1 AND container_remote_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL)`,
		nsID, imageID, sha[:]).Scan(&linked)
	if err != nil {
		return false, fmt.Errorf("store: cached blob exists: %w", err)
	}
	return linked, nil
}

func insertRemoteBlob(ctx context.Context, tx pgx.Tx, nsID, imageID uuid.UUID, sha [32]byte, mediaType string, att store.Attachment) error {
	if mediaType == "" || len(mediaType) > 255 {
		mediaType = defaultBlobMediaType
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO container_remote_blobs (id, namespace_id, container_remote_image_id, digest, media_type,
		                                    blob_storage_attachment_id, blob_sha256)
		VALUES ($1, $2, $3, $4, $5, $6, $4)
		ON CONFLICT (namespace_id, container_remote_image_id, digest) WHERE soft_deleted_at IS NULL DO NOTHING`,
		db.NewID(), nsID, imageID, sha[:], mediaType, att.ID)
	if err != nil {
		return raceOnForeignKey(err, "insert cached blob")
	}
	if tag.RowsAffected() == 0 {
		return db.ErrRace
	}
	return nil
}

// StageRemoteBlob writes an upstream blob's bytes, as they arrive, to an
// upload of the target's repository (temporary storage, hashed while
// written); CommitRemoteBlob makes it part of the cache.
func (s *Store) StageRemoteBlob(ctx context.Context, t *Target, body io.Reader) (*store.StagedBlob, error) {
	b, err := s.core.StageStream(ctx, t.UploadRef(uuid.Nil), body)
	if err == nil {
		b.SealAsync() // synced while the caller checks it and commits
	}
	return b, err
}

// CommitRemoteBlob commits a staged upstream blob into the target's
// cached image (creating the image): the blob row and the image's link
// with its attachment in one transaction, the bytes moved to their blob
// key last. The staged blob must be the expected one (the caller checked
// its digest and length); it is closed here, committed or not.
func (s *Store) CommitRemoteBlob(ctx context.Context, t *Target, staged *store.StagedBlob, mediaType string) error {
	sha := staged.SHA256()
	committed := false
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		committed = false
		imageID, err := s.ensureRemoteImage(ctx, tx, t)
		if err != nil {
			return err
		}
		linked, err := remoteBlobLinked(ctx, tx, t.NamespaceID, imageID, sha)
		if err != nil || linked {
			return err
		}
		if _, err := s.core.CommitStaged(ctx, tx, staged, func(u store.StagedUse) error {
			att, err := s.core.AttachStaged(ctx, tx, u)
			if err != nil {
				return err
			}
			return insertRemoteBlob(ctx, tx, t.NamespaceID, imageID, sha, mediaType, att)
		}); err != nil {
			return err
		}
		committed = true
		return nil
	})
	staged.Close(ctx, err == nil && committed)
	return err
}
