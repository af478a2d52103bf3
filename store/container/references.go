package container

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// Manifest blob references (docs/schema.md, "Format tables"): each
// manifest's config and layer digests are rows of
// container_manifest_blob_references, written with the manifest. A purge
// uses them to free the image's blob links that only the purged manifests
// needed; the links any other manifest of the image (active or in the
// trash) references stay, and so do the links of other images (each
// image holds its own link and attachment).
//
// Manifests stored before the table existed are not "recorded" until the
// backfill (RecordBlobReferences) has read their payloads. While an image
// holds one, a purge cannot tell what it references and frees none of the
// image's links; it marks the image (unreferenced_links_pending) and
// ReviewPendingLinks frees them once the image is fully recorded. The
// same happens to a link younger than LinkGrace: a push may have uploaded
// it for a manifest that has not arrived yet.

// LinkGrace is how old an unreferenced blob link must be before a purge
// frees it: the longest an upload can take (the resumable upload TTL) and
// at least the GC review delay. A push whose manifest arrives later than
// that after its blobs, or that found the link already there (HEAD) just
// before a purge freed it, gets MANIFEST_BLOB_UNKNOWN and uploads again.
func (s *Store) LinkGrace() time.Duration {
	o := s.core.Options()
	return max(o.ReviewDelay, o.ResumableUploadTTL, o.MonolithicUploadTTL)
}

// insertBlobReferences records what manifests reference: manifest
// ids[i] of image images[i] references the distinct digests refs[i].
// insertBlobReferencesSQL names the namespace's partition: every manifest
// push runs it (see checkManifestReferencesSQL).
var insertBlobReferencesSQL = partition.Statements(`
	INSERT INTO {container_manifest_blob_references} (namespace_id, container_image_id, container_manifest_id, digest)
	SELECT $1, i, m, d FROM unnest($2::uuid[], $3::uuid[], $4::bytea[]) AS u(i, m, d)
	ON CONFLICT DO NOTHING`, "container_manifest_blob_references")

func insertBlobReferences(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, images, ids []uuid.UUID, refs [][][]byte) error {
	imgs, mans, digs := referenceRows(images, ids, refs)
	if len(digs) == 0 {
		return nil
	}
	if _, err := partition.Exec(ctx, tx, &insertBlobReferencesSQL, nsID, imgs, mans, digs); err != nil {
		return db.MapErr(fmt.Errorf("store: insert manifest blob references: %w", err))
	}
	return nil
}

// referenceRows flattens what manifests reference into the columns of
// insertBlobReferencesSQL: one row per digest of refs[i], for manifest
// ids[i] of image images[i].
func referenceRows(images, ids []uuid.UUID, refs [][][]byte) (imgs, mans []uuid.UUID, digs [][]byte) {
	for i := range ids {
		for _, d := range refs[i] {
			imgs, mans, digs = append(imgs, images[i]), append(mans, ids[i]), append(digs, d)
		}
	}
	return imgs, mans, digs
}

// unreferencedLinks locks (FOR UPDATE, digest order) and returns the
// active blob links of the purged manifests' images that only those
// manifests referenced and that are older than LinkGrace. It runs after
// the manifests are locked and before their blob rows are (the package's
// lock order). Images where it cannot decide are marked pending.
//
// Race with a push: the push locks the links it needs FOR SHARE. A push
// that got there first makes this wait, and the reference check below (a
// later statement) then sees its manifest's references; a push that comes
// after waits for this transaction and finds the link gone, failing with
// MANIFEST_BLOB_UNKNOWN.
func (s *Store) unreferencedLinks(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, purged []uuid.UUID) ([]attachedRow, error) {
	rows, err := tx.Query(ctx, `
		SELECT container_image_id, bool_and(blob_references_recorded) FROM container_manifests
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) GROUP BY container_image_id`, nsID, purged)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: images of purged manifests: %w", err))
	}
	var (
		images  []uuid.UUID
		pending []uuid.UUID
	)
	for rows.Next() {
		var (
			id  uuid.UUID
			all bool
		)
		if err := rows.Scan(&id, &all); err != nil {
			rows.Close()
			return nil, db.MapErr(fmt.Errorf("store: images of purged manifests: %w", err))
		}
		if all {
			images = append(images, id)
		} else {
			pending = append(pending, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: images of purged manifests: %w", err))
	}
	links, kept, err := s.freeableLinks(ctx, tx, nsID, images, purged)
	if err != nil {
		return nil, err
	}
	return links, markPending(ctx, tx, nsID, append(pending, kept...))
}

// freeableLinks is the decision shared by the purge and the review of
// pending images: of the images, those with no unrecorded manifest
// (outside excluded) have their active links locked (the links the
// excluded manifests referenced; every link when excluded is empty);
// the links no other manifest of the image references and older than
// LinkGrace are returned. kept lists the images where a link was kept
// undecided (an unrecorded manifest, a young link).
func (s *Store) freeableLinks(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, images, excluded []uuid.UUID) (free []attachedRow, kept []uuid.UUID, err error) {
	if len(images) == 0 {
		return nil, nil, nil
	}
	if excluded == nil {
		excluded = []uuid.UUID{}
	}
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT container_image_id FROM container_manifests
		WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[]) AND id <> ALL($3::uuid[])
		  AND NOT blob_references_recorded`, nsID, images, excluded)
	unrecorded, err := db.CollectIDs(rows, err)
	if err != nil {
		return nil, nil, wrap("unrecorded manifests of images", err)
	}
	kept = unrecorded
	skip := make(map[uuid.UUID]bool, len(unrecorded))
	for _, id := range unrecorded {
		skip[id] = true
	}
	var decide []uuid.UUID
	for _, id := range images {
		if !skip[id] {
			decide = append(decide, id)
		}
	}
	if len(decide) == 0 {
		return nil, kept, nil
	}
	type link struct {
		attachedRow
		image   uuid.UUID
		created time.Time
	}
	rows, err = tx.Query(ctx, `
		SELECT cb.id, cb.blob_storage_attachment_id, cb.blob_sha256, cb.container_image_id, cb.created_at
		FROM container_blobs cb
		WHERE cb.namespace_id = $1 AND cb.container_image_id = ANY($2::uuid[]) AND cb.soft_deleted_at IS NULL
		  AND (cardinality($3::uuid[]) = 0 OR EXISTS (
		      SELECT 1 FROM container_manifest_blob_references r
		      WHERE r.namespace_id = $1 AND r.container_manifest_id = ANY($3::uuid[])
		        AND r.container_image_id = cb.container_image_id AND r.digest = cb.digest))
		ORDER BY cb.digest, cb.id
		FOR UPDATE OF cb`, nsID, decide, excluded)
	if err != nil {
		return nil, nil, wrap("lock blob links", err)
	}
	locked, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (link, error) {
		var (
			l   link
			sha []byte
		)
		err := r.Scan(&l.id, &l.att.ID, &sha, &l.image, &l.created)
		if err == nil && len(sha) != 32 {
			err = fmt.Errorf("link %s with a %d-byte digest", l.id, len(sha))
		}
		if err == nil {
			l.att.SHA256 = [32]byte(sha)
		}
		return l, err
	})
	if err != nil || len(locked) == 0 {
		return nil, kept, wrap("lock blob links", db.MapErr(err))
	}
	digests := make([][]byte, len(locked))
	for i, l := range locked {
		digests[i] = l.att.SHA256[:]
	}
	// A later statement than the lock: it sees the references of every
	// push that held a link before us.
	rows, err = tx.Query(ctx, `
		SELECT DISTINCT container_image_id, digest FROM container_manifest_blob_references
		WHERE namespace_id = $1 AND container_image_id = ANY($2::uuid[]) AND digest = ANY($3::bytea[])
		  AND container_manifest_id <> ALL($4::uuid[])`, nsID, decide, digests, excluded)
	if err != nil {
		return nil, nil, wrap("references of blob links", err)
	}
	type key struct {
		image uuid.UUID
		sha   [32]byte
	}
	used := map[key]bool{}
	for rows.Next() {
		var (
			img uuid.UUID
			d   []byte
		)
		if err := rows.Scan(&img, &d); err != nil {
			rows.Close()
			return nil, nil, wrap("references of blob links", err)
		}
		used[key{img, [32]byte(d)}] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, wrap("references of blob links", err)
	}
	youngAfter := s.core.Options().Clock.Now().Add(-s.LinkGrace())
	keptYoung := map[uuid.UUID]bool{}
	for _, l := range locked {
		switch {
		case used[key{l.image, l.att.SHA256}]:
		case l.created.After(youngAfter):
			if !keptYoung[l.image] {
				keptYoung[l.image] = true
				kept = append(kept, l.image)
			}
		default:
			free = append(free, l.attachedRow)
		}
	}
	return free, kept, nil
}

func markPending(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, images []uuid.UUID) error {
	if len(images) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		UPDATE container_images SET unreferenced_links_pending = true
		WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND NOT unreferenced_links_pending`, nsID, images)
	return wrap("mark images pending", err)
}

func deleteLinks(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM container_blobs WHERE namespace_id = $1 AND id = ANY($2::uuid[])`, nsID, ids)
	return wrap("delete unreferenced blob links", err)
}

// LinkReview is what one ReviewPendingLinks batch did.
type LinkReview struct {
	Images     int // pending images reviewed
	StillKept  int // of them, still pending (an unrecorded manifest, a young link)
	LinksFreed int
	Released   store.Released
}

// ReviewPendingLinks reviews up to limit images of the namespace a purge
// marked pending, in one transaction: the links none of the image's
// manifests references (and older than LinkGrace) are deleted and
// detached; an image is unmarked unless something had to be kept again.
func (s *Store) ReviewPendingLinks(ctx context.Context, nsID uuid.UUID, limit int) (*LinkReview, error) {
	var out *LinkReview
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		out = &LinkReview{}
		rows, err := tx.Query(ctx, `
			SELECT id FROM container_images
			WHERE namespace_id = $1 AND unreferenced_links_pending
			ORDER BY id LIMIT $2
			FOR UPDATE`, nsID, limit)
		images, err := db.CollectIDs(rows, err)
		if err != nil || len(images) == 0 {
			return wrap("lock pending images", err)
		}
		out.Images = len(images)
		free, kept, err := s.freeableLinks(ctx, tx, nsID, images, nil)
		if err != nil {
			return err
		}
		ids, atts := splitAttached(free)
		out.Released, err = s.core.PurgeAttached(ctx, tx, nsID, atts, func() error {
			return deleteLinks(ctx, tx, nsID, ids)
		})
		if err != nil {
			return err
		}
		out.LinksFreed, out.StillKept = len(ids), len(kept)
		if kept == nil {
			kept = []uuid.UUID{}
		}
		_, err = tx.Exec(ctx, `
			UPDATE container_images SET unreferenced_links_pending = false
			WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND id <> ALL($3::uuid[])`, nsID, images, kept)
		return wrap("unmark reviewed images", err)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UnrecordedManifest is a manifest whose blob references are not
// recorded yet, with its payload blob row.
type UnrecordedManifest struct {
	ManifestRow
	ImageID uuid.UUID
}

// UnrecordedManifests lists up to limit manifests of the namespace (any
// state) whose references are not recorded, by id after after, with
// their payload blob rows (a manifest whose blob row is missing is left
// out).
func (s *Store) UnrecordedManifests(ctx context.Context, nsID, after uuid.UUID, limit int) ([]*UnrecordedManifest, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+manifestRowColumns+`, cm.container_image_id FROM container_manifests cm
		WHERE cm.namespace_id = $1 AND NOT cm.blob_references_recorded AND cm.id > $2
		ORDER BY cm.id LIMIT $3`, nsID, after, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: unrecorded manifests: %w", err))
	}
	out, err := collectUnrecorded(rows)
	if err != nil || len(out) == 0 {
		return nil, wrap("unrecorded manifests", db.MapErr(err))
	}
	return out, s.fillPayloads(ctx, nsID, out)
}

// RecordedReferences are the references of one manifest, found by the
// backfill.
type RecordedReferences struct {
	ManifestID uuid.UUID
	Digests    [][32]byte
}

// RecordBlobReferences records the references of manifests that were
// stored unrecorded and marks them recorded, in one transaction; a
// manifest purged or recorded meanwhile is skipped. It returns how many
// it recorded.
func (s *Store) RecordBlobReferences(ctx context.Context, nsID uuid.UUID, in []RecordedReferences) (int, error) {
	if len(in) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(in))
	byID := make(map[uuid.UUID][][]byte, len(in))
	for i, r := range in {
		ids[i] = r.ManifestID
		byID[r.ManifestID] = distinctSHA(func(yield func([32]byte) bool) {
			for _, d := range r.Digests {
				if !yield(d) {
					return
				}
			}
		})
	}
	n := 0
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH locked AS (
				SELECT id FROM container_manifests
				WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND NOT blob_references_recorded
				ORDER BY id FOR UPDATE
			)
			UPDATE container_manifests cm SET blob_references_recorded = true FROM locked
			WHERE cm.namespace_id = $1 AND cm.id = locked.id
			RETURNING cm.id, cm.container_image_id`, nsID, ids)
		if err != nil {
			return db.MapErr(fmt.Errorf("store: mark manifests recorded: %w", err))
		}
		var mans, imgs []uuid.UUID
		for rows.Next() {
			var m, i uuid.UUID
			if err := rows.Scan(&m, &i); err != nil {
				rows.Close()
				return db.MapErr(fmt.Errorf("store: mark manifests recorded: %w", err))
			}
			mans, imgs = append(mans, m), append(imgs, i)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return db.MapErr(fmt.Errorf("store: mark manifests recorded: %w", err))
		}
		refs := make([][][]byte, len(mans))
		for i, m := range mans {
			refs[i] = byID[m]
		}
		n = len(mans)
		return insertBlobReferences(ctx, tx, nsID, imgs, mans, refs)
	})
	return n, err
}

// NamespacePage lists up to limit unpurged namespace ids after a key
// (namespaces is small and unpartitioned), for the backfill.
func (s *Store) NamespacePage(ctx context.Context, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM namespaces WHERE purged_at IS NULL AND id > $1 ORDER BY id LIMIT $2`, after, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrap("namespaces", err)
}
