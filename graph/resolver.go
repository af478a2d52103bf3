package graph

import (
	"log/slog"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/legacy"
	"github.com/artifact-registry/artifact-registry/store/lifecycle"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Resolver is the root resolver: the core store, the cross-format reads,
// the format stores and a logger. Per-request state (caller, dataloaders) travels in the
// context.
type Resolver struct {
	store     *store.Store
	catalog   *catalog.Store
	container *container.Store
	legacy    *legacy.Store
	maven     *maven.Store
	npm       *npmstore.Store
	auth      *auth.Authenticator
	log       *slog.Logger
	// npmHook queues the packument rebuild in npm write transactions.
	npmHook npmstore.WriteHook
	// lifecycle stores, previews and runs lifecycle policies.
	lifecycle *lifecycle.Store
	// keyring seals the upstream credentials of npm remotes (the container
	// store holds its own).
	keyring npmstore.Keyring
}
