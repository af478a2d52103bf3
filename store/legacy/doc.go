// Package legacy owns the registry:2 importer's statements: the
// inventory of legacy repositories (legacy_repositories), the claims and
// state changes of the two import passes, the manifests they stored, the
// one transaction of pass 2, the proxy's routing reads and the migration
// controls (docs/registry2-migration.md, "Inventory", "Two-pass import",
// "Proxy mode", "Migration service").
//
// Contract:
//   - It builds on store/container (the target of an import is a container
//     image); store/container never imports this package.
//   - Transactions: writes run in the core's foreground transactions
//     (store.Store.WithTx), or in one statement; a state change checks the
//     current status in the same statement and fails with CodeState when
//     the row is not in a state that allows it.
//   - Lock order in pass 2: the legacy row (FOR UPDATE), then the image,
//     its tags, manifests and blob rows, then the blob-row locks Detach
//     takes (docs/garbage-collection.md, "Lock protocol").
//   - Errors: expected failures are *store.Error with a Code of this
//     package or of the core; lock timeouts surface as store.CodeRetryable.
package legacy

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// Store runs the importer's statements over the core store.
type Store struct {
	core      *store.Store
	pool      *pgxpool.Pool
	container *container.Store
}

// New returns the importer's store over the core store.
func New(core *store.Store) *Store {
	return &Store{core: core, pool: core.Pool(), container: container.New(core)}
}
