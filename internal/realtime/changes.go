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

	out      changeQueue // told here, not sent yet
	in       changeQueue // heard from other nodes, not handed to OnChange yet
	applying atomic.Bool // a goroutine hands in's changes to OnChange
}

type change struct{ kind, bot, conv string }

// Tell tells the other nodes sharing the database of a change (kind, of a
// bot and maybe of one of its conversations) to what they cache; call it
// after the change committed. Unlike Announce it is sent even when this
// node believes it is alone: changes are rare, and a node starting at that
// moment must not miss one.
func (b *PGBroker) Tell(kind, botID, conversationID string) {
	b.changes.out.add(change{kind, botID, conversationID})
	b.poke()
}

// OnChange sets what is called with the changes other nodes tell, and
// with ChangedAll when this node may have missed some. Set it before Run.
// The changes heard are handed over one at a time, in the order they
// came, on a goroutine of their own: f may read the store (a bot's
// integrations) without holding up the wake-ups that come behind them.
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

// forgetAll forgets everything the caches hold, before it returns: it
// reads nothing, and a node that stops or starts listening must not keep
// a copy for long meanwhile.
func (c *changes) forgetAll() { c.call(change{kind: ChangedAll}) }

// call hands x to OnChange's function.
func (c *changes) call(x change) {
	if f := c.on.Load(); f != nil {
		(*f)(x.kind, x.bot, x.conv)
	}
}

// heard queues a change another node told and makes sure a goroutine
// hands the queue to OnChange. One runs at a time, only while changes
// wait; one that finds a change queued after its last look runs on.
func (c *changes) heard(x change) {
	c.in.add(x)
	if c.applying.CompareAndSwap(false, true) {
		go c.apply()
	}
}

func (c *changes) apply() {
	for {
		for _, x := range c.in.take() {
			c.call(x)
		}
		c.applying.Store(false)
		if c.in.empty() || !c.applying.CompareAndSwap(false, true) {
			return
		}
	}
}

// maxPendingChanges bounds the changes waiting in a queue (the database
// out of reach, or the store slow to answer OnChange's reads): past it,
// they become one ChangedAll.
const maxPendingChanges = 1024

// changeQueue holds changes in order, without repeats.
type changeQueue struct {
	mu    sync.Mutex
	items []change
}

func (q *changeQueue) add(x change) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.push(x)
}

// push queues x unless it is queued already (q.mu held).
func (q *changeQueue) push(x change) {
	switch {
	case slices.Contains(q.items, x):
	case len(q.items) >= maxPendingChanges:
		q.items = []change{{kind: ChangedAll}}
	default:
		q.items = append(q.items, x)
	}
}

// take returns the queued changes and forgets them.
func (q *changeQueue) take() []change {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.items
	q.items = nil
	return p
}

func (q *changeQueue) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) == 0
}

// putBack queues changes whose sending failed again, before those queued
// since.
func (q *changeQueue) putBack(p []change) {
	if len(p) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	later := q.items
	q.items = nil
	for _, x := range append(p, later...) {
		q.push(x)
	}
}
