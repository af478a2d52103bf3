package graph

import (
	"context"

	"github.com/google/uuid"
)

// The hosted members holding an npm or Maven name, as those protocols'
// virtual resolution tests it for name shadowing.

func (r *Resolver) npmHolding(ctx context.Context, nsID uuid.UUID, hosted []uuid.UUID, name string) (map[uuid.UUID]bool, error) {
	return r.npm.HoldingRepositories(ctx, nsID, hosted, name)
}

func (r *Resolver) mavenHolding(ctx context.Context, nsID uuid.UUID, hosted []uuid.UUID, groupID, artifactID string) (map[uuid.UUID]bool, error) {
	return r.maven.HoldingRepositories(ctx, nsID, hosted, groupID, artifactID)
}
