package container

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// Management-side reads and changes of container artifacts (images,
// manifests, tags). Every read takes many parents at once (= ANY / a
// LATERAL join per parent) so the GraphQL dataloaders issue one statement
// per level of a nested query, whatever the row count.

// Image is a container_images row.
type Image struct {
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID // repositories.id of the owning repository
	Name             string
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

// Manifest is a container_manifests row.
type Manifest struct {
	ID            uuid.UUID
	NamespaceID   uuid.UUID
	ImageID       uuid.UUID
	RepositoryID  uuid.UUID
	Digest        []byte // raw sha256
	MediaType     string
	Size          int64
	CreatedAt     time.Time
	SoftDeletedAt *time.Time
	// SubjectDigest is the raw digest of the manifest's OCI subject (nil:
	// none, or not recorded yet); ArtifactType what the referrers API
	// reports for it ("": none or not recorded).
	SubjectDigest []byte
	ArtifactType  string
}

// DigestString renders the digest as sha256:<hex>.
func (m *Manifest) DigestString() string { return store.FormatDigest(m.Digest) }

// Tag is a container_tags row.
type Tag struct {
	ID          uuid.UUID
	NamespaceID uuid.UUID
	ImageID     uuid.UUID
	ManifestID  uuid.UUID
	Name        string
}

const imageColumns = `ci.id, ci.namespace_id, cr.repository_id, ci.name, ci.last_downloaded_at, ci.soft_deleted_at`

// imageFrom joins an image to its container repository for the parent
// repositories.id.
const imageFrom = `container_images ci
	JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id`

func scanImage(row pgx.Row) (*Image, error) {
	var i Image
	if err := row.Scan(&i.ID, &i.NamespaceID, &i.RepositoryID, &i.Name, &i.LastDownloadedAt, &i.SoftDeletedAt); err != nil {
		return nil, err
	}
	return &i, nil
}

const manifestColumns = `cm.id, cm.namespace_id, cm.container_image_id, cr.repository_id, cm.digest, cm.media_type,
	cm.size, cm.created_at, cm.soft_deleted_at, cm.subject_digest, COALESCE(cm.artifact_type, '')`

const manifestFrom = `container_manifests cm
	JOIN container_images ci ON ci.namespace_id = cm.namespace_id AND ci.id = cm.container_image_id
	JOIN container_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_repository_id`

func scanManifest(row pgx.Row) (*Manifest, error) {
	var m Manifest
	if err := row.Scan(&m.ID, &m.NamespaceID, &m.ImageID, &m.RepositoryID, &m.Digest, &m.MediaType,
		&m.Size, &m.CreatedAt, &m.SoftDeletedAt, &m.SubjectDigest, &m.ArtifactType); err != nil {
		return nil, err
	}
	return &m, nil
}

const tagColumns = `ct.id, ct.namespace_id, ct.container_image_id, ct.container_manifest_id, ct.name`

func scanTag(row pgx.Row) (*Tag, error) {
	var t Tag
	if err := row.Scan(&t.ID, &t.NamespaceID, &t.ImageID, &t.ManifestID, &t.Name); err != nil {
		return nil, err
	}
	return &t, nil
}

// listedImage is the condition for an image (ci) to be listed: it holds a
// live manifest. An image whose manifests are all in the trash (or purged)
// is not shown, and shows again when a manifest is restored or pushed
// (a push reuses the active image row). The probe is one lookup of the
// (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL
// index; ns is the namespace id expression.
func listedImage(ns string) string {
	return `EXISTS (SELECT 1 FROM container_manifests cm
		WHERE cm.namespace_id = ` + ns + ` AND cm.container_image_id = ci.id AND cm.soft_deleted_at IS NULL)`
}

// ImagesOfRepositories returns, per repository id, the first limit+1
// listed images (active, holding a live manifest) by name after
// afterName (nil: from the start): one LATERAL index range scan per
// repository on (namespace_id, container_repository_id, name) WHERE
// soft_deleted_at IS NULL.
func (s *Store) ImagesOfRepositories(ctx context.Context, nsID uuid.UUID, repoIDs []uuid.UUID, afterName *string, limit int) (map[uuid.UUID][]*Image, error) {
	keyset, args := "", []any{nsID, repoIDs, limit + 1}
	if afterName != nil {
		keyset, args = " AND ci.name > $4", append(args, *afterName)
	}
	return db.GroupBy(ctx, s.pool, "container images", `
		SELECT cr.repository_id, ci.id, ci.namespace_id, cr.repository_id, ci.name, ci.last_downloaded_at, ci.soft_deleted_at
		FROM container_repositories cr
		CROSS JOIN LATERAL (
			SELECT ci.* FROM container_images ci
			WHERE ci.namespace_id = $1 AND ci.container_repository_id = cr.id AND ci.soft_deleted_at IS NULL
			  AND `+listedImage("$1")+keyset+`
			ORDER BY ci.name LIMIT $3) ci
		WHERE cr.namespace_id = $1 AND cr.repository_id = ANY($2)
		ORDER BY cr.repository_id, ci.name`, args, scanImage)
}

// ImageOfRepositoriesByName returns, per repository id, its active image
// called name (repositories without one are left out): one probe of the
// unique (namespace_id, container_repository_id, name) index per
// repository, for all of them in one statement.
func (s *Store) ImageOfRepositoriesByName(ctx context.Context, nsID uuid.UUID, repoIDs []uuid.UUID, name string) (map[uuid.UUID][]*Image, error) {
	return db.GroupBy(ctx, s.pool, "container images by name", `
		SELECT cr.repository_id, `+imageColumns+`
		FROM container_repositories cr
		JOIN container_images ci ON ci.namespace_id = cr.namespace_id AND ci.container_repository_id = cr.id
		WHERE cr.namespace_id = $1 AND ci.namespace_id = $1 AND cr.repository_id = ANY($2)
		  AND ci.name = $3 AND ci.soft_deleted_at IS NULL`, []any{nsID, repoIDs, name}, scanImage)
}

// CountImagesOfRepositories counts listed images (as ImagesOfRepositories
// lists them) per repository id.
func (s *Store) CountImagesOfRepositories(ctx context.Context, nsID uuid.UUID, repoIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "container images", `
		SELECT cr.repository_id, count(*) FROM container_repositories cr
		JOIN container_images ci ON ci.namespace_id = cr.namespace_id AND ci.container_repository_id = cr.id
		WHERE cr.namespace_id = $1 AND ci.namespace_id = $1 AND cr.repository_id = ANY($2) AND ci.soft_deleted_at IS NULL
		  AND `+listedImage("$1")+`
		GROUP BY cr.repository_id`, nsID, repoIDs)
}

// TagsOfImages returns, per image id, the first limit+1 tags by name
// after afterName: LATERAL range scans of (namespace_id, container_image_id, name).
func (s *Store) TagsOfImages(ctx context.Context, nsID uuid.UUID, imageIDs []uuid.UUID, afterName *string, limit int) (map[uuid.UUID][]*Tag, error) {
	keyset, args := "", []any{nsID, imageIDs, limit + 1}
	if afterName != nil {
		keyset, args = " AND ct.name > $4", append(args, *afterName)
	}
	return db.GroupBy(ctx, s.pool, "container tags", `
		SELECT i.id, `+tagColumns+`
		FROM unnest($2::uuid[]) AS i(id)
		CROSS JOIN LATERAL (
			SELECT ct.* FROM container_tags ct
			WHERE ct.namespace_id = $1 AND ct.container_image_id = i.id`+keyset+`
			ORDER BY ct.name LIMIT $3) ct
		ORDER BY i.id, ct.name`, args, scanTag)
}

// CountTagsOfImages counts tags per image id.
func (s *Store) CountTagsOfImages(ctx context.Context, nsID uuid.UUID, imageIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "container tags", `
		SELECT container_image_id, count(*) FROM container_tags
		WHERE namespace_id = $1 AND container_image_id = ANY($2) GROUP BY container_image_id`, nsID, imageIDs)
}

// ManifestsOfImages returns, per image id, the first limit+1 active
// manifests by digest after afterDigest: LATERAL range scans of the
// (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL index.
func (s *Store) ManifestsOfImages(ctx context.Context, nsID uuid.UUID, imageIDs []uuid.UUID, afterDigest []byte, limit int) (map[uuid.UUID][]*Manifest, error) {
	keyset, args := "", []any{nsID, imageIDs, limit + 1}
	if afterDigest != nil {
		keyset, args = " AND cm.digest > $4", append(args, afterDigest)
	}
	return db.GroupBy(ctx, s.pool, "container manifests", `
		SELECT i.id, `+manifestColumns+`
		FROM unnest($2::uuid[]) AS i(id)
		CROSS JOIN LATERAL (
			SELECT cm.* FROM container_manifests cm
			WHERE cm.namespace_id = $1 AND cm.container_image_id = i.id AND cm.soft_deleted_at IS NULL`+keyset+`
			ORDER BY cm.digest LIMIT $3) cm
		JOIN container_images ci ON ci.namespace_id = $1 AND ci.id = cm.container_image_id
		JOIN container_repositories cr ON cr.namespace_id = $1 AND cr.id = ci.container_repository_id
		ORDER BY i.id, cm.digest`, args, scanManifest)
}

// CountManifestsOfImages counts active manifests per image id.
func (s *Store) CountManifestsOfImages(ctx context.Context, nsID uuid.UUID, imageIDs []uuid.UUID) (map[uuid.UUID]int, error) {
	return db.CountBy(ctx, s.pool, "container manifests", `
		SELECT container_image_id, count(*) FROM container_manifests
		WHERE namespace_id = $1 AND container_image_id = ANY($2) AND soft_deleted_at IS NULL
		GROUP BY container_image_id`, nsID, imageIDs)
}

// ImagesByIDs loads images (trash included) by id.
func (s *Store) ImagesByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) ([]*Image, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+imageColumns+` FROM `+imageFrom+`
		WHERE ci.namespace_id = $1 AND cr.namespace_id = $1 AND ci.id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, fmt.Errorf("load container images: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Image, error) { return scanImage(r) })
	if err != nil {
		return nil, fmt.Errorf("load container images: %w", err)
	}
	return out, nil
}

// ManifestsByIDs loads manifests (trash included) by id.
func (s *Store) ManifestsByIDs(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) ([]*Manifest, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+manifestColumns+` FROM `+manifestFrom+`
		WHERE cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND cm.id = ANY($2)`, nsID, ids)
	if err != nil {
		return nil, fmt.Errorf("load container manifests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Manifest, error) { return scanManifest(r) })
	if err != nil {
		return nil, fmt.Errorf("load container manifests: %w", err)
	}
	return out, nil
}

// TagNamesOfManifests returns the names of the tags pointing at each
// manifest, by name ((namespace_id, container_manifest_id) index).
func (s *Store) TagNamesOfManifests(ctx context.Context, nsID uuid.UUID, manifestIDs []uuid.UUID) (map[uuid.UUID][]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT container_manifest_id, name FROM container_tags
		WHERE namespace_id = $1 AND container_manifest_id = ANY($2)
		ORDER BY name`, nsID, manifestIDs)
	if err != nil {
		return nil, fmt.Errorf("load tag names: %w", err)
	}
	defer rows.Close()
	out := map[uuid.UUID][]string{}
	for rows.Next() {
		var id uuid.UUID
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("load tag names: %w", err)
		}
		out[id] = append(out[id], name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load tag names: %w", err)
	}
	return out, nil
}

// ReferencesOfManifests returns, per parent manifest id, its child
// manifests (index / manifest list entries), by digest.
func (s *Store) ReferencesOfManifests(ctx context.Context, nsID uuid.UUID, parentIDs []uuid.UUID) (map[uuid.UUID][]*Manifest, error) {
	return db.GroupBy(ctx, s.pool, "manifest references", `
		SELECT rel.parent_container_manifest_id, `+manifestColumns+`
		FROM container_manifest_relationships rel
		JOIN `+manifestFrom+` ON cm.namespace_id = rel.namespace_id AND cm.id = rel.child_container_manifest_id
		WHERE rel.namespace_id = $1 AND cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1
		  AND rel.parent_container_manifest_id = ANY($2)
		ORDER BY cm.digest`, []any{nsID, parentIDs}, scanManifest)
}

// ParentsOfManifests returns, per child manifest id, the manifests
// (indexes, manifest lists) that list it, by digest.
func (s *Store) ParentsOfManifests(ctx context.Context, nsID uuid.UUID, childIDs []uuid.UUID) (map[uuid.UUID][]*Manifest, error) {
	return db.GroupBy(ctx, s.pool, "manifest parents", `
		SELECT rel.child_container_manifest_id, `+manifestColumns+`
		FROM container_manifest_relationships rel
		JOIN `+manifestFrom+` ON cm.namespace_id = rel.namespace_id AND cm.id = rel.parent_container_manifest_id
		WHERE rel.namespace_id = $1 AND cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1
		  AND rel.child_container_manifest_id = ANY($2)
		ORDER BY cm.digest`, []any{nsID, childIDs}, scanManifest)
}

// ManifestOfImagesByDigest returns, per image id, its active manifest of
// the digest (images without one are left out): one probe of the unique
// (namespace_id, container_image_id, digest) index per image.
func (s *Store) ManifestOfImagesByDigest(ctx context.Context, nsID uuid.UUID, imageIDs []uuid.UUID, digest []byte) (map[uuid.UUID][]*Manifest, error) {
	return db.GroupBy(ctx, s.pool, "manifests by digest", `
		SELECT cm.container_image_id, `+manifestColumns+`
		FROM `+manifestFrom+`
		WHERE cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1
		  AND cm.container_image_id = ANY($2) AND cm.digest = $3 AND cm.soft_deleted_at IS NULL`,
		[]any{nsID, imageIDs, digest}, scanManifest)
}

// SubjectsOfManifests returns, per manifest id, the active manifest of its
// image its recorded OCI subject names (manifests without a subject, or
// whose subject is not an active manifest of the image, are left out).
func (s *Store) SubjectsOfManifests(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID][]*Manifest, error) {
	return db.GroupBy(ctx, s.pool, "manifest subjects", `
		SELECT m.id, `+manifestColumns+`
		FROM container_manifests m
		JOIN `+manifestFrom+` ON cm.namespace_id = m.namespace_id AND cm.container_image_id = m.container_image_id
		                     AND cm.digest = m.subject_digest
		WHERE m.namespace_id = $1 AND cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1
		  AND m.id = ANY($2) AND m.subject_digest IS NOT NULL AND cm.soft_deleted_at IS NULL`,
		[]any{nsID, ids}, scanManifest)
}

// ReferrersOfManifests returns, per manifest id, the first limit active
// manifests of its image whose recorded subject is that manifest (what the
// OCI referrers API lists), by digest, only those of artifactType when it
// is not nil: one range scan of container_manifests_subject_idx per
// manifest.
func (s *Store) ReferrersOfManifests(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID, artifactType *string, limit int) (map[uuid.UUID][]*Manifest, error) {
	filter, args := "", []any{nsID, ids, limit}
	if artifactType != nil {
		filter, args = " AND r.artifact_type = $4", append(args, *artifactType)
	}
	return db.GroupBy(ctx, s.pool, "manifest referrers", `
		SELECT m.id, `+manifestColumns+`
		FROM container_manifests m
		CROSS JOIN LATERAL (
			SELECT r.* FROM container_manifests r
			WHERE r.namespace_id = $1 AND r.container_image_id = m.container_image_id AND r.subject_digest = m.digest
			  AND r.soft_deleted_at IS NULL`+filter+`
			ORDER BY r.digest LIMIT $3) cm
		JOIN container_images ci ON ci.namespace_id = $1 AND ci.id = cm.container_image_id
		JOIN container_repositories cr ON cr.namespace_id = $1 AND cr.id = ci.container_repository_id
		WHERE m.namespace_id = $1 AND m.id = ANY($2)
		ORDER BY m.id, cm.digest`, args, scanManifest)
}

// ImageRef names one active image of a container repository.
type ImageRef struct {
	Namespace  string
	Repository string
	Image      string
}

// activeImage resolves an active container repository and one of its
// active images, and checks the namespace accepts changes.
func activeImage(ctx context.Context, tx pgx.Tx, ref ImageRef) (*store.Namespace, *Image, error) {
	ns, repo, err := store.LockRepository(ctx, tx, store.RepositoryRef{Namespace: ref.Namespace, Name: ref.Repository}, "FOR KEY SHARE")
	if err != nil {
		return nil, nil, err
	}
	if repo.SoftDeletedAt != nil {
		return nil, nil, errs.New(store.CodeNotFound, "repository %s/%s not found (it is in the trash)", ref.Namespace, ref.Repository)
	}
	if !repo.IsContainer() {
		return nil, nil, errs.New(store.CodeInvalidInput, "repository %s/%s is not a container repository", ref.Namespace, ref.Repository)
	}
	if err := ns.RequireWrites(); err != nil {
		return nil, nil, err
	}
	if !db.Lookupable(ref.Image) {
		return nil, nil, errs.New(store.CodeNotFound, "image %q not found", ref.Image)
	}
	img, err := scanImage(tx.QueryRow(ctx, `SELECT `+imageColumns+` FROM `+imageFrom+`
		WHERE ci.namespace_id = $1 AND cr.namespace_id = $1 AND cr.repository_id = $2
		  AND ci.name = $3 AND ci.soft_deleted_at IS NULL`, ns.ID, repo.ID, ref.Image))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, errs.New(store.CodeNotFound, "image %q not found in repository %s/%s", ref.Image, ref.Namespace, ref.Repository)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load image %q: %w", ref.Image, err)
	}
	return ns, img, nil
}

// DeleteTag deletes one tag (tags have no soft delete); the
// manifest stays addressable by digest.
func (s *Store) DeleteTag(ctx context.Context, ref ImageRef, tag string) (*Image, error) {
	var out *Image
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		ns, img, err := activeImage(ctx, tx, ref)
		if err != nil {
			return err
		}
		if !db.Lookupable(tag) {
			return errs.New(store.CodeNotFound, "tag %q not found", tag)
		}
		deleted, err := deleteTag(ctx, tx, ns.ID, img.ID, tag)
		if err != nil {
			return err
		}
		if !deleted {
			return errs.New(store.CodeNotFound, "tag %q not found in image %q", tag, ref.Image)
		}
		out = img
		return nil
	})
	return out, err
}

// DeleteManifest soft-deletes an active manifest and deletes the
// tags pointing at it, in one transaction. A manifest still referenced by
// an active index or manifest list is refused. Blob attachments stay until
// the manifest is purged (the bytes count until then: docs/schema.md,
// "Soft delete, trash and purge").
func (s *Store) DeleteManifest(ctx context.Context, ref ImageRef, digest string) (*Manifest, error) {
	d, err := store.ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	var out *Manifest
	err = s.core.WithTx(ctx, func(tx pgx.Tx) error {
		ns, img, err := activeImage(ctx, tx, ref)
		if err != nil {
			return err
		}
		id, parent, err := softDeleteManifest(ctx, tx, ns.ID, img.ID, d)
		switch {
		case err != nil:
			return err
		case id == uuid.Nil:
			return errs.New(store.CodeNotFound, "manifest %s not found in image %q", digest, ref.Image)
		case parent != nil:
			return errs.New(store.CodeConflict, "manifest %s is referenced by %s: delete that index first", digest, store.FormatDigest(parent))
		}
		out, err = scanManifest(tx.QueryRow(ctx, `SELECT `+manifestColumns+` FROM `+manifestFrom+`
			WHERE cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND cm.id = $2`, ns.ID, id))
		if err != nil {
			return fmt.Errorf("reload manifest %s: %w", digest, err)
		}
		return nil
	})
	return out, err
}

// RestoreManifest restores the most recently soft-deleted
// manifest with the digest in an active image (untagged: its tags were
// deleted with it). Refused while an active manifest has the same digest
// or while one of its child manifests is in the trash.
func (s *Store) RestoreManifest(ctx context.Context, ref ImageRef, digest string) (*Manifest, error) {
	d, err := store.ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	var out *Manifest
	err = s.core.WithTx(ctx, func(tx pgx.Tx) error {
		ns, img, err := activeImage(ctx, tx, ref)
		if err != nil {
			return err
		}
		var id uuid.UUID
		err = tx.QueryRow(ctx, `SELECT id FROM container_manifests
			WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3 AND soft_deleted_at IS NOT NULL
			ORDER BY soft_deleted_at DESC LIMIT 1
			FOR UPDATE`, ns.ID, img.ID, d).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(store.CodeNotFound, "no deleted manifest %s in image %q", digest, ref.Image)
		}
		if err != nil {
			return fmt.Errorf("load manifest %s: %w", digest, err)
		}
		var trashedChild []byte
		err = tx.QueryRow(ctx, `
			SELECT c.digest FROM container_manifest_relationships rel
			JOIN container_manifests c ON c.namespace_id = rel.namespace_id AND c.id = rel.child_container_manifest_id
			WHERE rel.namespace_id = $1 AND c.namespace_id = $1 AND rel.parent_container_manifest_id = $2
			  AND c.soft_deleted_at IS NOT NULL
			LIMIT 1`, ns.ID, id).Scan(&trashedChild)
		if err == nil {
			return errs.New(store.CodeConflict, "manifest %s references %s, which is in the trash: restore that first", digest, store.FormatDigest(trashedChild))
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("check manifest references: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE container_manifests SET soft_deleted_at = NULL WHERE namespace_id = $1 AND id = $2`,
			ns.ID, id); err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.UniqueViolation {
				return errs.New(store.CodeConflict, "image %q already has an active manifest %s", ref.Image, digest)
			}
			return fmt.Errorf("restore manifest %s: %w", digest, err)
		}
		out, err = scanManifest(tx.QueryRow(ctx, `SELECT `+manifestColumns+` FROM `+manifestFrom+`
			WHERE cm.namespace_id = $1 AND ci.namespace_id = $1 AND cr.namespace_id = $1 AND cm.id = $2`, ns.ID, id))
		if err != nil {
			return fmt.Errorf("reload manifest %s: %w", digest, err)
		}
		return nil
	})
	return out, err
}
