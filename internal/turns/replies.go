package turns

import (
	"context"
	"sync"
	"time"
)

// replyTracker counts, per conversation, the replies (Runtime API
// createMessage calls) a bot has in progress on this node. A turn
// delivered again (its bot process died mid-turn) waits for the replies
// of the delivery before it to finish first: store.Deliveries then knows
// every reply that delivery stored and gives the new delivery those
// instead of new ones. Without the wait, a dead process's createMessage
// still committing when the re-delivery starts would count as a new
// reply, and the user would get it twice.
//
// The count is per node: a bundle's process calls the node that runs it.
type replyTracker struct {
	mu      sync.Mutex
	busy    map[replyKey]*replyCount
	settled map[replyKey]time.Time // no delivery begins before this time
}

type replyKey struct{ botID, conversationID string }

type replyCount struct {
	n    int
	idle chan struct{} // closed when n drops to 0
}

// started counts one reply in progress; done ends it.
func (t *replyTracker) started(botID, conversationID string) (done func()) {
	k := replyKey{botID, conversationID}
	t.mu.Lock()
	if t.busy == nil {
		t.busy = map[replyKey]*replyCount{}
	}
	c := t.busy[k]
	if c == nil {
		c = &replyCount{idle: make(chan struct{})}
		t.busy[k] = c
	}
	c.n++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if c.n--; c.n == 0 {
				close(c.idle)
				delete(t.busy, k)
			}
		})
	}
}

// settle holds the conversation's next delivery back for d: a call that
// failed after reaching the bot may have left requests of the dead
// process on their way to the Runtime API, not yet counted by started.
func (t *replyTracker) settle(botID, conversationID string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.settled == nil {
		t.settled = map[replyKey]time.Time{}
	}
	t.settled[replyKey{botID, conversationID}] = time.Now().Add(d)
}

// wait returns once the conversation's settle time has passed and no
// reply is in progress on it, ctx ends, or max has passed (a reply stuck
// that long is not waited for).
func (t *replyTracker) wait(ctx context.Context, botID, conversationID string, max time.Duration) {
	k := replyKey{botID, conversationID}
	t.mu.Lock()
	until, held := t.settled[k]
	delete(t.settled, k)
	t.mu.Unlock()
	if d := time.Until(until); held && d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return
		}
	}
	t.mu.Lock()
	c := t.busy[k]
	t.mu.Unlock()
	if c == nil {
		return
	}
	timer := time.NewTimer(max)
	defer timer.Stop()
	select {
	case <-c.idle:
	case <-ctx.Done():
	case <-timer.C:
	}
}

// ReplyStarted tells the SDK bots' caller that a bot began creating a
// reply on a conversation (runtimeapi.TurnReplies); call done when the
// reply is stored or refused.
func (s *SDKBots) ReplyStarted(botID, conversationID string) (done func()) {
	return s.replies.started(botID, conversationID)
}
