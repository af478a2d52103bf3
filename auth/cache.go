package auth

import (
	"context"
	"sync"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// cacheEntry is one lookup result: the token row with its namespace's
// state and the principal built from it, or cred == nil for "no such
// token" (negative entries stop a client retrying a wrong token from
// costing a query each time).
type cacheEntry struct {
	cred      *store.AccessTokenCredential
	principal *Principal
	expires   time.Time
}

// loadTimeout bounds one lookup shared by concurrent callers (it runs
// detached from the first caller's context so its cancellation does not
// fail the others).
const loadTimeout = 10 * time.Second

// ttlCache keeps token lookups for ttl, at most max entries. Concurrent
// misses of one key share a single lookup. Store errors are not cached.
//
// trusted (nil: always) says whether entries may be used: while it is
// false every lookup goes to the store and nothing is cached, because
// changes made elsewhere may not have been heard of (invalidate.Listener).
type ttlCache[K comparable] struct {
	ttl     time.Duration
	max     int
	clock   store.Clock
	trusted func() bool

	mu       sync.RWMutex
	entries  map[K]*cacheEntry
	inflight map[K]*cacheCall
	// gen counts deletions: a lookup that started before one is not
	// cached, so a revocation's Forget cannot be undone by a read of the
	// row from just before the revocation.
	gen uint64
}

type cacheCall struct {
	gen   uint64
	done  chan struct{}
	entry *cacheEntry
	err   error
}

func newTTLCache[K comparable](ttl time.Duration, max int, clock store.Clock, trusted func() bool) *ttlCache[K] {
	if trusted == nil {
		trusted = func() bool { return true }
	}
	return &ttlCache[K]{ttl: ttl, max: max, clock: clock, trusted: trusted,
		entries: map[K]*cacheEntry{}, inflight: map[K]*cacheCall{}}
}

// peek returns the live cached entry of k, if any.
func (c *ttlCache[K]) peek(k K) (*cacheEntry, bool) {
	if !c.trusted() {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if ok && c.clock.Now().Before(e.expires) {
		return e, true
	}
	return nil, false
}

// get returns the cached entry of k or loads it.
func (c *ttlCache[K]) get(ctx context.Context, k K, load func(context.Context) (*store.AccessTokenCredential, error)) (*cacheEntry, error) {
	if e, ok := c.peek(k); ok {
		return e, nil
	}
	now := c.clock.Now()
	c.mu.Lock()
	if e, ok := c.entries[k]; ok && now.Before(e.expires) && c.trusted() {
		c.mu.Unlock()
		return e, nil
	}
	call, running := c.inflight[k]
	if !running {
		call = &cacheCall{gen: c.gen, done: make(chan struct{})}
		c.inflight[k] = call
	}
	c.mu.Unlock()
	if !running {
		go c.run(ctx, k, call, load)
	}
	select {
	case <-call.done:
		return call.entry, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *ttlCache[K]) run(ctx context.Context, k K, call *cacheCall, load func(context.Context) (*store.AccessTokenCredential, error)) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	defer cancel()
	cred, err := load(lctx)
	if isNotFound(err) {
		cred, err = nil, nil
	}
	c.mu.Lock()
	delete(c.inflight, k)
	if err == nil {
		call.entry = &cacheEntry{cred: cred, expires: c.clock.Now().Add(c.ttl)}
		if cred != nil {
			call.entry.principal = principalFromToken(cred)
		}
		// Trusted now and no deletion since the lookup began: every
		// change committed before it started has been heard of.
		if call.gen == c.gen && c.trusted() {
			c.put(k, call.entry)
		}
	}
	call.err = err
	c.mu.Unlock()
	close(call.done)
}

// put stores an entry; the caller holds mu. When full it drops expired
// entries, then arbitrary ones down to 90 %: the cache only saves queries.
func (c *ttlCache[K]) put(k K, e *cacheEntry) {
	if len(c.entries) >= c.max {
		now := c.clock.Now()
		for key, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, key)
			}
		}
		for key := range c.entries {
			if len(c.entries) < c.max*9/10 {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = e
}

func (c *ttlCache[K]) delete(k K) {
	c.mu.Lock()
	delete(c.entries, k)
	c.gen++
	c.mu.Unlock()
}

func (c *ttlCache[K]) deleteFunc(match func(*cacheEntry) bool) {
	c.mu.Lock()
	for k, e := range c.entries {
		if match(e) {
			delete(c.entries, k)
		}
	}
	c.gen++
	c.mu.Unlock()
}

func (c *ttlCache[K]) clear() {
	c.deleteFunc(func(*cacheEntry) bool { return true })
}

func (c *ttlCache[K]) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
