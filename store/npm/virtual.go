package npm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// The npm side of virtual repositories (docs/virtual-repositories.md):
// which hosted members hold a package name decides whether remote
// members may be asked for it at all (name shadowing).

// ScopeOf is the value a virtual's SCOPE rules match: "@scope" of a
// scoped name, "" for an unscoped one (which ALLOW rules on SCOPE
// therefore never admit).
func ScopeOf(name string) string {
	if scope, _, ok := strings.Cut(name, "/"); ok && strings.HasPrefix(scope, "@") {
		return scope
	}
	return ""
}

const holdingRepositoriesSQL = `
SELECT nr.repository_id
FROM npm_repositories nr
JOIN npm_packages p
  ON p.namespace_id = $1 AND p.npm_repository_id = nr.id AND p.name = $3 AND p.soft_deleted_at IS NULL
WHERE nr.namespace_id = $1 AND nr.repository_id = ANY($2)`

// HoldingRepositories tells which of the hosted npm repositories
// repositoryIDs (repositories.id, of one namespace) hold an active package
// named name: the keys of the map, each true. Repositories that are not
// hosted npm repositories, or do not hold it, are absent. One statement.
func (s *Store) HoldingRepositories(ctx context.Context, namespaceID uuid.UUID, repositoryIDs []uuid.UUID, name string) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	if len(repositoryIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, holdingRepositoriesSQL, execMode, namespaceID, repositoryIDs, name)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm repositories holding %s: %w", name, err))
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: npm repositories holding %s: %w", name, err))
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm repositories holding %s: %w", name, err))
	}
	return out, nil
}

const virtualMembersSQL = `
SELECT r.id, r.name, r.kind, r.visibility, nr.id,
       nrr.id, nrr.url, nrr.metadata_cache_validity_hours, nrr.settings_changed_at, nrr.wrapped_dek IS NOT NULL
FROM repositories r
LEFT JOIN npm_repositories nr ON nr.namespace_id = $1 AND nr.repository_id = r.id
LEFT JOIN npm_remote_repositories nrr ON nrr.namespace_id = $1 AND nrr.repository_id = r.id
WHERE r.namespace_id = $1 AND r.id = ANY($2) AND r.soft_deleted_at IS NULL AND r.format = $3`

// VirtualMembers resolves the hosted and remote npm repositories
// repositoryIDs of a virtual repository's namespace (its flattened
// upstreams), keyed by repositories.id, in one statement: what the
// virtual reads on its behalf. They share the virtual's namespace and its
// serving predicates. Trashed, missing and virtual repositories are
// absent.
func (s *Store) VirtualMembers(ctx context.Context, virtual *Repository, repositoryIDs []uuid.UUID) (map[uuid.UUID]*Repository, error) {
	out := map[uuid.UUID]*Repository{}
	if len(repositoryIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, virtualMembersSQL, execMode, virtual.NamespaceID, repositoryIDs, int16(enum.FormatNpm))
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm virtual members of %s: %w", virtual.RepositoryName, err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id              uuid.UUID
			name            string
			kind, vis       int16
			npmID, remoteID *uuid.UUID
			remoteURL       *string
			metaHrs         *int16
			remoteChanged   *time.Time
			remoteCreds     *bool
		)
		if err := rows.Scan(&id, &name, &kind, &vis, &npmID, &remoteID, &remoteURL, &metaHrs, &remoteChanged, &remoteCreds); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: npm virtual members of %s: %w", virtual.RepositoryName, err))
		}
		m := &Repository{NamespaceID: virtual.NamespaceID, NamespaceSlug: virtual.NamespaceSlug, RepositoryID: id, RepositoryName: name,
			Visibility: enum.Visibility(vis), ServesReads: virtual.ServesReads, ServesWrites: virtual.ServesWrites, Condition: virtual.Condition}
		switch {
		case enum.Kind(kind) == enum.KindHosted && npmID != nil:
			m.NpmRepositoryID = *npmID
		case enum.Kind(kind) == enum.KindRemote && remoteID != nil:
			m.Remote = newRemoteTarget(*remoteID, *remoteURL, *metaHrs, *remoteChanged, *remoteCreds)
		default:
			continue
		}
		out[id] = m
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: npm virtual members of %s: %w", virtual.RepositoryName, err))
	}
	return out, nil
}
