package turns_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// releaseHolder is a dispatcher's committer that holds back the writes
// that only release a lease until free is closed, as a group commit's busy
// shard does; a held write whose context ends first is dropped with its
// context's error, as a group commit drops a write whose batch has not
// begun. It counts the releases it let through. With leases, every other
// write of the dispatcher's is fenced (a turn's completion) or has a
// signal or a turn.
type releaseHolder struct {
	store.Committer
	free     chan struct{}
	freeOnce sync.Once
	held     chan struct{} // receives once per release held
	released atomic.Int64
}

func (h *releaseHolder) letThrough() { h.freeOnce.Do(func() { close(h.free) }) }

func (h *releaseHolder) Commit(ctx context.Context, w *store.Write) error { return h.Submit(ctx, w)() }

func (h *releaseHolder) Submit(ctx context.Context, w *store.Write) func() error {
	if w.Fence != nil || w.Signal != nil || w.Turn != nil || len(w.More) > 0 {
		return h.Committer.Submit(ctx, w)
	}
	select {
	case h.held <- struct{}{}:
	default:
	}
	select {
	case <-h.free:
	case <-ctx.Done():
		return func() error { return ctx.Err() }
	}
	wait := h.Committer.Submit(ctx, w)
	return func() error {
		err := wait()
		if err == nil {
			h.released.Add(1)
		}
		return err
	}
}

// startHeldReleases starts node "a" with leases on PostgreSQL, its
// completions (and so its releases) committed through a releaseHolder,
// and creates a conversation.
func startHeldReleases(t *testing.T) (f *chatFixture, h *releaseHolder, db *countingLeases, conv, lease string, bot *recordingBot) {
	t.Helper()
	db = &countingLeases{DB: testdb.Postgres(t)}
	bot = newRecordingBot(0)
	h = &releaseHolder{free: make(chan struct{}), held: make(chan struct{}, 1)}
	resolver := func(context.Context, string) (turns.Bot, error) { return bot, nil }
	n := newNodeWith(db, resolver, func(c store.Committer) store.Committer { h.Committer = c; return h },
		turns.DispatcherOptions{Leases: true, Node: "a"})
	f = newChatFixtureOn(t, db, n)
	f.dispatcher.Start(context.Background())
	t.Cleanup(f.dispatcher.Stop)
	t.Cleanup(h.letThrough) // before Stop, which releases
	c, err := f.chat.CreateConversation(context.Background(), f.caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, h, db, c.ID, "turns:" + f.botID + ":" + c.ID, bot
}

// TestLeaseReleasedByTheGroupCommit: a parked lease's release at the end
// of its linger is a write of the conversation's group commit, not a
// statement committed on its own (Leases.Release outside a transaction):
// the lease is free afterwards, and the dispatcher made no Release of its
// own.
func TestLeaseReleasedByTheGroupCommit(t *testing.T) {
	f, h, db, conv, name, bot := startHeldReleases(t)
	h.letThrough()
	f.post(t, conv, "0")
	waitUntil(t, "turn 0", func() bool { return bot.count() == 1 })
	waitUntil(t, "the release committed", func() bool { return h.released.Load() == 1 })
	if n := db.releases.Load(); n != 0 {
		t.Fatalf("%d Releases outside the group commit", n)
	}
	if free, _, err := db.DB.Leases().Free(context.Background(), name); err != nil || !free {
		t.Fatalf("the lease is not free after its release (free %v, err %v)", free, err)
	}
}

// TestLeaseReleaseCalledOff: a message that comes while its
// conversation's release waits for its batch calls the release off and
// runs under the lease as it was parked: no Take, no Free, the same epoch,
// and no release committed until the next linger ends.
func TestLeaseReleaseCalledOff(t *testing.T) {
	ctx := context.Background()
	f, h, db, conv, name, bot := startHeldReleases(t)
	f.post(t, conv, "0")
	waitUntil(t, "turn 0", func() bool { return bot.count() == 1 })
	_, epoch, err := db.DB.Leases().Free(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatal("no release after the linger")
	}
	takes, frees := db.takes.Load(), db.frees.Load()
	f.post(t, conv, "1")
	waitUntil(t, "turn 1", func() bool { return bot.count() == 2 })
	if n := h.released.Load(); n != 0 {
		t.Fatalf("%d releases committed", n)
	}
	if db.takes.Load() != takes || db.frees.Load() != frees {
		t.Fatalf("the lease was taken again (Takes %d → %d, Frees %d → %d)", takes, db.takes.Load(), frees, db.frees.Load())
	}
	isFree, epoch2, err := db.DB.Leases().Free(ctx, name)
	if err != nil || isFree || epoch2 != epoch {
		t.Fatalf("lease after the called-off release: free %v, epoch %d (was %d), err %v", isFree, epoch2, epoch, err)
	}
	h.letThrough() // the next linger's release goes through
	waitUntil(t, "the release committed", func() bool { return h.released.Load() == 1 })
	if isFree, _, err := db.DB.Leases().Free(ctx, name); err != nil || !isFree {
		t.Fatalf("the lease is not free after its release (free %v, err %v)", isFree, err)
	}
}
