package upstream

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// negativeCache remembers upstream 404s for a short time, so that clients
// probing for content that does not exist (Maven asks every repository
// for every artifact, its -sources and its checksums) do not each cost
// an upstream request. Only 404 and 410 are remembered: a 5xx or a
// timeout says nothing about the content, and the breaker handles those.
type negativeCache struct {
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	lru *simplelru.LRU[string, time.Time] // key -> expiry
}

func newNegativeCache(ttl time.Duration, size int, now func() time.Time) *negativeCache {
	n := &negativeCache{ttl: ttl, now: now}
	if ttl > 0 {
		n.lru, _ = simplelru.NewLRU[string, time.Time](size, nil)
	}
	return n
}

func (n *negativeCache) add(key string) {
	if n.lru == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lru.Add(key, n.now().Add(n.ttl))
}

// hit reports a fresh entry for key, dropping an expired one.
func (n *negativeCache) hit(key string) bool {
	if n.lru == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	exp, ok := n.lru.Get(key)
	if !ok {
		return false
	}
	if !n.now().Before(exp) {
		n.lru.Remove(key)
		return false
	}
	return true
}

func (n *negativeCache) forget(key string) {
	if n.lru == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lru.Remove(key)
}

func (n *negativeCache) purge() {
	if n.lru == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lru.Purge()
}
