package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/rootkey"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
)

// openKeyring opens the root keys of cfg and the keyring of upstream
// credentials over st. The embedded default generates its root key on
// first start and says so once; with an external database and no
// --root-key-url the keyring has no root key and refuses to store
// credentials (credentials.CodeRootKeyMissing), and the server still
// starts. Only key URIs are logged, never key material.
func openKeyring(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (*credentials.Keyring, func(), error) {
	keys, err := rootkey.Load(ctx, rootkey.Settings{URL: cfg.RootKeyURL, Previous: cfg.PreviousRootKeyURLs,
		DataDir: cfg.DataDir, Embedded: cfg.DatabaseURL == ""})
	if err != nil {
		return nil, nil, err
	}
	switch {
	case keys.Created:
		log.Info("generated the root key that encrypts upstream credentials: back it up with the database, without it stored credentials cannot be read",
			"file", keys.File, "root_key", keys.Root.URI)
	case keys.File != "":
		log.Debug("root key read from the data directory", "file", keys.File, "root_key", keys.Root.URI)
	case keys.Root == nil:
		log.Warn("no root key configured: remote repositories cannot store upstream credentials; set --root-key-url (ARTIFACT_REGISTRY_ROOT_KEY_URL), the same on every instance")
	default:
		log.Debug("root key configured", "root_key", keys.Root.URI)
	}
	for _, p := range keys.Previous {
		log.Info("previous root key configured: run `artifact-registry admin root-key rotate` to rewrap what it still wraps", "root_key", p.URI)
	}
	k, err := credentials.New(st, credentials.Options{Root: keys.Root, Previous: keys.Previous})
	if err != nil {
		keys.Close()
		return nil, nil, fmt.Errorf("root keys: %w", err)
	}
	return k, keys.Close, nil
}
