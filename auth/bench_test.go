package auth

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// BenchmarkAuthenticateCached is the request path of a token whose lookup
// is cached: header parsing, one SHA-256, one map lookup, the expiry check
// and the last-used record.
func BenchmarkAuthenticateCached(b *testing.B) {
	f := newFixture(b, Options{})
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite)}))
	r := request(h)
	if _, err := f.authn.Authenticate(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.authn.Authenticate(r); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if n := f.count.byHash.Load(); n != 1 {
		b.Fatalf("%d lookups", n)
	}
}

// BenchmarkAuthorize is one decision.
func BenchmarkAuthorize(b *testing.B) {
	f := newFixture(b, Options{})
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite), Repositories: []string{"private", "public"}}))
	p, err := f.authn.Authenticate(request(h))
	if err != nil {
		b.Fatal(err)
	}
	target := RepositoryTarget(f.acme, f.repos[enum.VisibilityPrivate])
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := Authorize(ctx, p, ActionWrite, target); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateUncached is the first use of a token on a replica
// (or after the cache TTL): the same path plus one indexed lookup of the
// token and its namespace in PostgreSQL. Each iteration forgets the token
// first, so every call misses the cache.
func BenchmarkAuthenticateUncached(b *testing.B) {
	f := newFixture(b, Options{})
	secret := f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite)})
	tok := f.tokens["ci"]
	r := request(bearer(secret))
	b.ReportAllocs()
	for b.Loop() {
		f.authn.Forget(tok.NamespaceID, tok.ID)
		if _, err := f.authn.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
	if n := f.count.byHash.Load(); n < int64(b.N) {
		b.Fatalf("%d lookups for %d iterations: the cache was not bypassed", n, b.N)
	}
}

// BenchmarkAuthenticateAdmin is the configured admin token: one SHA-256
// and a constant-time compare, no cache or database.
func BenchmarkAuthenticateAdmin(b *testing.B) {
	f := newFixture(b, Options{})
	r := request(basic("ci", testAdminToken))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.authn.Authenticate(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticateCachedLimited is BenchmarkAuthenticateCached with
// the failure limit on, from an address that failed once, so each
// success reserves a failure and gives it back (the limiter's dearest
// success path).
func BenchmarkAuthenticateCachedLimited(b *testing.B) {
	f := newFixture(b, Options{FailureLimit: 10})
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite)}))
	r := request(h)
	if _, err := f.authn.Authenticate(request(bearer(wrongToken))); HTTPStatus(err) != 401 {
		b.Fatal(err)
	}
	if _, err := f.authn.Authenticate(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := f.authn.Authenticate(r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
