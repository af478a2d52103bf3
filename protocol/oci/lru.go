package oci

import (
	"container/list"
	"sync"
)

// lru is a small thread-safe least-recently-used cache bounded by the sum
// of the entries' costs. The protocol only caches content-addressed data
// (keyed by digest), which never goes stale.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	cost  func(V) int64
	ll    *list.List
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

func newLRU[K comparable, V any](max int64, cost func(V) int64) *lru[K, V] {
	return &lru[K, V]{max: max, cost: cost, ll: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	cost := c.cost(v)
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.items[k] = c.ll.PushFront(&lruEntry[K, V]{key: k, val: v, cost: cost})
	c.used += cost
	for c.used > c.max {
		last := c.ll.Back()
		ent := last.Value.(*lruEntry[K, V])
		c.ll.Remove(last)
		delete(c.items, ent.key)
		c.used -= ent.cost
	}
}
