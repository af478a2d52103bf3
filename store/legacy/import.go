package legacy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// The database side of the two import passes (legacy/importer): the hosted
// repository a legacy repository lands in, the manifests pass 1 stored, and
// the one transaction of pass 2.

// EnsureTarget returns the container target of a legacy repository,
// creating its hosted container repository (private, docker format) when
// the namespace has none of that name, and records it on the row. The
// namespace must exist and accept writes.
func (s *Store) EnsureTarget(ctx context.Context, r *Repository) (*container.Target, error) {
	nss, err := s.core.NamespacesByIDs(ctx, []uuid.UUID{r.NamespaceID})
	if err != nil {
		return nil, err
	}
	if len(nss) != 1 {
		return nil, errs.New(container.CodeNameUnknown, "container repository unknown: namespace %s of legacy repository %s", r.NamespaceID, r.LegacyPath)
	}
	slug := nss[0].Slug
	t, err := s.container.ResolveTargetIn(ctx, r.NamespaceID, slug, r.RepositoryName, r.ImageName)
	if store.HasCode(err, container.CodeNameUnknown) {
		_, cerr := s.core.CreateRepository(ctx, store.NewRepository{Namespace: slug, Name: r.RepositoryName,
			Format: enum.FormatDocker, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate})
		if cerr != nil && !store.HasCode(cerr, store.CodeAlreadyExists) {
			return nil, fmt.Errorf("store: create repository %s/%s for %s: %w", slug, r.RepositoryName, r.LegacyPath, cerr)
		}
		t, err = s.container.ResolveTargetIn(ctx, r.NamespaceID, slug, r.RepositoryName, r.ImageName)
	}
	if err != nil {
		return nil, err
	}
	if t.Virtual || t.Remote != nil {
		return nil, errs.New(container.CodeNameUnknown, "container repository unknown: %s/%s is not a hosted repository: cannot import %s", slug, r.RepositoryName, r.LegacyPath)
	}
	if !t.ServesWrites {
		return nil, fmt.Errorf("store: namespace %s is %s: cannot import %s", slug, t.NamespaceState, r.LegacyPath)
	}
	if r.RepositoryID == nil || *r.RepositoryID != t.RepositoryID {
		if err := s.SetRepositoryTarget(ctx, r.ID, t.RepositoryID); err != nil {
			return nil, err
		}
		id := t.RepositoryID
		r.RepositoryID = &id
	}
	return t, nil
}

// RecordImportedManifest remembers that an import pass stored a
// manifest for the legacy repository (idempotent).
func (s *Store) RecordImportedManifest(ctx context.Context, legacyID uuid.UUID, digest [32]byte, mediaType string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO legacy_imported_manifests (legacy_repository_id, digest, media_type) VALUES ($1, $2, $3)
		ON CONFLICT (legacy_repository_id, digest) DO NOTHING`, legacyID, digest[:], mediaType)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: record imported manifest: %w", err))
	}
	return nil
}

// ImportedManifests lists the digests the passes stored for a legacy
// repository, ascending.
func (s *Store) ImportedManifests(ctx context.Context, legacyID uuid.UUID) ([][32]byte, error) {
	rows, err := s.pool.Query(ctx, `SELECT digest FROM legacy_imported_manifests WHERE legacy_repository_id = $1 ORDER BY digest`, legacyID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: imported manifests: %w", err))
	}
	defer rows.Close()
	var out [][32]byte
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("store: imported manifests: %w", err)
		}
		out = append(out, [32]byte(d))
	}
	return out, rows.Err()
}

// Final is what pass 2 commits for one repository.
type Final struct {
	LegacyID uuid.UUID
	Target   *container.Target
	// Tags is every tag of the legacy repository that imports, by the
	// digest of its manifest (each already stored in the image).
	Tags map[string][32]byte
	// KeepManifests and KeepBlobs are everything the tags reach (index
	// children, configs, layers). Imported manifests and image blobs outside
	// them are detached.
	KeepManifests [][32]byte
	KeepBlobs     [][32]byte
}

// FinalResult reports what the pass-2 transaction changed.
type FinalResult struct {
	TagsSet           int
	TagsRemoved       int
	ManifestsDetached int
	BlobsDetached     int
}

// CompleteImport is the one transaction of pass 2: with the
// legacy row locked (and still importing), the image's tags become exactly
// in.Tags, the imported manifests and image blobs the tags no longer reach
// are deleted and their attachments detached (the online GC reviews the
// blobs left without one), and the row is marked migrated. Any failure
// (ctx deadline included) rolls everything back.
func (s *Store) CompleteImport(ctx context.Context, in Final) (*FinalResult, error) {
	res := &FinalResult{}
	t := in.Target
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		*res = FinalResult{}
		var status int16
		err := tx.QueryRow(ctx, `SELECT status FROM legacy_repositories WHERE id = $1 FOR UPDATE`, in.LegacyID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeRepositoryUnknown, "legacy repository unknown: %s", in.LegacyID)
		}
		if err != nil {
			return fmt.Errorf("store: lock legacy repository: %w", err)
		}
		if enum.LegacyStatus(status) != enum.LegacyImporting {
			return errs.New(CodeState, "legacy repository is not in a state that allows this: %s is %s, not importing", in.LegacyID, enum.LegacyStatus(status))
		}
		imageID, err := container.EnsureImage(ctx, tx, t)
		if err != nil {
			return err
		}
		if err := setTags(ctx, tx, t.NamespaceID, imageID, in.Tags, res); err != nil {
			return err
		}
		if err := s.detachUnreached(ctx, tx, in, imageID, res); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE legacy_repositories SET status = 4, import_finished_at = now(),
			lease_expires_at = NULL, tag_count = $2, updated_at = now() WHERE id = $1`, in.LegacyID, len(in.Tags))
		if err != nil {
			return fmt.Errorf("store: mark migrated: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// setTags makes the image's tags exactly tags.
func setTags(ctx context.Context, tx pgx.Tx, nsID, imageID uuid.UUID, tags map[string][32]byte, res *FinalResult) error {
	names := make([]string, 0, len(tags))
	for name := range tags {
		names = append(names, name)
	}
	slices.Sort(names)
	del, err := tx.Exec(ctx, `DELETE FROM container_tags WHERE namespace_id = $1 AND container_image_id = $2 AND NOT (name = ANY($3::text[]))`,
		nsID, imageID, names)
	if err != nil {
		return fmt.Errorf("store: remove tags: %w", err)
	}
	res.TagsRemoved = int(del.RowsAffected())
	if len(names) == 0 {
		return nil
	}
	digests := make([][]byte, len(names))
	ids := make([]uuid.UUID, len(names))
	for i, n := range names {
		d := tags[n]
		digests[i] = d[:]
		ids[i] = db.NewID()
	}
	// One statement for every tag: the manifest of each by digest (active,
	// in the image); a tag whose manifest is missing makes the count short.
	if _, err := tx.Exec(ctx, `
		INSERT INTO container_tags AS ct (id, namespace_id, container_image_id, container_manifest_id, name)
		SELECT u.id, $1, $2, cm.id, u.name
		FROM unnest($3::uuid[], $4::text[], $5::bytea[]) AS u(id, name, digest)
		JOIN container_manifests cm ON cm.namespace_id = $1 AND cm.container_image_id = $2
		     AND cm.digest = u.digest AND cm.soft_deleted_at IS NULL
		ORDER BY u.name
		ON CONFLICT (namespace_id, container_image_id, name) DO UPDATE
		SET container_manifest_id = EXCLUDED.container_manifest_id
		WHERE ct.container_manifest_id IS DISTINCT FROM EXCLUDED.container_manifest_id`,
		nsID, imageID, ids, names, digests); err != nil {
		return fmt.Errorf("store: set tags: %w", err)
	}
	res.TagsSet = len(names)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM container_tags WHERE namespace_id = $1 AND container_image_id = $2`,
		nsID, imageID).Scan(&n); err != nil {
		return fmt.Errorf("store: count tags: %w", err)
	}
	if n != len(names) {
		return errs.New(container.CodeManifestUnknown, "manifest unknown: %d of %d tags have no manifest in the image", len(names)-n, len(names))
	}
	return nil
}

// detachUnreached deletes the imported manifests and the image's blobs
// that the tags no longer reach, detaching their attachments.
func (s *Store) detachUnreached(ctx context.Context, tx pgx.Tx, in Final, imageID uuid.UUID, res *FinalResult) error {
	keepM := toBytea(in.KeepManifests)
	keepB := toBytea(in.KeepBlobs)
	nsID := in.Target.NamespaceID
	var atts []store.Attachment
	rows, err := tx.Query(ctx, `
		WITH gone AS (
			SELECT cm.id FROM container_manifests cm
			JOIN legacy_imported_manifests lim ON lim.legacy_repository_id = $3 AND lim.digest = cm.digest
			WHERE cm.namespace_id = $1 AND cm.container_image_id = $2 AND cm.soft_deleted_at IS NULL
			  AND NOT (cm.digest = ANY($4::bytea[]))
			ORDER BY cm.id
			FOR UPDATE OF cm
		), rel AS (
			DELETE FROM container_manifest_relationships r USING gone
			WHERE r.namespace_id = $1 AND (r.parent_container_manifest_id = gone.id OR r.child_container_manifest_id = gone.id)
		), refs AS (
			DELETE FROM container_manifest_blob_references r USING gone
			WHERE r.namespace_id = $1 AND r.container_manifest_id = gone.id
		)
		DELETE FROM container_manifests cm USING gone
		WHERE cm.namespace_id = $1 AND cm.id = gone.id
		RETURNING cm.blob_storage_attachment_id, cm.blob_sha256`, nsID, imageID, in.LegacyID, keepM)
	if err != nil {
		return fmt.Errorf("store: delete unreached manifests: %w", err)
	}
	if atts, err = collectAttachments(rows, atts); err != nil {
		return fmt.Errorf("store: delete unreached manifests: %w", err)
	}
	res.ManifestsDetached = len(atts)
	rows, err = tx.Query(ctx, `
		DELETE FROM container_blobs cb
		WHERE cb.namespace_id = $1 AND cb.container_image_id = $2 AND cb.soft_deleted_at IS NULL
		  AND NOT (cb.digest = ANY($3::bytea[]))
		RETURNING cb.blob_storage_attachment_id, cb.blob_sha256`, nsID, imageID, keepB)
	if err != nil {
		return fmt.Errorf("store: delete unreached blobs: %w", err)
	}
	if atts, err = collectAttachments(rows, atts); err != nil {
		return fmt.Errorf("store: delete unreached blobs: %w", err)
	}
	res.BlobsDetached = len(atts) - res.ManifestsDetached
	if _, err := s.core.Detach(ctx, tx, nsID, atts); err != nil {
		return err
	}
	return nil
}

func collectAttachments(rows pgx.Rows, out []store.Attachment) ([]store.Attachment, error) {
	defer rows.Close()
	for rows.Next() {
		var (
			id  int64
			sha []byte
		)
		if err := rows.Scan(&id, &sha); err != nil {
			return nil, err
		}
		out = append(out, store.Attachment{ID: id, SHA256: [32]byte(sha)})
	}
	return out, rows.Err()
}

func toBytea(in [][32]byte) [][]byte {
	out := make([][]byte, len(in))
	for i := range in {
		out[i] = in[i][:]
	}
	return out
}

// ImageContents returns the digests of the image's active blobs and
// manifests (two queries), so a pass skips what is already imported
// without one round trip per item. Empty sets while the image does not
// exist yet.
func (s *Store) ImageContents(ctx context.Context, t *container.Target) (blobs, manifests map[[32]byte]bool, err error) {
	blobs, manifests = map[[32]byte]bool{}, map[[32]byte]bool{}
	if t.ImageID == uuid.Nil {
		return blobs, manifests, nil
	}
	for _, q := range []struct {
		sql string
		out map[[32]byte]bool
	}{
		{`SELECT digest FROM container_blobs WHERE namespace_id = $1 AND container_image_id = $2 AND soft_deleted_at IS NULL`, blobs},
		{`SELECT digest FROM container_manifests WHERE namespace_id = $1 AND container_image_id = $2 AND soft_deleted_at IS NULL`, manifests},
	} {
		rows, err := s.pool.Query(ctx, q.sql, t.NamespaceID, t.ImageID)
		if err != nil {
			return nil, nil, db.MapErr(fmt.Errorf("store: image contents: %w", err))
		}
		for rows.Next() {
			var d []byte
			if err := rows.Scan(&d); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("store: image contents: %w", err)
			}
			q.out[[32]byte(d)] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, db.MapErr(fmt.Errorf("store: image contents: %w", err))
		}
	}
	return blobs, manifests, nil
}

// RecordImportedManifests is RecordImportedManifest for many
// manifests in one statement.
func (s *Store) RecordImportedManifests(ctx context.Context, legacyID uuid.UUID, digests [][32]byte, mediaTypes []string) error {
	if len(digests) != len(mediaTypes) {
		return fmt.Errorf("store: %d digests, %d media types", len(digests), len(mediaTypes))
	}
	if len(digests) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO legacy_imported_manifests (legacy_repository_id, digest, media_type)
		SELECT $1, d, mt FROM unnest($2::bytea[], $3::text[]) AS u(d, mt)
		ON CONFLICT (legacy_repository_id, digest) DO NOTHING`, legacyID, toBytea(digests), mediaTypes)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: record imported manifests: %w", err))
	}
	return nil
}
