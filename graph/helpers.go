package graph

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
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
	ref, err := repositoryRef(input.Namespace, input.Name, input.ID)
	if err != nil {
		return nil, err
	}
	if err := r.repositoryFor(ctx, ref, auth.ActionAdmin); err != nil {
		return nil, err
	}
	repo, err := do(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &model.RepositoryPayload{Repository: toRepository(repo)}, nil
}

// authorizeNamespaceSlug authorizes action on a namespace named by slug
// (the super-user needs no lookup: the store resolves the slug itself).
func (r *Resolver) authorizeNamespaceSlug(ctx context.Context, slug string, action auth.Action) error {
	if isAdmin(ctx) {
		return nil
	}
	_, err := r.namespaceFor(ctx, slug, action)
	return err
}

// repositoryFilter converts the list filter and narrows it to what the
// caller may read (auth.ReadableRepositories). Anonymous callers asking for
// a visibility they cannot read are told to authenticate.
func repositoryFilter(ctx context.Context, ns *model.Namespace, in *model.RepositoryFilter, f *store.RepositoryFilter) error {
	if in != nil {
		if in.Format != nil {
			v := formatsToEnum[*in.Format]
			f.Format = &v
		}
		if in.Kind != nil {
			k := kindsToEnum[*in.Kind]
			f.Kind = &k
		}
		if in.Visibility != nil {
			v := visibilitiesToEnum[*in.Visibility]
			f.Visibility = &v
		}
		f.Collection = in.Collection
	}
	p := principal(ctx)
	rf := auth.ReadableRepositories(p, namespaceOfModel(ns))
	if rf.All {
		return nil
	}
	if p.IsAnonymous() && f.Visibility != nil && *f.Visibility != enum.VisibilityPublic {
		return newError(CodeUnauthenticated, "authentication required to list %s repositories", strings.ToLower(in.Visibility.String()))
	}
	f.Readable = &store.ReadableFilter{Visibilities: rf.Visibilities, IDs: rf.IDs}
	return nil
}

// namespaceByID resolves the namespace field of an object that carries its
// namespace id, through the request's namespace loader.
func namespaceByID(ctx context.Context, id uuid.UUID) (*model.Namespace, error) {
	ns, err := loadersFrom(ctx).namespace.Load(ctx, id)()
	if err != nil {
		return nil, err
	}
	if ns == nil {
		return nil, notFound("namespace %s not found", id)
	}
	return toNamespace(ns), nil
}

// namespaceSearch normalizes the namespaces list's search text: trimmed and
// lowercased (slugs are lowercase). ok is false when the text holds a
// character no slug has, so nothing can match.
func namespaceSearch(search string) (text string, ok bool, err error) {
	if len(search) > store.MaxNamespaceSearch {
		return "", false, invalidInput("search must be at most %d characters", store.MaxNamespaceSearch)
	}
	text = strings.ToLower(strings.TrimSpace(search))
	for _, c := range text {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return "", false, nil
		}
	}
	return text, true, nil
}
