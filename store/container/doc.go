// Package container owns the container (OCI / Docker) artifacts of hosted
// container repositories: images, manifests (with their index
// relationships), tags and the per-image blob links, for the OCI
// distribution protocol (protocol/oci), the GraphQL API (graph) and the
// registry:2 importer (store/legacy builds on it).
//
// Contract:
//   - Transactions: every write runs in a foreground transaction of the core
//     (store.Store.WithTx: read committed, lock timeout), through db.Retry
//     where a concurrent writer can race it (docs/architecture.md,
//     "Transactions and the retry rule"). Blob bytes are referenced only
//     through the core's Attach in the transaction that writes the row
//     (docs/schema.md, "Blob tables and attachments").
//   - Lock order: repository row (store.LockRepository), then image, then
//     manifests and blob rows in digest order, then the blob-row lock Attach
//     takes (docs/garbage-collection.md, "Lock protocol").
//   - Reads prune to one partition: every partitioned table is named with
//     namespace_id = $1 (docs/schema.md, "Partitioning").
//   - Errors: expected failures are *store.Error with a Code of this
//     package (CodeNameUnknown, CodeManifestUnknown, ...) or of the core;
//     lock timeouts and deadlocks surface as store.CodeRetryable.
//
// The package imports only the core store and its internal helpers; it
// never imports another format package.
package container

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store"
)

// Store runs the container statements over the core store.
type Store struct {
	core *store.Store
	pool *pgxpool.Pool
	// keyring seals and opens remote credentials (SetKeyring); nil: none.
	keyring Keyring
}

// New returns the container store over the core store.
func New(core *store.Store) *Store { return &Store{core: core, pool: core.Pool()} }
