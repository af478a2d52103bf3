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
