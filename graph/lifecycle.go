package graph

import (
	"context"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/lifecycle"
)

// lifecycleScope resolves the scope of a lifecycle operation and
// authorizes action on it: the namespace (repository nil) or one active
// repository.
func (r *Resolver) lifecycleScope(ctx context.Context, namespace string, repository *string, action auth.Action) (lifecycle.Scope, error) {
	if repository == nil {
		ns, err := r.namespaceFor(ctx, namespace, action)
		if err != nil {
			return lifecycle.Scope{}, err
		}
		return lifecycle.Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug}, nil
	}
	ref := store.RepositoryRef{Namespace: namespace, Name: *repository}
	if err := r.repositoryFor(ctx, ref, action); err != nil {
		return lifecycle.Scope{}, err
	}
	ns, repo, err := r.store.RepositoryByRef(ctx, ref)
	if err != nil {
		return lifecycle.Scope{}, err
	}
	if repo.SoftDeletedAt != nil {
		return lifecycle.Scope{}, newError(CodeNotFound, "repository %s/%s not found (it is in the trash)", namespace, *repository)
	}
	return lifecycle.Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo}, nil
}

func lifecycleInput(enabled bool, minAgeDays *int, rules []*model.LifecycleRuleInput) lifecycle.Input {
	in := lifecycle.Input{Enabled: enabled, MinAgeDays: lifecycle.DefaultMinAgeDays, Rules: []lifecycle.Rule{}}
	if minAgeDays != nil {
		in.MinAgeDays = *minAgeDays
	}
	for _, r := range rules {
		in.Rules = append(in.Rules, lifecycle.Rule{Type: lifecycle.RuleType(r.Type), Count: r.Count, Pattern: r.Pattern, Days: r.Days})
	}
	return in
}

func toLifecyclePolicy(p *lifecycle.Policy) *model.LifecyclePolicy {
	if p == nil {
		return nil
	}
	out := &model.LifecyclePolicy{ID: p.ID.String(), Enabled: p.Enabled, MinAgeDays: p.MinAgeDays, Rules: []*model.LifecycleRule{}}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, &model.LifecycleRule{Type: model.LifecycleRuleType(r.Type), Count: r.Count, Pattern: r.Pattern, Days: r.Days})
	}
	return out
}

// repositoryLifecyclePolicy reads a repository's override after
// authorizing ADMIN reads on it.
func (r *Resolver) repositoryLifecyclePolicy(ctx context.Context, obj *model.Repository) (*model.LifecyclePolicy, error) {
	nss, err := r.store.NamespacesByIDs(ctx, []uuid.UUID{obj.NamespaceID})
	if err != nil {
		return nil, err
	}
	if len(nss) == 0 {
		return nil, newError(CodeNotFound, "namespace not found")
	}
	ns, repo, err := r.store.RepositoryByRef(ctx, store.RepositoryRef{Namespace: nss[0].Slug, ID: obj.ID})
	if err != nil {
		return nil, err
	}
	if err := auth.Authorize(ctx, principal(ctx), auth.ActionAdminRead, auth.RepositoryTarget(ns, repo)); err != nil {
		return nil, err
	}
	p, err := r.lifecycle.Get(ctx, lifecycle.Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo})
	if err != nil {
		return nil, err
	}
	return toLifecyclePolicy(p), nil
}

func draftInput(d *model.LifecyclePolicyDraft) *lifecycle.Input {
	if d == nil {
		return nil
	}
	in := lifecycleInput(d.Enabled, d.MinAgeDays, d.Rules)
	return &in
}

// previewItems pages a preview's items; the cursor is the position in
// the evaluation order (a dry run has no rows of its own to key on).
func (r *Resolver) previewItems(ctx context.Context, obj *model.LifecyclePreview, first *int, after *string) (*model.LifecyclePreviewItemConnection, error) {
	limit, err := pageSize(first)
	if err != nil {
		return nil, err
	}
	var offset int
	if _, err := decodeCursor(after, "lifecycle-preview", &offset); err != nil {
		return nil, err
	}
	sc, err := r.lifecycleScope(ctx, obj.Namespace, obj.Repository, auth.ActionAdminRead)
	if err != nil {
		return nil, err
	}
	pv, err := r.lifecycle.PreviewScope(ctx, sc, draftInput(obj.Draft), offset, limit)
	if err != nil {
		return nil, err
	}
	conn := &model.LifecyclePreviewItemConnection{Edges: []*model.LifecyclePreviewItemEdge{}, PageInfo: &model.PageInfo{HasNextPage: pv.HasMore}}
	for i, it := range pv.Items {
		c := encodeCursor("lifecycle-preview", offset+i+1)
		tags := it.Tags
		if tags == nil {
			tags = []string{}
		}
		conn.Edges = append(conn.Edges, &model.LifecyclePreviewItemEdge{Cursor: c, Node: &model.LifecyclePreviewItem{
			Kind: model.LifecycleItemKind(it.Kind), ID: it.ID.String(), Repository: it.Repository, Group: it.Group,
			Name: it.Name, Tags: tags, CreatedAt: it.CreatedAt, SizeBytes: it.SizeBytes}})
	}
	if n := len(conn.Edges); n > 0 {
		conn.PageInfo.StartCursor = &conn.Edges[0].Cursor
		conn.PageInfo.EndCursor = &conn.Edges[n-1].Cursor
	}
	conn.PageInfo.HasPreviousPage = offset > 0
	return conn, nil
}
