// Package catalog holds what spans formats: the namespace's trash, its
// publish history, the checksum search, and the purge of a repository
// (refused while rows of any format still reference it). Each of these is
// one statement over the tables of every format, whose items it then loads
// from the format packages by calling them; the format packages never
// import each other or this package.
package catalog

import (
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
}

// New returns the cross-format reads over the core store.
func New(core *store.Store) *Store {
	return &Store{core: core, pool: core.Pool(), container: container.New(core), maven: maven.New(core), npm: npmstore.New(core)}
}
