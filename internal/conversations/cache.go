package conversations

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Read caches of the Chat API hot path: the webhook id → chat integration
// lookup, the participant check and verified user keys. Every request
// needs the first two, and they would otherwise be two store reads per
// request.
//
// Freshness: every write that can change a cached answer invalidates the
// cache after its commit (administration's bot updates and deletions call
// Chat.BotChanged, including encryption key rotation; participant removal,
// conversation and user deletion invalidate participants), so on this node a
// change takes effect for the requests that start after the write
// returned. Writes made by another process sharing the database (other
// nodes on PostgreSQL, a CLI on the same SQLite file) are seen within
// chatCacheTTL: that long, another node may still accept a rotated-out key
// or a removed participant.
//
// Only positive answers are cached (a webhook that resolves, a user who is
// a participant): a creation never needs an invalidation, and a refusal is
// always read from the store.

// chatCacheTTL bounds how stale a cached answer can be when the change was
// made by another process.
const chatCacheTTL = time.Second

// chatCacheMax bounds the entries of each cache; when full, it is emptied
// (the entries are cheap to read again).
const chatCacheMax = 1 << 16

// ttlCache is a small map of positive answers with a time-to-live and an
// invalidation generation: an answer read from the store is stored only if
// no invalidation happened since the reader took the generation (before its
// read), so a read that raced with a write never caches the old answer.
type ttlCache[K comparable, V any] struct {
	mu  sync.RWMutex
	gen uint64
	m   map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v   V
	exp time.Time
}

func (c *ttlCache[K, V]) get(k K) (v V, ok bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || time.Now().After(e.exp) {
		return v, false
	}
	return e.v, true
}

// generation is taken before reading the store for a later put.
func (c *ttlCache[K, V]) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

func (c *ttlCache[K, V]) put(k K, v V, gen uint64, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // invalidated since the read
	}
	if c.m == nil || len(c.m) >= chatCacheMax {
		c.m = map[K]ttlEntry[V]{}
	}
	c.m[k] = ttlEntry[V]{v, time.Now().Add(ttl)}
}

// invalidate forgets every entry and refuses the puts of reads begun
// before.
func (c *ttlCache[K, V]) invalidate() {
	c.mu.Lock()
	c.gen++
	c.m = nil
	c.mu.Unlock()
}

// caches are the Chat API's read caches.
type caches struct {
	scopes       ttlCache[string, *Scope]       // webhook id → scope
	participants ttlCache[participantKey, bool] // present → participant
	keys         ttlCache[userKeyKey, string]   // (encryption key, user key) → user id
}

type participantKey struct{ bot, conv, user string }

// userKeyKey identifies a verified user key; the encryption key is part of
// it, so a rotated key never matches an entry verified with the old one.
type userKeyKey struct{ secret, key string }

// invalidateParticipants is called after a commit that may remove a
// participation (removal, conversation, user or bot deletion).
func (s *Chat) invalidateParticipants() {
	s.cache.participants.invalidate()
}

// cacheableUserKey reports whether a verified key may be cached: keys
// with a time-dependent claim (exp, nbf) are verified every time.
func cacheableUserKey(key string) bool {
	_, rest, ok := strings.Cut(key, ".")
	if !ok {
		return false
	}
	payload, _, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return false
	}
	var c struct {
		Exp json.RawMessage `json:"exp"`
		Nbf json.RawMessage `json:"nbf"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return false
	}
	return c.Exp == nil && c.Nbf == nil
}
