package graph

import (
	"context"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// mavenVersionMutation runs a trash operation on a Maven version; the
// payload is the version afterwards.
func (r *mutationResolver) mavenVersionMutation(ctx context.Context, in model.PackageItemRefInput,
	do func(context.Context, uuid.UUID, uuid.UUID) (*maven.Version, error)) (*model.MavenVersionPayload, error) {
	ns, id, err := r.packageItemRef(ctx, in, "maven version")
	if err != nil {
		return nil, err
	}
	if _, err := do(ctx, ns, id); err != nil {
		return nil, err
	}
	vs, err := r.maven.ArtifactsByIDs(ctx, ns, []uuid.UUID{id})
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, notFound("maven version %s not found", id)
	}
	return &model.MavenVersionPayload{Version: toMavenVersion(vs[0])}, nil
}

// mavenPackageMutation runs a trash operation on a Maven package; the
// payload is the package afterwards.
func (r *mutationResolver) mavenPackageMutation(ctx context.Context, in model.PackageItemRefInput,
	do func(context.Context, uuid.UUID, uuid.UUID) (*maven.Package, error)) (*model.MavenPackagePayload, error) {
	ns, id, err := r.packageItemRef(ctx, in, "maven package")
	if err != nil {
		return nil, err
	}
	if _, err := do(ctx, ns, id); err != nil {
		return nil, err
	}
	p, err := mavenPackageByID(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	return &model.MavenPackagePayload{Package: p}, nil
}
