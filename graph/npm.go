package graph

import (
	"context"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/store"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// npmTags loads a package's dist-tags; the first package asking queues the
// whole page's packages.
func npmTags(ctx context.Context, p *model.NpmPackage) ([]*model.NpmDistTag, error) {
	l := pkgLoaders(ctx)
	prime(ctx, l.npmTags, p.Siblings, "npmTags", idKeys(p.NamespaceID))
	return l.npmTags.Load(ctx, idKey{ns: p.NamespaceID, id: p.ID})()
}

// npmTagMutation validates a dist-tag input, resolves the repository and
// runs do; the payload is the package afterwards.
func (r *mutationResolver) npmTagMutation(ctx context.Context, in model.NpmDistTagInput, do func(*npmstore.Repository) error) (*model.NpmPackagePayload, error) {
	if err := r.repositoryFor(ctx, store.RepositoryRef{Namespace: in.Namespace, Name: in.Repository}, auth.ActionWrite); err != nil {
		return nil, err
	}
	if err := npmsemver.ValidateDistTag(in.Tag); err != nil {
		return nil, invalidInput("%s", err.Error())
	}
	repo, err := r.npm.ResolveRepository(ctx, in.Namespace, in.Repository)
	if err != nil {
		return nil, err
	}
	if err := do(repo); err != nil {
		return nil, err
	}
	p, err := pkgLoaders(ctx).npmPackageByName.Load(ctx, npmNameKey{ns: repo.NamespaceID, repo: repo.RepositoryID, name: in.Package})()
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, notFound("npm package %s not found", in.Package)
	}
	return &model.NpmPackagePayload{Package: p}, nil
}
