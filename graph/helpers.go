package graph

import (
	"context"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Checksum search returns a bounded list.
const (
	defaultChecksumMatches = 100
	maxChecksumMatches     = 1000
)

// nameKey and digestKey are the keysets of the nested connections (images
// and tags by name, manifests by digest: their unique indexes).
type nameKey struct {
	Name string `json:"n"`
}

type digestKey struct {
	Digest []byte `json:"d"`
}

// trim cuts a limit+1 fetch to the page and reports whether more follow.
func trim[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// nonNil turns a nil slice into an empty one (lists are non-null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func pageInfo(cursors []string, more bool, after *string) *model.PageInfo {
	pi := &model.PageInfo{HasNextPage: more, HasPreviousPage: after != nil && *after != ""}
	if len(cursors) > 0 {
		pi.StartCursor = &cursors[0]
		pi.EndCursor = &cursors[len(cursors)-1]
	}
	return pi
}

// canRead is the read rule: admins read everything; anonymous callers
// read active PUBLIC repositories of namespaces that serve reads.
func canRead(ctx context.Context, ns *store.Namespace, repo *store.Repository) bool {
	if isAdmin(ctx) {
		return true
	}
	return ns.ServesReads() && repo.SoftDeletedAt == nil && repo.Visibility == enum.VisibilityPublic
}

func (r *Resolver) loadRepository(ctx context.Context, ns, id uuid.UUID) (*model.Repository, error) {
	repo, err := loadersFrom(ctx).repository.Load(ctx, idKey{ns: ns, id: id})()
	if err != nil {
		return nil, err
	}
	if repo == nil {
		return nil, notFound("repository %s not found", id)
	}
	return toRepository(repo), nil
}

// repositoryRef builds a store reference from namespace + (name | id).
func repositoryRef(namespace string, name, id *string) (store.RepositoryRef, error) {
	ref := store.RepositoryRef{Namespace: namespace}
	switch {
	case id != nil && name != nil:
		return ref, invalidInput("give either name or id, not both")
	case id != nil:
		u, err := parseID("repository", *id)
		if err != nil {
			return ref, err
		}
		ref.ID = u
	case name != nil:
		ref.Name = *name
	default:
		return ref, invalidInput("give the repository name or id")
	}
	return ref, nil
}

func (r *mutationResolver) repositoryMutation(ctx context.Context, input model.RepositoryRefInput,
	do func(context.Context, store.RepositoryRef) (*store.Repository, error)) (*model.RepositoryPayload, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	ref, err := repositoryRef(input.Namespace, input.Name, input.ID)
	if err != nil {
		return nil, err
	}
	repo, err := do(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &model.RepositoryPayload{Repository: toRepository(repo)}, nil
}
