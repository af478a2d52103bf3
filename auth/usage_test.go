package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

type storeCredential = store.AccessTokenCredential

func (f *fixture) lastUsed(label string) *time.Time {
	f.t.Helper()
	c, err := f.st.AccessTokenByID(context.Background(), f.tokens[label].NamespaceID, f.tokens[label].ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return c.LastUsedAt
}

// Many requests, one write per flush, and the latest time wins.
func TestLastUsedBuffered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	a := bearer(f.mint("a", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	b := basic("u", f.mint("b", f.other, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := a
			if i%3 == 0 {
				h = b
			}
			if _, err := f.authn.Authenticate(request(h)); err != nil {
				t.Error(err)
			}
		}()
		if i == 250 {
			wg.Wait()
			f.clock.Advance(time.Second)
		}
	}
	wg.Wait()
	if f.count.touch.Load() != 0 || f.lastUsed("a") != nil {
		t.Fatal("a request wrote last_used_at")
	}
	if err := f.authn.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.count.touch.Load(); n != 1 {
		t.Fatalf("500 requests, one flush: %d writes", n)
	}
	for _, l := range []string{"a", "b"} {
		if got := f.lastUsed(l); got == nil || !got.Equal(f.clock.Now()) {
			t.Fatalf("%s last used %v, want %v", l, got, f.clock.Now())
		}
	}
	// Nothing used since: no write at all.
	if err := f.authn.Flush(ctx); err != nil || f.count.touch.Load() != 1 {
		t.Fatalf("empty flush wrote: %v, %d", err, f.count.touch.Load())
	}
	// Failed requests record nothing.
	if _, err := f.authn.Authenticate(request(bearer(f.secrets["a"] + "x"))); err == nil {
		t.Fatal("mangled token accepted")
	}
	if f.authn.usage.len() != 0 {
		t.Fatal("a refused request was recorded")
	}
}

type failingTouch struct {
	*countingStore
	fail bool
}

func (s *failingTouch) TouchAccessTokens(ctx context.Context, uses []store.AccessTokenUse) (int64, error) {
	if s.fail {
		return 0, errors.New("database away")
	}
	return s.countingStore.TouchAccessTokens(ctx, uses)
}

// A failed flush keeps the values for the next one.
func TestLastUsedFlushFailureKeepsValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	h := bearer(f.mint("a", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	fs := &failingTouch{countingStore: f.count, fail: true}
	f.authn.tokens = fs
	if _, err := f.authn.Authenticate(request(h)); err != nil {
		t.Fatal(err)
	}
	used := f.clock.Now()
	if err := f.authn.Flush(context.Background()); err == nil {
		t.Fatal("flush did not report the failure")
	}
	f.clock.Advance(time.Minute)
	fs.fail = false
	if err := f.authn.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.lastUsed("a"); got == nil || !got.Equal(used) {
		t.Fatalf("last used %v, want %v", got, used)
	}
}

// Run flushes on its ticker and once more when stopped; the number of
// writes follows the ticks, not the requests.
func TestRunFlushes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FlushInterval: 20 * time.Millisecond})
	h := bearer(f.mint("a", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { f.authn.Run(ctx); close(done) }()
	requests := 0
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := f.authn.Authenticate(request(h)); err != nil {
			t.Fatal(err)
		}
		requests++
	}
	f.clock.Advance(time.Hour)
	if _, err := f.authn.Authenticate(request(h)); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	ticks := int64(time.Since(start) / (20 * time.Millisecond))
	writes := f.count.touch.Load()
	// At most one write per tick that could have happened, plus the final
	// flush.
	if writes < 1 || writes > ticks+1 {
		t.Fatalf("%d requests made %d writes", requests, writes)
	}
	if got := f.lastUsed("a"); got == nil || !got.Equal(f.clock.Now()) {
		t.Fatalf("the final flush lost the last use: %v, want %v", got, f.clock.Now())
	}
	t.Logf("%d requests, %d writes", requests, writes)
}
