package container

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// defaultBlobMediaType is container_blobs.media_type of a blob
// pushed through the blob API, which carries no media type.
const defaultBlobMediaType = "application/octet-stream"

// Blob returns the blob row behind an active blob of the target's
// image, from the database only (the blob join of docs/schema.md, "Blob tables and attachments":
// container_blobs straight to
// blob_storage_blobs). CodeBlobUnknown when the image has none.
func (s *Store) Blob(ctx context.Context, t *Target, sha [32]byte) (*store.Blob, error) {
	return s.linkedBlob(ctx, t, &blobLinkedSQL, sha)
}

// linkedBlob reads, in one round trip, whether the target's image links
// sha (linked: statements of namespace, image id and digest that say so)
// and the blob row: the blob row is read even when the image has no link
// to it, and then not returned. A link's digest is its blob row's
// (namespace, sha256).
func (s *Store) linkedBlob(ctx context.Context, t *Target, linked *[partition.Count]string, sha [32]byte) (*store.Blob, error) {
	if t.ImageID == uuid.Nil {
		return nil, BlobUnknown(sha)
	}
	part, err := partition.Of(ctx, s.pool, t.NamespaceID)
	if err != nil {
		return nil, err
	}
	var (
		exists bool
		blob   *store.Blob
		batch  pgx.Batch
	)
	batch.Queue(linked[part], t.NamespaceID, t.ImageID, sha[:]).QueryRow(func(row pgx.Row) error {
		return row.Scan(&exists)
	})
	s.core.QueueStatBlob(&batch, t.NamespaceID, sha, &blob)
	if err := s.pool.SendBatch(ctx, &batch).Close(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: linked blob: %w", err))
	}
	if !exists || blob == nil {
		return nil, BlobUnknown(sha)
	}
	return blob, nil
}

// BlobUnknown is the error of a digest the image does not link
// (CodeBlobUnknown).
func BlobUnknown(sha [32]byte) error {
	return errs.WithDigest(CodeBlobUnknown, sha, "blob unknown in image")
}

// UploadRef returns the reference of an upload session of the target's
// repository.
func (t *Target) UploadRef(uploadID uuid.UUID) store.UploadRef {
	return store.UploadRef{NamespaceID: t.NamespaceID, RepositoryID: t.RepositoryID, UploadID: uploadID}
}

// PutBlob stores a whole blob (monolithic upload) and links it to
// the target's image, creating the image on first push.
func (s *Store) PutBlob(ctx context.Context, t *Target, r io.Reader, want store.Expected) (*store.Blob, error) {
	res, err := s.core.PutBlobLinked(ctx, t.UploadRef(uuid.Nil), r, want, s.blobLink(ctx, t))
	if err != nil {
		return nil, err
	}
	return res.Blob, nil
}

// CommitUpload finishes a resumable upload of the target's
// repository (appending final when not nil) and links the blob to the
// target's image in the same transaction.
func (s *Store) CommitUpload(ctx context.Context, t *Target, uploadID uuid.UUID, final io.Reader, want store.Expected) (*store.Blob, error) {
	res, err := s.core.CommitUploadLinked(ctx, t.UploadRef(uploadID), final, want, s.blobLink(ctx, t))
	if err != nil {
		return nil, err
	}
	return res.Blob, nil
}

// blobLink links the blob an upload commits to the target's image, inside
// the commit's transaction: the image first (created on first push), then,
// under the blob-row lock the commit holds, a container_blobs row with
// its own attachment unless the image already has an active one. An image
// the request's resolve found is taken as it is, which spares the commit
// a round trip: the link checks it is still active, and when it is not
// the retry looks the image up (or creates it) again.
func (s *Store) blobLink(ctx context.Context, t *Target) store.UploadLink {
	var imageID uuid.UUID
	return store.UploadLink{
		Before: func(tx pgx.Tx) (err error) {
			if imageID = t.ImageID; imageID != uuid.Nil {
				return nil
			}
			imageID, err = EnsureImage(ctx, tx, t)
			return err
		},
		Use: func(tx pgx.Tx, u store.StagedUse) error {
			part, err := partition.Of(ctx, tx, t.NamespaceID)
			if err != nil {
				return err
			}
			if err := store.ClearStagedCandidate(ctx, tx, u); err != nil {
				return err
			}
			var active, linked, inserted bool
			if err := tx.QueryRow(ctx, attachLinkSQL[part], pgx.QueryExecModeCacheStatement,
				t.NamespaceID, imageID, u.Blob.SHA256[:], db.NewID(), defaultBlobMediaType, s.core.Options().Clock.Now(),
			).Scan(&active, &linked, &inserted); err != nil {
				return db.MapErr(fmt.Errorf("store: link blob: %w", err))
			}
			if !active {
				t.ImageID = uuid.Nil // deleted since it was read: the retry looks again
				return db.ErrRace
			}
			if !linked && !inserted {
				return db.ErrRace // linked by a concurrent push: the retry sees its row
			}
			return nil
		},
	}
}

// The statements of Blob and linkBlob, which every blob pull and push
// runs, name the namespace's partition (see resolveTargetSQL).
var (
	blobLinkedSQL = partition.Statements(`
		SELECT EXISTS (SELECT 1 FROM {container_blobs}
		WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL)`, "container_blobs")
	linkBlobSQL = partition.Statements(`
		INSERT INTO {container_blobs} (id, namespace_id, container_image_id, digest, media_type,
		                               blob_storage_attachment_id, blob_sha256, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $4, $7)
		ON CONFLICT (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL DO NOTHING`, "container_blobs")
)

// attachLinkSQL is what a blob push records in its commit, in one round
// trip: unless the image ($2) has an active container_blobs row for the
// digest ($3), an attachment of the blob and the row that holds it. It
// returns whether the image is active (nothing is written when it is
// not), whether the row existed and whether it was inserted; neither
// means a concurrent push linked the digest first (the retry drops this
// attempt's attachment with its transaction).
var attachLinkSQL = partition.Statements(`
WITH image AS (
	SELECT 1 FROM {container_images}
	WHERE namespace_id = $1 AND id = $2 AND soft_deleted_at IS NULL
), linked AS (
	SELECT 1 FROM {container_blobs}
	WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL
), att AS (
	INSERT INTO blob_storage_attachments (namespace_id, sha256)
	SELECT $1, $3 WHERE EXISTS (SELECT 1 FROM image) AND NOT EXISTS (SELECT 1 FROM linked)
	RETURNING id
), ins AS (
	INSERT INTO {container_blobs} (id, namespace_id, container_image_id, digest, media_type,
	                               blob_storage_attachment_id, blob_sha256, created_at)
	SELECT $4, $1, $2, $3, $5, att.id, $3, $6 FROM att
	ON CONFLICT (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL DO NOTHING
	RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM image), EXISTS (SELECT 1 FROM linked), EXISTS (SELECT 1 FROM ins)`,
	"container_images", "container_blobs")

// linkBlob gives the image a container_blobs row for the digest,
// with its own attachment, unless it already has an active one. The blob
// row must exist (store.CodeBlobUnknown otherwise).
func (s *Store) linkBlob(ctx context.Context, t *Target, sha [32]byte, mediaType string) error {
	return db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		imageID, err := EnsureImage(ctx, tx, t)
		if err != nil {
			return err
		}
		part, err := partition.Of(ctx, tx, t.NamespaceID)
		if err != nil {
			return err
		}
		if exists, err := blobLinked(ctx, tx, part, t.NamespaceID, imageID, sha); err != nil || exists {
			return err
		}
		att, err := s.core.Attach(ctx, tx, t.NamespaceID, [][32]byte{sha})
		if err != nil {
			return err
		}
		return s.insertBlobLink(ctx, tx, part, t, imageID, sha, mediaType, att[0].ID)
	})
}

// blobLinked reports whether the image has an active container_blobs row
// for the digest.
func blobLinked(ctx context.Context, tx pgx.Tx, part int, nsID, imageID uuid.UUID, sha [32]byte) (bool, error) {
	var exists bool
	if err := tx.QueryRow(ctx, blobLinkedSQL[part], pgx.QueryExecModeCacheStatement,
		nsID, imageID, sha[:]).Scan(&exists); err != nil {
		return false, fmt.Errorf("store: container blob exists: %w", err)
	}
	return exists, nil
}

// insertBlobLink inserts the image's container_blobs row for a blob with
// its attachment; db.ErrRace when a concurrent push linked it first (the
// retry drops this attempt's attachment with its transaction).
func (s *Store) insertBlobLink(ctx context.Context, tx pgx.Tx, part int, t *Target, imageID uuid.UUID, sha [32]byte, mediaType string, attachmentID int64) error {
	tag, err := tx.Exec(ctx, linkBlobSQL[part], pgx.QueryExecModeCacheStatement,
		db.NewID(), t.NamespaceID, imageID, sha[:], mediaType, attachmentID, s.core.Options().Clock.Now())
	if err != nil {
		return fmt.Errorf("store: insert container blob: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return db.ErrRace
	}
	return nil
}

// blobSourceSQL finds an active image of the namespace holding an
// active blob row of the digest, in an active hosted container repository
// the read filter admits ($3..$5, ReadFilter.args), the target's own
// repository ($6) first. Every table names namespace_id = $1 (pruned).
const blobSourceSQL = `
SELECT r.id, r.name, r.format, r.visibility, cr.id, ci.id, ci.name
FROM container_blobs cb
JOIN container_images ci ON ci.namespace_id = cb.namespace_id AND ci.id = cb.container_image_id
JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
JOIN repositories r ON r.namespace_id = cr.namespace_id AND r.id = cr.repository_id
WHERE cb.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND r.namespace_id = $1
  AND cb.digest = $2 AND cb.soft_deleted_at IS NULL AND ci.soft_deleted_at IS NULL
  AND r.soft_deleted_at IS NULL AND r.kind = $7 AND r.format = ANY($8::smallint[])
  AND ($3 OR r.visibility = ANY($4::smallint[]) OR r.id = ANY($5::uuid[]))
ORDER BY r.id = $6 DESC
LIMIT 1`

// BlobSource finds the source of a cross-repository mount that
// names only the digest: an image of t's namespace, in a repository the
// caller may read (readable, from auth.ReadableRepositories), holding an
// active blob of the digest. It returns nil, with no error, when there is
// none: the caller then cannot tell a blob it may not read from a missing
// one. The source carries t's namespace state; the caller still authorizes
// the read on it like on a named source.
func (s *Store) BlobSource(ctx context.Context, t *Target, readable ReadFilter, sha [32]byte) (*Target, error) {
	all, vis, ids := readable.args()
	src := &Target{
		NamespaceID: t.NamespaceID, NamespaceSlug: t.NamespaceSlug, NamespaceState: t.NamespaceState,
		ServesReads: t.ServesReads, ServesWrites: t.ServesWrites,
	}
	var format, visibility int16
	err := s.pool.QueryRow(ctx, blobSourceSQL, t.NamespaceID, sha[:], all, vis, ids, t.RepositoryID,
		int16(enum.KindHosted), []int16{int16(enum.FormatDocker), int16(enum.FormatOCI)}).
		Scan(&src.RepositoryID, &src.RepositoryName, &format, &visibility, &src.ContainerRepositoryID, &src.ImageID, &src.ImageName)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: mount source: %w", err))
	}
	src.Format, src.Visibility = enum.Format(format), enum.Visibility(visibility)
	return src, nil
}

// MountBlob links a blob that already exists in the namespace to
// the target's image without any bytes being sent (OCI cross-repository
// mount; the namespace is the deduplication scope). from is the source
// image, which the caller has authorized for reading: the blob must be an
// active blob of that image. A nil source mounts nothing (the store never
// searches the namespace on its own: BlobSource does, for the
// repositories a caller may read). It reports false, with no error, when
// there is nothing to mount (the client then uploads normally), including
// when the blob's object turned out missing and must be uploaded again.
func (s *Store) MountBlob(ctx context.Context, t *Target, from *Target, sha [32]byte) (bool, error) {
	if from == nil || from.NamespaceID != t.NamespaceID || from.ImageID == uuid.Nil {
		return false, nil
	}
	var mediaType string
	err := s.pool.QueryRow(ctx, `
		SELECT media_type FROM container_blobs
		WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL`,
		from.NamespaceID, from.ImageID, sha[:]).Scan(&mediaType)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, db.MapErr(fmt.Errorf("store: mount source: %w", err))
	}
	err = s.linkBlob(ctx, t, sha, mediaType)
	if store.HasCode(err, store.CodeBlobMustReupload) || store.HasCode(err, store.CodeBlobUnknown) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// DeleteBlob soft-deletes the image's active blob row of the
// digest (docs/schema.md, "Soft delete, trash and purge": blobs can be restored from the trash; the attachment
// stays until the row is purged, so the bytes cannot be collected
// meanwhile). Manifests are not checked: like the reference registry, the
// blob API removes the blob from the image whatever references it.
func (s *Store) DeleteBlob(ctx context.Context, t *Target, sha [32]byte) error {
	if t.ImageID == uuid.Nil {
		return errs.WithDigest(CodeBlobUnknown, sha, "blob unknown in image")
	}
	return s.core.WithTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE container_blobs SET soft_deleted_at = now()
			WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NULL`,
			t.NamespaceID, t.ImageID, sha[:])
		if err != nil {
			return fmt.Errorf("store: delete container blob: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errs.WithDigest(CodeBlobUnknown, sha, "blob unknown in image")
		}
		return nil
	})
}
