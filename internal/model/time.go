package model

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Now returns the current UTC time truncated to milliseconds: every stored
// timestamp is written at that precision so that what a create call returns
// is byte-for-byte what later reads return.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// FormatTime renders t as the wire format: RFC 3339, UTC, milliseconds, "Z".
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// FromMillis converts Unix milliseconds (the storage form) to a UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// NewID returns a new time-ordered identifier (UUIDv7, 36 characters), the
// length the Botpress clients and validators expect for ids.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// NewSecret returns a random URL-safe secret with the given prefix, carrying
// 160 bits of entropy.
func NewSecret(prefix string) string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// NewNodeID names this process among the nodes sharing a database: the
// holder of its store leases and the sender of its broker announcements.
func NewNodeID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "node-" + hex.EncodeToString(b[:])
}

// MessageTime is the creation time of a new message of the conversation
// ref: now, unless this node gave the conversation's last message this
// millisecond or a later one, then the millisecond after that one; and
// always after `after` (a bot's answer, after what it answers). Messages
// are ordered by their millisecond timestamps: without this, a user's
// message sent in the millisecond of the bot's previous answer (which
// took the millisecond after its question) sorted before that answer.
func MessageTime(ref ConversationRef, after time.Time) time.Time {
	t := Now()
	if !t.After(after) {
		t = after.Truncate(time.Millisecond).Add(time.Millisecond)
	}
	messageClock.mu.Lock()
	defer messageClock.mu.Unlock()
	c := &messageClock
	if last, ok := c.last[ref]; ok && !t.After(last) {
		t = last.Add(time.Millisecond)
	}
	if c.last == nil {
		c.last = map[ConversationRef]time.Time{}
	}
	c.last[ref] = t
	if len(c.last) >= max(c.pruneAt, 1024) {
		// A conversation whose last message is a second old needs no
		// entry: now is later.
		old := Now().Add(-time.Second)
		for r, last := range c.last {
			if last.Before(old) {
				delete(c.last, r)
			}
		}
		c.pruneAt = 2 * len(c.last)
	}
	return t
}

// messageClock holds, per conversation, the last MessageTime given.
var messageClock struct {
	mu      sync.Mutex
	last    map[ConversationRef]time.Time
	pruneAt int
}
