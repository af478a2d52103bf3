package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func (f *fixture) principal(label string) *Principal {
	f.t.Helper()
	p, err := f.authn.Authenticate(request(bearer(f.secrets[label])))
	if err != nil {
		f.t.Fatalf("%s: %v", label, err)
	}
	return p
}

func TestCreateTokenAuthorization(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	acme := NamespaceOf(f.acme)
	in := time.Hour
	exp := f.clock.Now().Add(in)
	f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	f.mint("admin", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})
	f.mint("admin-expiring", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin), ExpiresAt: &exp})
	f.mint("admin-restricted", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin), Repositories: []string{"public"}})
	f.mint("other-admin", f.other, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})

	spec := TokenSpec{Name: "new", Scopes: scopes(enum.TokenScopeWrite)}
	for label, want := range map[string]string{
		"read": "403", "admin-restricted": "403", "other-admin": "403", "admin-expiring": "403",
	} {
		_, _, err := f.authn.CreateToken(ctx, f.principal(label), acme, spec)
		if got := statusText(t, err); got != want {
			t.Errorf("%s creates a token: %s, want %s", label, got, want)
		}
	}
	if _, _, err := f.authn.CreateToken(ctx, Anonymous(), acme, spec); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("anonymous creates a token: %v", err)
	}
	// An expiring token may mint one that does not outlive it.
	shorter := exp.Add(-time.Minute)
	tok, secret, err := f.authn.CreateToken(ctx, f.principal("admin-expiring"), acme,
		TokenSpec{Name: "shorter", Scopes: scopes(enum.TokenScopeRead), ExpiresAt: &shorter})
	if err != nil || tok.ExpiresAt == nil || secret == "" {
		t.Fatalf("shorter token: %v", err)
	}
	// An unrestricted ADMIN token of the namespace may; the secret works
	// at once and is stored only as its hash.
	tok, secret, err = f.authn.CreateToken(ctx, f.principal("admin"), acme, spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.authn.Authenticate(request(bearer(secret)))
	if err != nil || p.TokenID() != tok.ID || p.NamespaceSlug() != "acme" || p.Name() != "new" || !p.HasScope(enum.TokenScopeRead) || p.HasScope(enum.TokenScopeDelete) {
		t.Fatalf("new token authenticates as %v (%v)", p, err)
	}
	var n int
	if err := f.st.Pool().QueryRow(ctx, `SELECT count(*) FROM access_tokens WHERE token_sha256 = $1`, func() []byte { h := HashSecret(secret); return h[:] }()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("hash rows %d %v", n, err)
	}
	if err := f.st.Pool().QueryRow(ctx, `SELECT count(*) FROM access_tokens WHERE position(convert_to($1, 'UTF8') in token_sha256) > 0 OR name = $1`, secret).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the secret is stored somewhere: %d %v", n, err)
	}
	// Store validation passes through as store errors.
	_, _, err = f.authn.CreateToken(ctx, f.admin, acme, TokenSpec{Name: "x", Scopes: scopes(enum.TokenScopeRead), Repositories: []string{"nope"}})
	if store.CodeOf(err) != store.CodeNotFound {
		t.Fatalf("unknown repository: %v", err)
	}
	// Suspended: namespace tokens cannot administer, the super-user can.
	if _, err := f.st.SetNamespaceCondition(ctx, "acme", store.ConditionSuspended, true); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(DefaultCacheTTL)
	suspended := NamespaceOf(f.namespace("acme"))
	if _, _, err := f.authn.CreateToken(ctx, f.principal("admin"), suspended, TokenSpec{Name: "s", Scopes: scopes(enum.TokenScopeRead)}); !errors.Is(err, ErrNamespaceUnavailable) {
		t.Fatalf("ADMIN token in a suspended namespace: %v", err)
	}
	if _, _, err := f.authn.CreateToken(ctx, f.admin, suspended, TokenSpec{Name: "s", Scopes: scopes(enum.TokenScopeRead)}); err != nil {
		t.Fatalf("super-user in a suspended namespace: %v", err)
	}
}

func TestListAndRevokeTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	acme := NamespaceOf(f.acme)
	f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	f.mint("read2", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	f.mint("admin", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})
	f.mint("other-admin", f.other, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})

	if _, _, err := f.authn.ListTokens(ctx, f.principal("read"), acme, nil, 10, false); !errors.Is(err, ErrForbidden) {
		t.Fatalf("READ token lists tokens: %v", err)
	}
	if _, _, err := f.authn.ListTokens(ctx, f.principal("other-admin"), acme, nil, 10, false); !errors.Is(err, ErrForbidden) {
		t.Fatalf("other namespace's ADMIN lists tokens: %v", err)
	}
	list, more, err := f.authn.ListTokens(ctx, f.principal("admin"), acme, nil, 10, false)
	if err != nil || more || len(list) != 3 {
		t.Fatalf("list: %d %v %v", len(list), more, err)
	}

	readP := f.principal("read")
	// Another token cannot revoke it without ADMIN ...
	if _, err := f.authn.RevokeToken(ctx, f.principal("read2"), acme, f.tokens["read"].ID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("READ token revokes another: %v", err)
	}
	if _, err := f.authn.RevokeToken(ctx, f.principal("other-admin"), acme, f.tokens["read"].ID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("other namespace revokes: %v", err)
	}
	// ... but a token may revoke itself (npm logout), at once.
	if _, err := f.authn.RevokeToken(ctx, readP, acme, f.tokens["read"].ID); err != nil {
		t.Fatalf("self-revocation: %v", err)
	}
	if _, err := f.authn.Authenticate(request(bearer(f.secrets["read"]))); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token still accepted: %v", err)
	}
	// RevokeSecret: by the secret, as npm logout sends it.
	if _, err := f.authn.RevokeSecret(ctx, f.principal("admin"), f.secrets["read2"]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.authn.Authenticate(request(bearer(f.secrets["read2"]))); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token still accepted: %v", err)
	}
	if _, err := f.authn.RevokeSecret(ctx, f.admin, "arp_nonsense"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown secret: %v", err)
	}
	list, _, err = f.authn.ListTokens(ctx, f.admin, acme, nil, 10, false)
	if err != nil || len(list) != 1 {
		t.Fatalf("live tokens after revocations: %d %v", len(list), err)
	}
	list, _, err = f.authn.ListTokens(ctx, f.admin, acme, nil, 10, true)
	if err != nil || len(list) != 3 {
		t.Fatalf("all tokens: %d %v", len(list), err)
	}
}

func TestPrincipalAccessors(t *testing.T) {
	t.Parallel()
	var nilP *Principal
	for _, p := range []*Principal{nilP, Anonymous(), FromContext(context.Background())} {
		if !p.IsAnonymous() || p.IsAdmin() || p.IsToken() || p.Name() != "anonymous" || p.Scopes() != nil || p.Restricted() {
			t.Fatalf("anonymous accessors wrong for %#v", p)
		}
	}
	a := AdminPrincipal("")
	if !a.IsAdmin() || a.Name() != DefaultAdminUser || !a.HasScope(enum.TokenScopeAdmin) {
		t.Fatal("admin accessors")
	}
	if FromContext(WithPrincipal(context.Background(), a)) != a {
		t.Fatal("context round trip")
	}
}
