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
// returned. The other nodes on PostgreSQL are told of it (Peers: the
// PostgreSQL broker's notifications) and forget their copies when the
// notification arrives, in milliseconds; while a node hears the others'
// changes its answers are kept for peerCacheTTL, a bound for what no
// notification covers. Without peers (SQLite), or while the broker's
// listening session is down, answers are kept for chatCacheTTL: that long,
// a change made by another process (a CLI on the same SQLite file, a node
// whose notification was lost) may go unseen.
//
// Only positive answers are cached (a webhook that resolves, a user who is
// a participant): a creation never needs an invalidation, and a refusal is
// always read from the store.

// chatCacheTTL bounds how stale a cached answer can be when the change was
// made by another process that cannot tell this one.
const chatCacheTTL = time.Second

// peerCacheTTL is how long answers are kept while this node hears the
// other nodes' changes (Peers.Hearing). With chatCacheTTL, a participation
// expired after a second was checked again in each new message's
// transaction; kept for a minute, a conversation whose user writes every
// few seconds needs no check.
const peerCacheTTL = time.Minute

// Peers are the other nodes sharing the database (realtime.PGBroker):
// Tell makes them forget, at once, what their caches hold of a change this
// node committed (they apply it with Chat.Changed); Hearing reports that
// this node hears their changes, so that its answers may be kept for
// peerCacheTTL.
type Peers interface {
	Tell(kind, botID, conversationID string)
	Hearing() bool
}

// Kinds of changes told to the other nodes (Peers.Tell, Chat.Changed).
const (
	// ChangedBot: a bot's integrations (its Chat API's scope and
	// encryption key) or definition changed, or it was deleted.
	ChangedBot = "bot"
	// ChangedParticipants: a participation was removed or a user deleted.
	ChangedParticipants = "participants"
	// ChangedConversation: a conversation was deleted.
	ChangedConversation = "conversation"
)

// ttl is how long an answer read now may be kept.
func (c *caches) ttl() time.Duration {
	if c.peers != nil && c.peers.Hearing() {
		return peerCacheTTL
	}
	return chatCacheTTL
}

// tell tells the other nodes of a change committed here.
func (c *caches) tell(kind, botID, conversationID string) {
	if c.peers != nil {
		c.peers.Tell(kind, botID, conversationID)
	}
}

// Changed applies a change another node told of (Peers), or, for
// realtime.ChangedAll or any kind it does not know, forgets everything the
// caches hold: this node may have missed changes.
func (s *Chat) Changed(kind, botID, conversationID string) {
	switch kind {
	case ChangedBot:
		s.botChanged(botID)
	case ChangedParticipants:
		s.cache.participants.Invalidate()
	case ChangedConversation:
		s.conversationDeleted(botID, conversationID)
	default:
		s.cache.forgetAll()
	}
}

// forgetAll forgets every answer the caches hold.
func (c *caches) forgetAll() {
	c.scopes.Invalidate()
	c.keys.Invalidate()
	c.participants.Invalidate()
}

// caches are the Chat API's read caches.
type caches struct {
	scopes       readcache.TTL[string, *Scope]       // webhook id → scope
	participants readcache.TTL[participantKey, bool] // present → participant
	keys         readcache.TTL[userKeyKey, string]   // (encryption key, user key) → user id
	peers        Peers                               // nil: none can be told
}

type participantKey struct{ bot, conv, user string }

// userKeyKey identifies a verified user key; the encryption key is part of
// it, so a rotated key never matches an entry verified with the old one.
type userKeyKey struct{ secret, key string }

// participantsChanged is called after a commit that may remove a
// participation of a bot's (a removal, a user's deletion).
func (c *caches) participantsChanged(botID string) {
	c.participants.Invalidate()
	c.tell(ChangedParticipants, botID, "")
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
