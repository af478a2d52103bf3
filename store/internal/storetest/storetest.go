// Package storetest holds the fixtures the tests of store's packages
// share: a core store over a fresh test database (internal/testdb) and the
// rows a test needs before it can call a format package.
package storetest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// New returns a core store over a fresh test database and an in-memory
// object store.
func New(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	objects := objstore.NewMem()
	t.Cleanup(func() { objects.Close() })
	return store.New(testdb.New(t), objects, opts)
}

// Namespace inserts a namespaces row with its NOT NULL columns and returns
// its id.
func Namespace(t testing.TB, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	slug := "ns-" + id.String()[24:]
	_, err := pool.Exec(context.Background(), `
		INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		VALUES ($1, $2, 'test', 'organization', $2, 'organization', $2)`, id, slug)
	if err != nil {
		t.Fatalf("insert namespace: %v", err)
	}
	return id
}
