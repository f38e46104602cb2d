// Package readcache holds the small read caches of the hot paths: a map of
// answers read from the store, each with a time-to-live, and an
// invalidation generation so that a read that raced with a write never
// caches the old answer.
//
// Freshness is the caller's rule: a write on this node invalidates the
// cache after its commit, and the TTL bounds how long a change made by
// another process sharing the database (another node, a CLI) can go
// unseen.
package readcache

import (
	"sync"
	"time"
)

// DefaultMax bounds a cache's entries when Max is 0; when full, a cache is
// emptied (its entries are cheap to read again).
const DefaultMax = 1 << 16

// TTL caches values by key. The zero value is ready to use.
type TTL[K comparable, V any] struct {
	// Max bounds the entries (0: DefaultMax).
	Max int
	mu  sync.RWMutex
	gen uint64
	m   map[K]entry[V]
}

type entry[V any] struct {
	v   V
	exp time.Time
}

// Get returns the value cached for k, unless it expired.
func (c *TTL[K, V]) Get(k K) (v V, ok bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || time.Now().After(e.exp) {
		return v, false
	}
	return e.v, true
}

// Expired returns the value cached for k once it expired (and before the
// cache forgot it): an answer that held, to be checked again.
func (c *TTL[K, V]) Expired(k K) (v V, ok bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || !time.Now().After(e.exp) {
		return v, false
	}
	return e.v, true
}

// Forget forgets k's entry.
func (c *TTL[K, V]) Forget(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// Generation is taken before reading the store for a later Put.
func (c *TTL[K, V]) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// Put caches v for k during ttl, unless the cache was invalidated since
// gen was taken (the read may have seen the old answer).
func (c *TTL[K, V]) Put(k K, v V, gen uint64, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	limit := c.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	if c.m == nil || len(c.m) >= limit {
		c.m = map[K]entry[V]{}
	}
	c.m[k] = entry[V]{v, time.Now().Add(ttl)}
}

// Invalidate forgets every entry and refuses the Puts of reads begun
// before.
func (c *TTL[K, V]) Invalidate() {
	c.mu.Lock()
	c.gen++
	c.m = nil
	c.mu.Unlock()
}
