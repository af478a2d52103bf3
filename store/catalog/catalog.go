// Package catalog holds what spans formats: the namespace's trash (with
// its expiry and purge, which call each format's purge functions), its
// publish history, the checksum search, and the purge of a repository
// with its contents. The reads are one statement over the tables of every
// format, whose items they then load from the format packages; the purges
// run each format's purge functions. The format packages never import each
// other or this package.
package catalog

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Store runs the cross-format reads.
type Store struct {
	core      *store.Store
	pool      *pgxpool.Pool
	container *container.Store
	maven     *maven.Store
	npm       *npmstore.Store

	// beforeCommit, when set (tests), runs at the end of every purge
	// batch's transaction: an error rolls the batch back, as a crash
	// between its statements and the commit would.
	beforeCommit func(ctx context.Context, kind TrashKind) error
}

// New returns the cross-format reads over the core store.
func New(core *store.Store) *Store {
	return &Store{core: core, pool: core.Pool(), container: container.New(core), maven: maven.New(core), npm: npmstore.New(core)}
}
