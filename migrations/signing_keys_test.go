package migrations_test

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

// TestSigningKeysUpgrade upgrades a database of the previous release
// (every migration up to 00038, with data) to 00039: the data stays, the
// table starts empty (the first instance to need a key creates it), at
// most one key is current, keys are 32 bytes, and going down to 00038 removes the table.
func TestSigningKeysUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, 39)
	f := newFixture(t, pool)
	ns := f.namespace()
	f.must("access_tokens", row{"id", v7(t), "namespace_id", ns, "name", "ci", "token_sha256", digest("ci"), "scopes", []int16{1}})

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if n := f.count("access_tokens", "namespace_id = $1", ns); n != 1 {
		t.Fatalf("%d access tokens after the upgrade", n)
	}
	if n := f.count("token_signing_keys", "true"); n != 0 {
		t.Fatalf("%d signing keys after the upgrade, want none", n)
	}
	key := make([]byte, 32)
	f.must("token_signing_keys", row{"key", key})
	for name, c := range map[string]struct {
		r    row
		want string
	}{
		"second current key": {row{"key", key}, codeUnique},
		"short key":          {row{"key", key[:16], "retired_at", "2030-01-01T00:00:00Z"}, codeCheck},
		"retired before created": {row{"key", key, "created_at", "2030-01-02T00:00:00Z", "retired_at", "2030-01-01T00:00:00Z"},
			codeCheck},
	} {
		if got := sqlState(insert(ctx, pool, "token_signing_keys", c.r)); got != c.want {
			t.Errorf("%s: SQLSTATE %q, want %q", name, got, c.want)
		}
	}
	f.must("token_signing_keys", row{"key", key, "retired_at", "2999-01-01T00:00:00Z"}) // retired keys: any number

	downTo(t, pool, 38)
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('public.token_signing_keys') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("table after Down: %v %v", exists, err)
	}
}
