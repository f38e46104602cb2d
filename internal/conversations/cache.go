package conversations

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/readcache"
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

// caches are the Chat API's read caches.
type caches struct {
	scopes       readcache.TTL[string, *Scope]       // webhook id → scope
	participants readcache.TTL[participantKey, bool] // present → participant
	keys         readcache.TTL[userKeyKey, string]   // (encryption key, user key) → user id
}

type participantKey struct{ bot, conv, user string }

// userKeyKey identifies a verified user key; the encryption key is part of
// it, so a rotated key never matches an entry verified with the old one.
type userKeyKey struct{ secret, key string }

// invalidateParticipants is called after a commit that may remove a
// participation (removal, conversation, user or bot deletion).
func (s *Chat) invalidateParticipants() {
	s.cache.participants.Invalidate()
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
