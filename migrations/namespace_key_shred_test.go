package migrations_test

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const namespaceKeyShredVersion = 52

// TestNamespaceKeyShredUpgrade: a database of the release before 00052
// holds a namespace already purged with a key, and two live namespaces
// with keys (one with a superseded version and a credential row). The
// upgrade shreds the purged namespace's key; purging a live namespace
// afterwards tombstones all its versions in the purging statement, leaves
// its credential row in place (still referencing its key) and the other
// namespace untouched.
func TestNamespaceKeyShredUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, namespaceKeyShredVersion)
	f := newFixture(t, pool)
	purged, live, other := f.namespace(), f.namespace(), f.namespace()
	f.key(purged, 1)
	if _, err := pool.Exec(ctx, `UPDATE namespaces SET deleted_at = now(), purged_at = now() WHERE id = $1`, purged); err != nil {
		t.Fatal(err)
	}
	old := f.key(live, 1)
	if _, err := pool.Exec(ctx, `UPDATE namespace_encryption_keys SET active = false WHERE namespace_id = $1 AND id = $2`, live, old); err != nil {
		t.Fatal(err)
	}
	current := f.key(live, 2)
	repo := f.repository(live, 2, 2)
	remote := v7(t)
	f.must("npm_remote_repositories", row{"id", remote, "namespace_id", live, "repository_id", repo, "url", "https://upstream.test",
		"wrapped_dek", []byte("dek"), "ns_key_id", current, "ns_key_version", 2, "encrypted_auth_token", []byte("ciphertext")})
	f.key(other, 1)

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	tombstone := "shredded_at IS NOT NULL AND NOT active AND octet_length(wrapped_key) = 0"
	if n := f.count("namespace_encryption_keys", "namespace_id = $1 AND "+tombstone, purged); n != 1 {
		t.Fatalf("the key of a namespace purged before the upgrade: %d tombstones", n)
	}
	if n := f.count("namespace_encryption_keys", "namespace_id IN ($1, $2) AND shredded_at IS NULL", live, other); n != 3 {
		t.Fatalf("live keys after the upgrade: %d, want 3", n)
	}

	if _, err := pool.Exec(ctx, `UPDATE namespaces SET deleted_at = now(), purged_at = now() WHERE id = $1`, live); err != nil {
		t.Fatal(err)
	}
	if n := f.count("namespace_encryption_keys", "namespace_id = $1 AND "+tombstone, live); n != 2 {
		t.Fatalf("versions of the purged namespace shredded: %d, want 2", n)
	}
	if n := f.count("npm_remote_repositories", "namespace_id = $1 AND ns_key_id = $2", live, current); n != 1 {
		t.Fatal("the credential row lost its key reference")
	}
	if n := f.count("namespace_encryption_keys", "namespace_id = $1 AND active AND shredded_at IS NULL", other); n != 1 {
		t.Fatal("purging one namespace touched another's key")
	}
	// A second update of purged_at shreds nothing new and fails nothing.
	if _, err := pool.Exec(ctx, `UPDATE namespaces SET purged_at = now() WHERE id = $1`, live); err != nil {
		t.Fatal(err)
	}
}
