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
)

// Eviction and administration of a pull-through cache. Cached rows are
// never soft-deleted: evicting an image hard-deletes its rows and detaches
// their blobs in the same transaction (store.PurgeAttached), so a blob no
// other row uses becomes a GC candidate like any other; the bytes go only
// through gc:cleanup (docs/garbage-collection.md).

// EvictRemoteImages hard-deletes cached images by id with everything
// they hold (tags, relationships, children records, manifests, blob
// links) and detaches their attachments, inside the caller's transaction:
// the image rows are locked FOR UPDATE first (a fill into one of them
// holds it FOR KEY SHARE, so the two take turns), then the blob rows, then
// the deletes, children before parents. Ids that no longer exist are
// skipped; the result lists what was evicted.
func (s *Store) EvictRemoteImages(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, store.Released, error) {
	rows, err := tx.Query(ctx, `
		SELECT id FROM container_remote_images
		WHERE namespace_id = $1 AND id = ANY($2::uuid[])
		ORDER BY id
		FOR UPDATE`, nsID, ids)
	images, err := db.CollectIDs(rows, err)
	if err != nil || len(images) == 0 {
		return nil, store.Released{}, wrap("lock cached images", err)
	}
	rel, err := s.deleteImages(ctx, tx, nsID, images, "evict cached images", `
		SELECT id, blob_storage_attachment_id, blob_sha256 FROM container_remote_manifests
		WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])
		UNION ALL
		SELECT id, blob_storage_attachment_id, blob_sha256 FROM container_remote_blobs
		WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_remote_tags WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_remote_manifest_relationships WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_remote_manifest_children WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_remote_manifests WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_remote_blobs WHERE namespace_id = $1 AND container_remote_image_id = ANY($2::uuid[])`,
		`DELETE FROM container_remote_images WHERE namespace_id = $1 AND id = ANY($2::uuid[])`)
	if err != nil {
		return nil, store.Released{}, err
	}
	return images, rel, nil
}

// RemoteImagesOfRepository lists up to limit cached image ids of a
// repository (the repository purge empties a remote image by image).
func (s *Store) RemoteImagesOfRepository(ctx context.Context, q db.Queryer, nsID, repositoryID uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, `
		SELECT ci.id FROM container_remote_images ci
		JOIN container_remote_repositories cr ON cr.namespace_id = ci.namespace_id AND cr.id = ci.container_remote_repository_id
		WHERE ci.namespace_id = $1 AND cr.namespace_id = $1 AND cr.repository_id = $2
		ORDER BY ci.id LIMIT $3`, nsID, repositoryID, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrap("cached images of repository", err)
}

// RemoteRef names a cached image of a remote repository.
type RemoteRef struct {
	Repository store.RepositoryRef
	Image      string
}

// lockRemote locks the repository row (FOR KEY SHARE) and returns the
// remote's container_remote_repositories id and the cached image's id
// (uuid.Nil when the image is not cached).
func lockRemote(ctx context.Context, tx pgx.Tx, ref RemoteRef) (*store.Namespace, uuid.UUID, uuid.UUID, error) {
	ns, repo, err := store.LockRepository(ctx, tx, ref.Repository, "FOR KEY SHARE")
	if err != nil {
		return nil, uuid.Nil, uuid.Nil, err
	}
	if repo.SoftDeletedAt != nil {
		return nil, uuid.Nil, uuid.Nil, errs.New(store.CodeConflict, "repository %s is in the trash", ref.Repository)
	}
	if repo.Kind != enum.KindRemote || !repo.IsContainer() {
		return nil, uuid.Nil, uuid.Nil, errs.New(store.CodeInvalidInput, "repository %s is not a container remote repository", ref.Repository)
	}
	var (
		remoteID uuid.UUID
		url      string
		imageID  *uuid.UUID
	)
	err = tx.QueryRow(ctx, `SELECT id, url FROM container_remote_repositories WHERE namespace_id = $1 AND repository_id = $2`,
		ns.ID, repo.ID).Scan(&remoteID, &url)
	if err != nil {
		return nil, uuid.Nil, uuid.Nil, db.MapErr(fmt.Errorf("store: remote settings: %w", err))
	}
	err = tx.QueryRow(ctx, `
		SELECT id FROM container_remote_images
		WHERE namespace_id = $1 AND container_remote_repository_id = $2 AND name = $3 AND soft_deleted_at IS NULL`,
		ns.ID, remoteID, UpstreamImageName(url, ref.Image)).Scan(&imageID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, uuid.Nil, uuid.Nil, db.MapErr(fmt.Errorf("store: cached image: %w", err))
	}
	if imageID == nil {
		return ns, remoteID, uuid.Nil, nil
	}
	return ns, remoteID, *imageID, nil
}

// EvictRemoteImage evicts one cached image of a remote repository by its
// name (as clients pull it; the Docker Hub rule applies);
// store.CodeNotFound when it is not cached.
func (s *Store) EvictRemoteImage(ctx context.Context, ref RemoteRef) (store.Released, error) {
	var rel store.Released
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		ns, _, imageID, err := lockRemote(ctx, tx, ref)
		if err != nil {
			return err
		}
		if imageID == uuid.Nil {
			return errs.New(store.CodeNotFound, "image %q is not cached in %s", ref.Image, ref.Repository)
		}
		_, rel, err = s.EvictRemoteImages(ctx, tx, ns.ID, []uuid.UUID{imageID})
		return err
	})
	return rel, err
}

// InvalidateRemoteTag makes a cached tag stale: the next request for it
// asks the upstream (and, while the upstream cannot be asked, still gets
// the cached manifest). store.CodeNotFound when the tag is not cached.
func (s *Store) InvalidateRemoteTag(ctx context.Context, ref RemoteRef, tag string) error {
	return s.core.WithTx(ctx, func(tx pgx.Tx) error {
		ns, _, imageID, err := lockRemote(ctx, tx, ref)
		if err != nil {
			return err
		}
		ct, err := tx.Exec(ctx, `
			UPDATE container_remote_tags SET upstream_checked_at = 'epoch'
			WHERE namespace_id = $1 AND container_remote_image_id = $2 AND name = $3`, ns.ID, imageID, tag)
		if err != nil {
			return fmt.Errorf("store: invalidate cached tag: %w", err)
		}
		if ct.RowsAffected() == 0 {
			return errs.New(store.CodeNotFound, "tag %q of image %q is not cached in %s", tag, ref.Image, ref.Repository)
		}
		return nil
	})
}

// RemoteImage is a cached image as the management API lists it.
type RemoteImage struct {
	ID               uuid.UUID
	RemoteID         uuid.UUID
	Name             string // the upstream name
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	ManifestsCount   int64
	BlobsCount       int64
	TagsCount        int64
	// SizeBytes is what the image's cached rows reference: the distinct
	// blobs it links and its manifests' payloads.
	SizeBytes int64
}

// RemoteImagesOfRemotes lists, for each remote (container_remote_repositories
// ids of one namespace), its cached images by name after the given one, at
// most limit each (a range scan of the active-name index per remote).
func (s *Store) RemoteImagesOfRemotes(ctx context.Context, nsID uuid.UUID, remoteIDs []uuid.UUID, after string, limit int) (map[uuid.UUID][]*RemoteImage, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT i.id, i.container_remote_repository_id, i.name, i.created_at, i.last_downloaded_at,
		       (SELECT count(*) FROM container_remote_manifests m WHERE m.namespace_id = $1 AND m.container_remote_image_id = i.id),
		       (SELECT count(*) FROM container_remote_blobs b WHERE b.namespace_id = $1 AND b.container_remote_image_id = i.id),
		       (SELECT count(*) FROM container_remote_tags t WHERE t.namespace_id = $1 AND t.container_remote_image_id = i.id),
		       ARRAY(SELECT b.blob_sha256 FROM container_remote_blobs b WHERE b.namespace_id = $1 AND b.container_remote_image_id = i.id
		             UNION SELECT m.blob_sha256 FROM container_remote_manifests m WHERE m.namespace_id = $1 AND m.container_remote_image_id = i.id)
		FROM unnest($2::uuid[]) AS r(id)
		CROSS JOIN LATERAL (
			SELECT * FROM container_remote_images ci
			WHERE ci.namespace_id = $1 AND ci.container_remote_repository_id = r.id AND ci.soft_deleted_at IS NULL AND ci.name > $3
			ORDER BY ci.name LIMIT $4) i
		ORDER BY i.container_remote_repository_id, i.name`, nsID, remoteIDs, after, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached images: %w", err))
	}
	type imageShas struct {
		img  *RemoteImage
		shas [][]byte
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (imageShas, error) {
		var x imageShas
		x.img = &RemoteImage{}
		err := r.Scan(&x.img.ID, &x.img.RemoteID, &x.img.Name, &x.img.CreatedAt, &x.img.LastDownloadedAt,
			&x.img.ManifestsCount, &x.img.BlobsCount, &x.img.TagsCount, &x.shas)
		return x, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached images: %w", err))
	}
	var all [][]byte
	for _, x := range list {
		all = append(all, x.shas...)
	}
	var sizes map[[32]byte]*store.Blob
	if len(all) > 0 {
		if sizes, err = statBlobs(ctx, s.pool, nsID, distinctSHA(func(yield func([32]byte) bool) {
			for _, sha := range all {
				if !yield([32]byte(sha)) {
					return
				}
			}
		})); err != nil {
			return nil, err
		}
	}
	out := map[uuid.UUID][]*RemoteImage{}
	for _, x := range list {
		for _, sha := range x.shas {
			if b := sizes[[32]byte(sha)]; b != nil {
				x.img.SizeBytes += b.Size
			}
		}
		out[x.img.RemoteID] = append(out[x.img.RemoteID], x.img)
	}
	return out, nil
}

// RemoteTagInfo is a cached tag as the management API lists it.
type RemoteTagInfo struct {
	Name      string
	Digest    [32]byte
	MediaType string
	CheckedAt time.Time
}

// RemoteTagsOfImages lists up to limit cached tags by name of each image
// (ids of one namespace).
func (s *Store) RemoteTagsOfImages(ctx context.Context, nsID uuid.UUID, imageIDs []uuid.UUID, limit int) (map[uuid.UUID][]RemoteTagInfo, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT x.image, x.name, m.digest, m.media_type, x.upstream_checked_at
		FROM unnest($2::uuid[]) AS i(id)
		CROSS JOIN LATERAL (
			SELECT t.container_remote_image_id AS image, t.name, t.container_remote_manifest_id, t.upstream_checked_at
			FROM container_remote_tags t
			WHERE t.namespace_id = $1 AND t.container_remote_image_id = i.id
			ORDER BY t.name LIMIT $3) x
		JOIN container_remote_manifests m ON m.namespace_id = $1 AND m.id = x.container_remote_manifest_id
		ORDER BY x.image, x.name`, nsID, imageIDs, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached tags: %w", err))
	}
	out := map[uuid.UUID][]RemoteTagInfo{}
	for rows.Next() {
		var (
			image uuid.UUID
			t     RemoteTagInfo
			dig   []byte
		)
		if err := rows.Scan(&image, &t.Name, &dig, &t.MediaType, &t.CheckedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: cached tags: %w", err)
		}
		t.Digest = [32]byte(dig)
		out[image] = append(out[image], t)
	}
	rows.Close()
	return out, db.MapErr(wrap("cached tags", rows.Err()))
}

// CacheEvictNamespace is a namespace whose default lifecycle policy keeps
// what was downloaded within Days (KEEP_DOWNLOADED_WITHIN) and which has
// container pull-through caches.
type CacheEvictNamespace struct {
	ID   uuid.UUID
	Days int
}

// CacheEvictNamespaces lists, after the given namespace id, up to limit
// namespaces whose enabled default lifecycle policy has a
// KEEP_DOWNLOADED_WITHIN rule (the most retentive one when there are
// several) and that have a remote repository of any format.
func (s *Store) CacheEvictNamespaces(ctx context.Context, after uuid.UUID, limit int) ([]CacheEvictNamespace, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.namespace_id, max((r.rule_configuration->>'days')::int)
		FROM lifecycle_policy_settings s
		JOIN lifecycle_rules r ON r.namespace_id = s.namespace_id AND r.lifecycle_policy_settings_id = s.id
		WHERE s.enabled AND r.rule_type = $1 AND s.namespace_id > $2
		  AND (EXISTS (SELECT 1 FROM container_remote_repositories c WHERE c.namespace_id = s.namespace_id)
		       OR EXISTS (SELECT 1 FROM npm_remote_repositories n WHERE n.namespace_id = s.namespace_id)
		       OR EXISTS (SELECT 1 FROM maven_remote_repositories m WHERE m.namespace_id = s.namespace_id))
		GROUP BY s.namespace_id
		ORDER BY s.namespace_id LIMIT $3`, int16(enum.LifecycleRuleKeepLastDownloadedAt), after, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cache evict namespaces: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CacheEvictNamespace, error) {
		var n CacheEvictNamespace
		var days *int32
		err := r.Scan(&n.ID, &days)
		if days != nil {
			n.Days = int(*days)
		}
		return n, err
	})
	return out, db.MapErr(wrap("cache evict namespaces", err))
}

// StaleRemoteImages lists up to limit cached images of the namespace's
// remotes not downloaded since cutoff (never-downloaded ones by their
// caching time), least recently downloaded first within each remote: one
// range scan of container_remote_images_last_downloaded_at_idx per remote.
func (s *Store) StaleRemoteImages(ctx context.Context, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT x.id FROM container_remote_repositories crr
		CROSS JOIN LATERAL (
			SELECT i.id FROM container_remote_images i
			WHERE i.namespace_id = $1 AND i.container_remote_repository_id = crr.id AND i.soft_deleted_at IS NULL
			  AND (i.last_downloaded_at < $2 OR (i.last_downloaded_at IS NULL AND i.created_at < $2))
			ORDER BY i.last_downloaded_at NULLS FIRST LIMIT $3) x
		WHERE crr.namespace_id = $1
		LIMIT $3`, nsID, cutoff, limit)
	ids, err := db.CollectIDs(rows, err)
	return ids, wrap("stale cached images", err)
}

// EvictStaleRemoteImages evicts the namespace's cached images not
// downloaded since cutoff, in transactions of up to batch images, until
// none is left or maxBatches batches ran (0: no bound). Under the image
// lock each one is checked again (a pull recorded since the listing
// keeps it).
func (s *Store) EvictStaleRemoteImages(ctx context.Context, nsID uuid.UUID, cutoff time.Time, batch, maxBatches int) (int, store.Released, error) {
	var (
		total int
		rel   store.Released
	)
	if batch <= 0 {
		batch = 50
	}
	for n := 0; maxBatches <= 0 || n < maxBatches; n++ {
		ids, err := s.StaleRemoteImages(ctx, nsID, cutoff, batch)
		if err != nil || len(ids) == 0 {
			return total, rel, err
		}
		var evicted []uuid.UUID
		err = s.core.WithTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `
				SELECT id FROM container_remote_images
				WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND soft_deleted_at IS NULL
				  AND (last_downloaded_at < $3 OR (last_downloaded_at IS NULL AND created_at < $3))
				ORDER BY id FOR UPDATE`, nsID, ids, cutoff)
			still, err := db.CollectIDs(rows, err)
			if err != nil || len(still) == 0 {
				return wrap("recheck stale cached images", err)
			}
			var r store.Released
			evicted, r, err = s.EvictRemoteImages(ctx, tx, nsID, still)
			if err == nil {
				rel = rel.Add(r)
			}
			return err
		})
		if err != nil {
			return total, rel, err
		}
		total += len(evicted)
		if len(ids) < batch || len(evicted) == 0 {
			return total, rel, nil
		}
	}
	return total, rel, nil
}
