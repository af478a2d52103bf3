package container

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Hard delete of container rows from the trash (docs/schema.md, "Soft
// delete, trash and purge"), shared by the expiry sweep and the purge
// mutations. Every function runs inside the caller's transaction and
// follows the lock order of the package: image or manifest rows first
// (FOR UPDATE), then the blob rows (store.PurgeAttached), then the deletes,
// children before parents, one statement each; the attachments are
// detached in the same transaction. A row restored or deleted again since
// the caller chose it no longer matches the lock query (cutoff: only rows
// deleted at or before it; nil for any trashed row) and is left alone.

// ManifestPurge is what PurgeManifests did.
type ManifestPurge struct {
	// Purged: the manifests hard-deleted.
	Purged []uuid.UUID
	// Blocked: trashed manifests left alone because an index outside the
	// purge still lists them (purge the index first; restoring it would
	// otherwise bring back an index with a missing child).
	Blocked []uuid.UUID
	// LinksFreed: blob links of the images that only the purged manifests
	// referenced, deleted with them (their attachments are in Released).
	LinksFreed int
	Released   store.Released
}

type attachedRow struct {
	id  uuid.UUID
	att store.Attachment
}

func collectAttached(rows pgx.Rows, err error) ([]attachedRow, error) {
	if err != nil {
		return nil, db.MapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (attachedRow, error) {
		var (
			a   attachedRow
			sha []byte
		)
		if err := r.Scan(&a.id, &a.att.ID, &sha); err != nil {
			return a, err
		}
		if len(sha) != 32 {
			return a, fmt.Errorf("row %s with a %d-byte blob digest", a.id, len(sha))
		}
		a.att.SHA256 = [32]byte(sha)
		return a, nil
	})
	return out, db.MapErr(err)
}

func splitAttached(rows []attachedRow) ([]uuid.UUID, []store.Attachment) {
	ids := make([]uuid.UUID, len(rows))
	atts := make([]store.Attachment, len(rows))
	for i, r := range rows {
		ids[i], atts[i] = r.id, r.att
	}
	return ids, atts
}

// PurgeManifests hard-deletes trashed manifests by id with the tags and
// index relationships that name them. Ids not in the trash are skipped
// (the result lists what was purged). A manifest that an index outside
// the set lists as a child is Blocked, the rule of the soft delete carried
// over: an index never loses a child it can be restored with.
func (s *Store) PurgeManifests(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*ManifestPurge, error) {
	locked, err := collectAttached(tx.Query(ctx, `
		SELECT id, blob_storage_attachment_id, blob_sha256 FROM container_manifests
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND soft_deleted_at IS NOT NULL
		  AND ($3::timestamptz IS NULL OR soft_deleted_at <= $3)
		ORDER BY id
		FOR UPDATE`, nsID, ids, cutoff))
	if err != nil {
		return nil, fmt.Errorf("store: lock trashed manifests: %w", err)
	}
	out := &ManifestPurge{}
	if len(locked) == 0 {
		return out, nil
	}
	lockedIDs, _ := splitAttached(locked)
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT child_container_manifest_id FROM container_manifest_relationships
		WHERE namespace_id = $1 AND child_container_manifest_id = ANY($2::uuid[])
		  AND parent_container_manifest_id <> ALL($2::uuid[])`, nsID, lockedIDs)
	blocked, err := db.CollectIDs(rows, err)
	if err != nil {
		return nil, fmt.Errorf("store: parents of trashed manifests: %w", err)
	}
	out.Blocked = blocked
	isBlocked := make(map[uuid.UUID]bool, len(blocked))
	for _, id := range blocked {
		isBlocked[id] = true
	}
	var purge []attachedRow
	for _, r := range locked {
		if !isBlocked[r.id] {
			purge = append(purge, r)
		}
	}
	if len(purge) == 0 {
		return out, nil
	}
	purgeIDs, atts := splitAttached(purge)
	links, err := s.unreferencedLinks(ctx, tx, nsID, purgeIDs)
	if err != nil {
		return nil, err
	}
	linkIDs, linkAtts := splitAttached(links)
	atts = append(atts, linkAtts...)
	out.Released, err = s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		if err := deleteManifestRows(ctx, tx, nsID, purgeIDs); err != nil {
			return err
		}
		return deleteLinks(ctx, tx, nsID, linkIDs)
	})
	if err != nil {
		return nil, err
	}
	out.Purged, out.LinksFreed = purgeIDs, len(linkIDs)
	return out, nil
}

// deleteManifestRows deletes manifests with the tags and relationships
// naming them (children of the manifests before the manifests).
func deleteManifestRows(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID) error {
	if _, err := tx.Exec(ctx, `DELETE FROM container_manifest_blob_references WHERE namespace_id = $1 AND container_manifest_id = ANY($2::uuid[])`,
		nsID, ids); err != nil {
		return db.MapErr(fmt.Errorf("store: delete blob references of purged manifests: %w", err))
	}
	if _, err := tx.Exec(ctx, `DELETE FROM container_tags WHERE namespace_id = $1 AND container_manifest_id = ANY($2::uuid[])`,
		nsID, ids); err != nil {
		return db.MapErr(fmt.Errorf("store: delete tags of purged manifests: %w", err))
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM container_manifest_relationships
		WHERE namespace_id = $1 AND (parent_container_manifest_id = ANY($2::uuid[]) OR child_container_manifest_id = ANY($2::uuid[]))`,
		nsID, ids); err != nil {
		return db.MapErr(fmt.Errorf("store: delete relationships of purged manifests: %w", err))
	}
	if _, err := tx.Exec(ctx, `DELETE FROM container_manifests WHERE namespace_id = $1 AND id = ANY($2::uuid[])`,
		nsID, ids); err != nil {
		return db.MapErr(fmt.Errorf("store: delete purged manifests: %w", err))
	}
	return nil
}

// PurgeBlobLinks hard-deletes trashed blob links of images (removed
// through the OCI blob API) by id; ids not in the trash are skipped.
func (s *Store) PurgeBlobLinks(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) ([]uuid.UUID, store.Released, error) {
	locked, err := collectAttached(tx.Query(ctx, `
		SELECT id, blob_storage_attachment_id, blob_sha256 FROM container_blobs
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND soft_deleted_at IS NOT NULL
		  AND ($3::timestamptz IS NULL OR soft_deleted_at <= $3)
		ORDER BY id
		FOR UPDATE`, nsID, ids, cutoff))
	if err != nil || len(locked) == 0 {
		return nil, store.Released{}, wrap("lock trashed blob links", err)
	}
	purgeIDs, atts := splitAttached(locked)
	rel, err := s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		_, err := tx.Exec(ctx, `DELETE FROM container_blobs WHERE namespace_id = $1 AND id = ANY($2::uuid[])`, nsID, purgeIDs)
		return wrap("delete purged blob links", err)
	})
	if err != nil {
		return nil, store.Released{}, err
	}
	return purgeIDs, rel, nil
}

// PurgeImages hard-deletes images by id with everything they hold: tags,
// relationships, manifests and blob links, whatever their state. trashed
// limits it to images in the trash (deleted at or before cutoff when not
// nil); otherwise the caller has locked the repository (a repository purge).
// Ids that do not qualify are skipped.
func (s *Store) PurgeImages(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, trashed bool, cutoff *time.Time) ([]uuid.UUID, store.Released, error) {
	rows, err := tx.Query(ctx, `
		SELECT id FROM container_images
		WHERE namespace_id = $1 AND id = ANY($2::uuid[])
		  AND (NOT $3 OR soft_deleted_at IS NOT NULL) AND ($4::timestamptz IS NULL OR soft_deleted_at <= $4)
		ORDER BY id
		FOR UPDATE`, nsID, ids, trashed, cutoff)
	images, err := db.CollectIDs(rows, err)
	if err != nil || len(images) == 0 {
		return nil, store.Released{}, wrap("lock images to purge", err)
	}
	rel, err := s.deleteImages(ctx, tx, nsID, images, "purge images", `
		SELECT id, blob_storage_attachment_id, blob_sha256 FROM container_manifests
		WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])
		UNION ALL
		SELECT id, blob_storage_attachment_id, blob_sha256 FROM container_blobs
		WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_tags WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_manifest_relationships WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_manifest_blob_references WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_manifests WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_blobs WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_images WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	if err != nil {
		return nil, store.Released{}, err
	}
	return images, rel, nil
}

// deleteImages hard-deletes the locked images' rows with deletes
// (children first; each takes $1 namespace and $2 image ids) and detaches
// the attachments of the rows owned lists (id, attachment, sha256), in
// the caller's transaction.
func (s *Store) deleteImages(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, images []uuid.UUID, what, owned string, deletes ...string) (store.Released, error) {
	rows, err := collectAttached(tx.Query(ctx, owned, nsID, images))
	if err != nil {
		return store.Released{}, wrap(what+": attached rows", err)
	}
	_, atts := splitAttached(rows)
	return s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
		for _, q := range deletes {
			if _, err := tx.Exec(ctx, q, nsID, images); err != nil {
				return wrap(what, err)
			}
		}
		return nil
	})
}

// ImagesOfRepository lists up to limit image ids of a repository, any
// state (the repository purge empties it image by image).
func (s *Store) ImagesOfRepository(ctx context.Context, q db.Queryer, nsID, repositoryID uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT ci.id FROM container_images ci
		JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id
		WHERE ci.namespace_id = $1 AND cr.namespace_id = $1 AND cr.repository_id = $2
		ORDER BY ci.id LIMIT $3`, nsID, repositoryID, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrap("images of repository", err)
}

// Expired lists up to limit ids of trashed rows of a table of this
// package deleted at or before cutoff, oldest first (a range scan of
// the table's trash index).
func (s *Store) Expired(ctx context.Context, q db.Queryer, kind ExpiryKind, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	table, ok := expiryTables[kind]
	if !ok {
		return nil, fmt.Errorf("store: unknown container expiry kind %q", kind)
	}
	rows, err := q.Query(ctx, db.ExpiredSQL(table), nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrap("expired "+table, err)
}

// ExpiryKind names a trashed container table.
type ExpiryKind string

const (
	ExpiryImages    ExpiryKind = "images"
	ExpiryManifests ExpiryKind = "manifests"
	ExpiryBlobLinks ExpiryKind = "blob_links"
)

var expiryTables = map[ExpiryKind]string{
	ExpiryImages:    "container_images",
	ExpiryManifests: "container_manifests",
	ExpiryBlobLinks: "container_blobs",
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", what, err)
}
