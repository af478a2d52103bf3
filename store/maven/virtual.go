package maven

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Maven virtual repositories (docs/virtual-repositories.md, "Maven
// resolution"): the protocol resolves a request through the virtual's
// flattened upstreams (store.FlattenVirtual); this file answers what it
// needs from the database besides the hosted and cached files.

// LayoutName is the name a virtual's reserved patterns are matched
// against: <group/path>/<artifactId>, so com/acme/** reserves groupId
// com.acme and its subgroups.
func LayoutName(groupID, artifactID string) string {
	return strings.ReplaceAll(groupID, ".", "/") + "/" + artifactID
}

// HoldingRepositories tells which of the hosted Maven repositories
// repositoryIDs (repositories.id, of namespace namespaceID) hold an
// active package groupID:artifactID, whatever its versions: such a name
// is internal, and a virtual never asks a remote upstream for it
// (dependency confusion). Ids of repositories that are not hosted Maven
// repositories are never in the answer. One statement.
func (s *Store) HoldingRepositories(ctx context.Context, namespaceID uuid.UUID, repositoryIDs []uuid.UUID, groupID, artifactID string) (map[uuid.UUID]bool, error) {
	out := map[uuid.UUID]bool{}
	if len(repositoryIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT mr.repository_id
		FROM maven_repositories mr
		JOIN maven_packages p
		  ON p.namespace_id = $1 AND p.maven_repository_id = mr.id
		 AND p.group_id = $3 AND p.artifact_id = $4 AND p.soft_deleted_at IS NULL
		WHERE mr.namespace_id = $1 AND mr.repository_id = ANY($2::uuid[])`,
		namespaceID, repositoryIDs, groupID, artifactID)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven repositories holding %s:%s: %w", groupID, artifactID, err))
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: maven repositories holding %s:%s: %w", groupID, artifactID, err))
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven repositories holding %s:%s: %w", groupID, artifactID, err))
	}
	return out, nil
}

// VirtualMemberTargets resolves the hosted and remote upstreams
// repositoryIDs of the virtual repository v (its flattened members) to
// their targets, keyed by repository id, in one statement: a hosted one
// with its MavenRepositoryID, a remote one with its Remote settings. The
// namespace fields are the virtual's (members are of its namespace).
// Repositories gone or trashed since the virtual's settings were read,
// and virtual ones, are left out.
func (s *Store) VirtualMemberTargets(ctx context.Context, v *Target, repositoryIDs []uuid.UUID) (map[uuid.UUID]*Target, error) {
	out := map[uuid.UUID]*Target{}
	if len(repositoryIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT r.id, r.name, r.kind, r.visibility, mr.id,
		       mrr.id, mrr.url, mrr.metadata_cache_validity_hours, mrr.negative_cache_minutes,
		       mrr.settings_changed_at, mrr.wrapped_dek IS NOT NULL
		FROM repositories r
		LEFT JOIN maven_repositories mr ON mr.namespace_id = $1 AND mr.repository_id = r.id
		LEFT JOIN maven_remote_repositories mrr ON mrr.namespace_id = $1 AND mrr.repository_id = r.id
		WHERE r.namespace_id = $1 AND r.id = ANY($2::uuid[]) AND r.format = $3 AND r.soft_deleted_at IS NULL`,
		v.NamespaceID, repositoryIDs, int16(enum.FormatMaven))
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: upstreams of maven virtual %s/%s: %w", v.NamespaceSlug, v.RepositoryName, err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			t              = *v
			kind, vis      int16
			mrID, remoteID *uuid.UUID
			url            *string
			meta, neg      *int16
			changed        *time.Time
			creds          *bool
		)
		t.Virtual, t.Remote, t.MavenRepositoryID = false, nil, uuid.Nil
		if err := rows.Scan(&t.RepositoryID, &t.RepositoryName, &kind, &vis, &mrID,
			&remoteID, &url, &meta, &neg, &changed, &creds); err != nil {
			return nil, db.MapErr(fmt.Errorf("store: upstreams of maven virtual %s/%s: %w", v.NamespaceSlug, v.RepositoryName, err))
		}
		t.Visibility = enum.Visibility(vis)
		switch {
		case enum.Kind(kind) == enum.KindHosted && mrID != nil:
			t.MavenRepositoryID = *mrID
		case enum.Kind(kind) == enum.KindRemote && remoteID != nil:
			t.Remote = &RemoteTarget{ID: *remoteID, URL: *url, MetadataValidity: time.Duration(*meta) * time.Hour,
				NegativeTTL: time.Duration(*neg) * time.Minute, SettingsChangedAt: *changed, HasCredentials: *creds}
		default:
			continue
		}
		out[t.RepositoryID] = &t
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: upstreams of maven virtual %s/%s: %w", v.NamespaceSlug, v.RepositoryName, err))
	}
	return out, nil
}
