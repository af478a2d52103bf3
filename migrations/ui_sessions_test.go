package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const uiSessionsVersion = 40

// TestUISessionsUpgrade: a database of the release before 00040, holding a
// namespace and an access token, upgrades with migrations.Up; its rows
// are kept and sessions of either principal can then be stored, never
// both or neither.
func TestUISessionsUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, uiSessionsVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	tok := v7(t)
	f.must("access_tokens", row{"id", tok, "namespace_id", ns, "name", "ci", "token_sha256", digest("ci"),
		"scopes", []int16{0}})

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM access_tokens WHERE id = $1 AND namespace_id = $2`, tok, ns).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the access token after the upgrade: %d %v", n, err)
	}
	now := time.Now()
	session := func(label string, binding []byte, tokNS, tokID any) error {
		return insert(ctx, pool, "ui_sessions", row{"session_sha256", digest(label), "admin_binding", binding,
			"access_token_namespace_id", tokNS, "access_token_id", tokID,
			"created_at", now, "last_seen_at", now, "expires_at", now.Add(time.Hour)})
	}
	if err := session("admin", digest("binding"), nil, nil); err != nil {
		t.Fatalf("admin session: %v", err)
	}
	if err := session("token", nil, ns, tok); err != nil {
		t.Fatalf("token session: %v", err)
	}
	for label, err := range map[string]error{
		"both":          session("both", digest("binding"), ns, tok),
		"neither":       session("neither", nil, nil, nil),
		"half a token":  session("half", nil, ns, nil),
		"short binding": session("short", []byte("x"), nil, nil),
		"same secret":   session("admin", digest("binding"), nil, nil),
	} {
		if c := sqlState(err); c != codeCheck && c != codeUnique {
			t.Errorf("%s: %v", label, err)
		}
	}
}
