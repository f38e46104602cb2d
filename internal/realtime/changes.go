package realtime

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Changes to what nodes cache, told through the PostgreSQL broker. A node
// caches answers of the store on its hot path (the Chat API's scopes, user
// keys and participations, a bot's row): when one of them changes on a
// node, the others are told (PGBroker.Tell, after the commit) and forget
// their copies when the notification arrives, in milliseconds, instead of
// when their copies expire. The broker knows nothing of the caches: a
// change is a kind, a bot and a conversation, handed to OnChange.
//
// A notification sent while a node's listening session is down is lost to
// it. So a node forgets all it caches (ChangedAll) when its session starts
// listening and when it stops, and Hearing tells the caches whether they
// may keep an answer for long: only while every change would be heard.

// ChangedAll is the kind handed to OnChange when this node may have missed
// changes: its caches forget everything.
const ChangedAll = "*"

// changes is a PGBroker's side of the changes.
type changes struct {
	hearing atomic.Bool
	on      atomic.Pointer[func(kind, botID, conversationID string)]

	mu      sync.Mutex
	pending []change // told, not sent yet, in order, without repeats
}

type change struct{ kind, bot, conv string }

// Tell tells the other nodes sharing the database of a change (kind, of a
// bot and maybe of one of its conversations) to what they cache; call it
// after the change committed. Unlike Announce it is sent even when this
// node believes it is alone: changes are rare, and a node starting at that
// moment must not miss one.
func (b *PGBroker) Tell(kind, botID, conversationID string) {
	b.changes.add(change{kind, botID, conversationID})
	b.poke()
}

// OnChange sets what is called with the changes other nodes tell, and
// with ChangedAll when this node may have missed some. Set it before Run.
func (b *PGBroker) OnChange(f func(kind, botID, conversationID string)) { b.changes.on.Store(&f) }

// Hearing reports that this node's listening session is up: every change
// told from now on reaches it.
func (b *PGBroker) Hearing() bool { return b.changes.hearing.Load() }

// hear is called once the listening session listens: what was cached
// before may have missed changes.
func (c *changes) hear() {
	c.forgetAll()
	c.hearing.Store(true)
}

// deaf is called when the listening session is lost: from now on changes
// may be missed, so what was kept for long is forgotten.
func (c *changes) deaf() {
	c.hearing.Store(false)
	c.forgetAll()
}

func (c *changes) forgetAll() { c.heard(ChangedAll, "", "") }

// heard hands a change to OnChange's function.
func (c *changes) heard(kind, botID, conversationID string) {
	if f := c.on.Load(); f != nil {
		(*f)(kind, botID, conversationID)
	}
}

// maxPendingChanges bounds the changes waiting to be sent (the database
// is out of reach): past it, they are sent as one ChangedAll.
const maxPendingChanges = 1024

func (c *changes) add(x change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.push(x)
}

// push queues x unless it is queued already (c.mu held).
func (c *changes) push(x change) {
	switch {
	case slices.Contains(c.pending, x):
	case len(c.pending) >= maxPendingChanges:
		c.pending = []change{{kind: ChangedAll}}
	default:
		c.pending = append(c.pending, x)
	}
}

// take returns the changes to send and forgets them.
func (c *changes) take() []change {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending
	c.pending = nil
	return p
}

// putBack queues changes whose sending failed again, before those told
// since.
func (c *changes) putBack(p []change) {
	if len(p) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	later := c.pending
	c.pending = nil
	for _, x := range append(p, later...) {
		c.push(x)
	}
}
