package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestCacheOneLookupPerTTL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.authn.Authenticate(request(h))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := f.count.byHash.Load(); n != 1 {
		t.Fatalf("100 concurrent requests made %d lookups, want 1", n)
	}
	f.clock.Advance(DefaultCacheTTL - time.Millisecond)
	if _, err := f.authn.Authenticate(request(h)); err != nil || f.count.byHash.Load() != 1 {
		t.Fatalf("within the TTL: %v, %d lookups", err, f.count.byHash.Load())
	}
	f.clock.Advance(time.Millisecond)
	if _, err := f.authn.Authenticate(request(h)); err != nil || f.count.byHash.Load() != 2 {
		t.Fatalf("after the TTL: %v, %d lookups", err, f.count.byHash.Load())
	}
}

// Unknown tokens are cached too; malformed ones never reach the store;
// the admin token never does either.
func TestCacheNegativeAndShortcuts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	unknown, err := NewSecret(f.acme.ID)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := f.authn.Authenticate(request(bearer(unknown))); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("unknown token: %v", err)
		}
		if _, err := f.authn.Authenticate(request(bearer("arp_typo"))); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("malformed token: %v", err)
		}
		p, err := f.authn.Authenticate(request(basic("admin", testAdminToken)))
		if err != nil || !p.IsAdmin() {
			t.Fatalf("admin: %v %v", p, err)
		}
		p, err = f.authn.Authenticate(request(""))
		if err != nil || !p.IsAnonymous() {
			t.Fatalf("anonymous: %v %v", p, err)
		}
	}
	if n := f.count.byHash.Load(); n != 1 {
		t.Fatalf("%d lookups, want 1 (the unknown token, once)", n)
	}
	// Close to the admin token is not the admin token.
	if _, err := f.authn.Authenticate(request(bearer(testAdminToken + "x"))); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("admin token with a suffix: %v", err)
	}
}

func TestCacheSizeBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{CacheSize: 50})
	for range 200 {
		s, err := NewSecret(f.acme.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.authn.Authenticate(request(bearer(s)))
	}
	if n := f.authn.byHash.len(); n > 50 {
		t.Fatalf("cache holds %d entries, bound 50", n)
	}
}

// Revocation: at once on the replica that revoked, within the TTL on the
// others.
func TestRevocationTakesEffect(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite)}))
	other := New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock}) // a second replica
	for _, a := range []*Authenticator{f.authn, other} {
		if _, err := a.Authenticate(request(h)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.authn.RevokeToken(ctx, f.admin, NamespaceOf(f.acme), f.tokens["ci"].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.authn.Authenticate(request(h)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoking replica still accepts the token: %v", err)
	}
	if _, err := other.Authenticate(request(h)); err != nil {
		t.Fatalf("the other replica within the TTL: %v (it may use its cache)", err)
	}
	f.clock.Advance(DefaultCacheTTL)
	if _, err := other.Authenticate(request(h)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("the other replica after the TTL still accepts the revoked token: %v", err)
	}
}

// Expiry is checked on every request, not when the lookup was cached.
func TestExpiryWithinCachedEntry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{CacheTTL: time.Hour})
	exp := f.clock.Now().Add(time.Minute)
	h := bearer(f.mint("short", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead), ExpiresAt: &exp}))
	if _, err := f.authn.Authenticate(request(h)); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.authn.Authenticate(request(h)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("expired token accepted from the cache: %v", err)
	}
	if f.count.byHash.Load() != 1 {
		t.Fatalf("%d lookups", f.count.byHash.Load())
	}
}

// A lookup that raced with a Forget is not cached (it may predate the
// revocation).
func TestForgetDuringLookup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	block := make(chan struct{})
	started := make(chan struct{})
	f.authn.tokens = &slowStore{countingStore: f.count, started: started, block: block}
	done := make(chan error)
	go func() {
		_, err := f.authn.Authenticate(request(h))
		done <- err
	}()
	<-started
	f.authn.Forget(f.acme.ID, f.tokens["ci"].ID)
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := f.authn.byHash.len(); n != 0 {
		t.Fatalf("the raced lookup was cached (%d entries)", n)
	}
}

type slowStore struct {
	*countingStore
	started chan struct{}
	block   chan struct{}
}

func (s *slowStore) AccessTokenByHash(ctx context.Context, ns uuid.UUID, sha [32]byte) (*storeCredential, error) {
	close(s.started)
	<-s.block
	return s.countingStore.AccessTokenByHash(ctx, ns, sha)
}

// A caller whose context ends does not wait for a slow lookup.
func TestLookupHonoursContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	h := bearer(f.mint("ci", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	block := make(chan struct{})
	defer close(block)
	f.authn.tokens = &slowStore{countingStore: f.count, started: make(chan struct{}), block: block}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := request(h).WithContext(ctx)
	if _, err := f.authn.Authenticate(r); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
}
