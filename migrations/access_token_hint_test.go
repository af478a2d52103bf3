package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const accessTokenHintVersion = 47

// TestAccessTokenHintUpgrade: tokens of the release before 00047 keep
// working and have no hint (their secret was never stored); new rows may
// carry one, bounded in length.
func TestAccessTokenHintUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, accessTokenHintVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	old := v7(t)
	f.must("access_tokens", row{"id", old, "namespace_id", ns, "name", "old", "token_sha256", digest("old"), "scopes", []int16{0}})

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var hint *string
	if err := pool.QueryRow(ctx, `SELECT secret_hint FROM access_tokens WHERE id = $1 AND namespace_id = $2`, old, ns).Scan(&hint); err != nil || hint != nil {
		t.Fatalf("the old token after the upgrade: hint %v, %v; want NULL", hint, err)
	}
	f.must("access_tokens", row{"id", v7(t), "namespace_id", ns, "name", "new", "token_sha256", digest("new"),
		"scopes", []int16{0}, "secret_hint", "arp_0123456789abcdefghijklAbCd"})
	err := insert(ctx, pool, "access_tokens", row{"id", v7(t), "namespace_id", ns, "name", "long", "token_sha256", digest("long"),
		"scopes", []int16{0}, "secret_hint", strings.Repeat("x", 33)})
	if sqlState(err) != codeCheck {
		t.Fatalf("a 33-character hint: %v; want a CHECK violation", err)
	}
}
