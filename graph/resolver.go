package graph

import (
	"log/slog"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
)

// Resolver is the root resolver: the one store and a logger. Per-request
// state (caller, dataloaders) travels in the context.
type Resolver struct {
	store *store.Store
	auth  *auth.Authenticator
	log   *slog.Logger
	// npmHook queues the packument rebuild in npm write transactions.
	npmHook store.NpmWriteHook
}
