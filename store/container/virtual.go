package container

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// The catalog side of container virtual repositories: which virtuals a
// caller may list, and the image names their upstreams hold (the
// protocol applies the rules, which are patterns, not SQL).

// VirtualRef names a virtual container repository.
type VirtualRef struct {
	NamespaceID   uuid.UUID
	NamespaceSlug string
	RepositoryID  uuid.UUID
	Name          string
}

// VirtualCatalogRepositories lists up to limit active virtual container
// repositories the filter admits, in namespaces that serve reads, by
// (namespace slug, name) from (afterNS, afterRepo) included.
func (s *Store) VirtualCatalogRepositories(ctx context.Context, filter CatalogFilter, afterNS, afterRepo string, limit int) ([]VirtualRef, error) {
	ownAll, ownVis, ownIDs := filter.Own.args()
	othAll, othVis, othIDs := filter.Others.args()
	rows, err := s.pool.Query(ctx, `
		SELECT n.id, n.slug, r.id, r.name
		FROM repositories r
		JOIN namespaces n ON n.id = r.namespace_id
		WHERE r.soft_deleted_at IS NULL AND r.kind = $1 AND r.format = ANY($2::smallint[])
		  AND n.deleted_at IS NULL AND n.purged_at IS NULL AND n.blocked_at IS NULL AND n.disabled_at IS NULL
		  AND CASE WHEN n.id = $3
		      THEN $4 OR r.visibility = ANY($5::smallint[]) OR r.id = ANY($6::uuid[])
		      ELSE $7 OR r.visibility = ANY($8::smallint[]) OR r.id = ANY($9::uuid[]) END
		  AND (n.slug, r.name) >= ($10, $11)
		ORDER BY n.slug, r.name
		LIMIT $12`,
		int16(enum.KindVirtual), []int16{int16(enum.FormatDocker), int16(enum.FormatOCI)},
		filter.NamespaceID, ownAll, ownVis, ownIDs, othAll, othVis, othIDs, afterNS, afterRepo, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: virtual catalog: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VirtualRef, error) {
		var v VirtualRef
		err := r.Scan(&v.NamespaceID, &v.NamespaceSlug, &v.RepositoryID, &v.Name)
		return v, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: virtual catalog: %w", err))
	}
	return out, nil
}

// ImageNamesOfRepositories returns, per repository id, the first limit
// image names after afterName: listed images of hosted repositories
// (as ImagesOfRepositories) and cached images of remote ones.
func (s *Store) ImageNamesOfRepositories(ctx context.Context, nsID uuid.UUID, hosted, remote []uuid.UUID, afterName string, limit int) (map[uuid.UUID][]string, error) {
	out := map[uuid.UUID][]string{}
	if len(hosted) > 0 {
		imgs, err := s.ImagesOfRepositories(ctx, nsID, hosted, &afterName, limit-1)
		if err != nil {
			return nil, err
		}
		for id, list := range imgs {
			for _, i := range list {
				out[id] = append(out[id], i.Name)
			}
		}
	}
	if len(remote) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT rr.repository_id, ri.name
		FROM container_remote_repositories rr
		CROSS JOIN LATERAL (
			SELECT ri.name FROM container_remote_images ri
			WHERE ri.namespace_id = $1 AND ri.container_remote_repository_id = rr.id AND ri.soft_deleted_at IS NULL
			  AND ri.name > $3
			ORDER BY ri.name LIMIT $4) ri
		WHERE rr.namespace_id = $1 AND rr.repository_id = ANY($2)
		ORDER BY rr.repository_id, ri.name`, nsID, remote, afterName, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: cached image names: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: cached image names: %w", err))
		}
		out[id] = append(out[id], name)
	}
	return out, db.MapErr(rows.Err())
}

// StoredImage tells, per repository id, whether a repository holds image
// name in stored content (hosted: an active image with a live manifest)
// or cached content (remote: a cached image with a cached manifest), and
// with tag, whether the tag names such a manifest. Repositories without
// it are left out. One probe of each repository's unique name index, for
// all of them in one statement.
func (s *Store) StoredImage(ctx context.Context, nsID uuid.UUID, hosted, remote []uuid.UUID, name, tag string) (map[uuid.UUID]bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT cr.repository_id FROM container_repositories cr
		JOIN container_images ci ON ci.namespace_id = $1 AND ci.container_repository_id = cr.id AND ci.name = $4 AND ci.soft_deleted_at IS NULL
		WHERE cr.namespace_id = $1 AND cr.repository_id = ANY($2)
		  AND CASE WHEN $5 = '' THEN EXISTS (SELECT 1 FROM container_manifests cm
		        WHERE cm.namespace_id = $1 AND cm.container_image_id = ci.id AND cm.soft_deleted_at IS NULL)
		      ELSE EXISTS (SELECT 1 FROM container_tags ct
		        JOIN container_manifests cm ON cm.namespace_id = $1 AND cm.id = ct.container_manifest_id AND cm.soft_deleted_at IS NULL
		        WHERE ct.namespace_id = $1 AND ct.container_image_id = ci.id AND ct.name = $5) END
		UNION ALL
		SELECT rr.repository_id FROM container_remote_repositories rr
		JOIN container_remote_images ri ON ri.namespace_id = $1 AND ri.container_remote_repository_id = rr.id AND ri.name = $4 AND ri.soft_deleted_at IS NULL
		WHERE rr.namespace_id = $1 AND rr.repository_id = ANY($3)
		  AND CASE WHEN $5 = '' THEN EXISTS (SELECT 1 FROM container_remote_manifests rm
		        WHERE rm.namespace_id = $1 AND rm.container_remote_image_id = ri.id AND rm.soft_deleted_at IS NULL)
		      ELSE EXISTS (SELECT 1 FROM container_remote_tags rt
		        JOIN container_remote_manifests rm ON rm.namespace_id = $1 AND rm.id = rt.container_remote_manifest_id AND rm.soft_deleted_at IS NULL
		        WHERE rt.namespace_id = $1 AND rt.container_remote_image_id = ri.id AND rt.name = $5) END`,
		nsID, hosted, remote, name, tag)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stored image %s: %w", name, err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: stored image %s: %w", name, err))
	}
	out := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// HoldingImage tells which of the hosted repositories hold image name
// (an active image, as a pull resolves it): what shadows the name from
// remote upstreams in a virtual.
func (s *Store) HoldingImage(ctx context.Context, nsID uuid.UUID, hosted []uuid.UUID, name string) (map[uuid.UUID]bool, error) {
	imgs, err := s.ImageOfRepositoriesByName(ctx, nsID, hosted, name)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]bool, len(imgs))
	for id := range imgs {
		out[id] = true
	}
	return out, nil
}
