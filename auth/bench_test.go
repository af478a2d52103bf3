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
