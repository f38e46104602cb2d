package turns_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/turns"
)

// TestFoldAnswersWithTheMessage: a foldable bot's answer to a user's
// message is committed with the message, in one commit: when
// createMessage returns, the answer is stored, its signal follows the
// message's, the turn is done and its run recorded. On SQLite, and on
// PostgreSQL under the lease the conversation's first run parked.
func TestFoldAnswersWithTheMessage(t *testing.T) {
	foldEngines(t, func(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
		obs := &countingObserver{}
		f := newFixture(turns.FoldableBot(botFunc(echoText)), turns.DispatcherOptions{FoldWithin: 10 * time.Second, Observer: obs})
		runs, _ := f.runs(t)
		ran := obs.ran.Load()
		for i, text := range []string{"a", "b", "c"} {
			before := f.commits.n.Load()
			f.post(t, f.conv, text)
			if n := f.commits.n.Load() - before; n != 1 {
				t.Fatalf("message %d took %d commits, want 1", i, n)
			}
		}
		eqStrings(t, "messages once createMessage returned", f.texts(t), "a", "echo a", "b", "echo b", "c", "echo c")
		eqStrings(t, "signals", f.signalTexts(t), "a", "echo a", "b", "echo b", "c", "echo c")
		if n := f.pending(t); n != 0 {
			t.Fatalf("%d turns pending", n)
		}
		if turns, failed := f.runs(t); turns-runs != 3 || failed != 0 {
			t.Fatalf("turn runs recorded: %d, %d failed; want 3, none failed", turns-runs, failed)
		}
		if n := obs.ran.Load() - ran; n != 3 {
			t.Fatalf("the observer was told of %d turns, want 3", n)
		}
	})
}

// countingObserver counts the turns a dispatcher reports, and records
// how the users' messages committed.
type countingObserver struct {
	ran    atomic.Int64
	mu     sync.Mutex
	stored []string
}

func (o *countingObserver) TurnRan(time.Duration, bool) { o.ran.Add(1) }
func (o *countingObserver) RunWaited(time.Duration)     {}
func (o *countingObserver) MessageStored(alone string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if alone == "" {
		alone = "folded"
	}
	o.stored = append(o.stored, alone)
}

// storedSince is how the messages committed after the first n told.
func (o *countingObserver) storedSince(n int) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.stored[n:]...)
}

// TestFoldTellsHowAMessageCommitted: the observer is told, for each
// user's message, whether it committed with its bot's answer or alone,
// and why, so that an operator can tell what keeps messages from folding.
func TestFoldTellsHowAMessageCommitted(t *testing.T) {
	echo := func(<-chan struct{}, chan<- struct{}) turns.Bot { return turns.FoldableBot(botFunc(echoText)) }
	for _, c := range []struct {
		name string
		// bot is the case's bot, whose turns may wait for release and
		// tell started.
		bot    func(release <-chan struct{}, started chan<- struct{}) turns.Bot
		within time.Duration
		// before runs before the message is posted.
		before func(t *testing.T, f *foldFixture, started <-chan struct{})
		want   string
	}{
		{"folded", echo, 10 * time.Second, nil, "folded"},
		{"a bot that does not fold", func(<-chan struct{}, chan<- struct{}) turns.Bot { return botFunc(echoText) },
			10 * time.Second, nil, turns.AloneOff},
		{"a slow turn", func(release <-chan struct{}, _ chan<- struct{}) turns.Bot {
			return turns.FoldableBot(echoHolding("m", release))
		}, 50 * time.Millisecond, nil, turns.AloneSlow},
		{"a turn that steps outside", func(<-chan struct{}, chan<- struct{}) turns.Bot {
			return turns.FoldableBot(botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				if err := turns.StepOutside(ctx, out); err != nil {
					return err
				}
				return echoText(ctx, in, out)
			}))
		}, 10 * time.Second, nil, turns.AloneOutside},
		{"a conversation with turns to run", func(release <-chan struct{}, started chan<- struct{}) turns.Bot {
			return turns.FoldableBot(botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				if in.Message == nil { // the event's turn holds the conversation
					close(started)
					<-release
					return nil
				}
				return echoText(ctx, in, out)
			}))
		}, 10 * time.Second, func(t *testing.T, f *foldFixture, started <-chan struct{}) {
			f.storeEvent(t)
			f.queue.Notify(f.ref())
			<-started
			f.queue.Notify(f.ref()) // a turn more to run after this one
		}, turns.AloneBusy},
	} {
		t.Run(c.name, func(t *testing.T) {
			release, started := make(chan struct{}), make(chan struct{})
			obs := &countingObserver{}
			f := newFoldFixture(t, c.bot(release, started), turns.DispatcherOptions{FoldWithin: c.within, Observer: obs})
			t.Cleanup(func() { close(release) }) // before the dispatcher stops
			if c.before != nil {
				c.before(t, f, started)
			}
			f.post(t, f.conv, "m")
			eqStrings(t, "how the message committed", obs.storedSince(0), c.want)
		})
	}
}

// runs counts the bot's recorded turn runs, and the failed ones.
func (f *foldFixture) runs(t *testing.T) (n, failed int64) {
	t.Helper()
	now := time.Now()
	bs, err := f.db.Activity().Buckets(context.Background(), f.botID, now.Add(-time.Hour), now.Add(time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		n, failed = n+b.Turns, failed+b.TurnFailures
	}
	return n, failed
}

// TestFoldSlowTurnCommitsTheMessageFirst: a turn that does not end within
// FoldWithin lets its message commit alone (createMessage returns); its
// answer follows with its completion, once.
func TestFoldSlowTurnCommitsTheMessageFirst(t *testing.T) {
	release := make(chan struct{})
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		<-release
		return echoText(ctx, in, out)
	})
	f := newFoldFixture(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 20 * time.Millisecond})
	f.post(t, f.conv, "slow")
	eqStrings(t, "messages before the turn ended", f.texts(t), "slow")
	if n := f.pending(t); n != 1 {
		t.Fatalf("%d turns pending while the turn runs, want 1", n)
	}
	close(release)
	waitUntil(t, "the answer", func() bool { return len(f.texts(t)) == 2 })
	waitUntil(t, "the turn's completion", func() bool { return f.pending(t) == 0 })
	time.Sleep(50 * time.Millisecond) // a second run would answer again
	eqStrings(t, "messages", f.texts(t), "slow", "echo slow")
}

// TestFoldCommitsBeforeStepsOutside: a turn that steps outside what its
// completion holds (a Runtime API call, a read) finds its message already
// committed; its answer follows apart, before createMessage returns (the
// turn ended within FoldWithin).
func TestFoldCommitsBeforeStepsOutside(t *testing.T) {
	var found atomic.Bool
	var db store.DB
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if string(in.Message.Payload) == `{"type":"text","text":"look"}` {
			if err := turns.StepOutside(ctx, out); err != nil {
				return err
			}
			_, err := db.Chat().GetMessage(ctx, in.BotID, in.Message.ID)
			found.Store(err == nil)
		}
		return echoText(ctx, in, out)
	})
	f := newFoldFixture(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	db = f.db
	before := f.commits.n.Load()
	f.post(t, f.conv, "look")
	if !found.Load() {
		t.Fatal("the turn did not find its message once it stepped outside")
	}
	if n := f.commits.n.Load() - before; n != 2 {
		t.Fatalf("a turn that stepped outside took %d commits, want 2 (its message, then its completion)", n)
	}
	if n := f.pending(t); n != 0 {
		t.Fatalf("%d turns pending once createMessage returned", n)
	}
	f.post(t, f.conv, "next")
	waitUntil(t, "the next answer", func() bool { return len(f.signalTexts(t)) == 4 })
	eqStrings(t, "signals", f.signalTexts(t), "look", "echo look", "next", "echo next")
}

// TestFoldTurnInBetween: a turn enqueued for the conversation while the
// bot answered (by another writer) comes first: the message commits with
// its turn pending and without the folded answer, and the dispatcher runs
// both turns in order.
func TestFoldTurnInBetween(t *testing.T) {
	var db store.DB
	var once sync.Once
	var mu sync.Mutex
	var ran []string
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		kind := "event"
		if in.Message != nil {
			var p struct{ Text string }
			_ = json.Unmarshal(in.Message.Payload, &p)
			kind = p.Text
		}
		mu.Lock()
		ran = append(ran, kind)
		mu.Unlock()
		var err error
		once.Do(func() {
			e := &model.Event{BotID: in.BotID, ID: model.NewID(), ConversationID: in.ConversationID, UserID: in.UserID,
				Type: "custom", Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
			err = db.InTx(ctx, func(tx store.Store) error {
				if err := tx.Chat().CreateEvent(ctx, e); err != nil {
					return err
				}
				return tx.Signals().EnqueueTurn(ctx, &model.Turn{BotID: in.BotID, ConversationID: in.ConversationID,
					Kind: model.TurnEvent, RefID: e.ID, UserID: in.UserID, CreatedAt: e.CreatedAt})
			})
		})
		if err != nil || in.Message == nil {
			return err
		}
		return echoText(ctx, in, out)
	})
	f := newFoldFixture(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: 50 * time.Millisecond})
	db = f.db
	f.post(t, f.conv, "first")
	waitUntil(t, "both turns", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == 2 })
	mu.Lock()
	defer mu.Unlock()
	// The folded run's answer was dropped; the message's turn ran again
	// after the event's, which was enqueued first.
	eqStrings(t, "turns run", ran, "first", "event", "first")
	eqStrings(t, "messages", f.texts(t), "first", "echo first")
}

// TestFoldOnlyWhenIdle: a conversation with a turn pending in the store
// does not fold: the message commits alone and its turn runs after the
// one before it.
func TestFoldOnlyWhenIdle(t *testing.T) {
	f := newFoldFixture(t, turns.FoldableBot(botFunc(echoText)), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	f.dispatcher.Stop() // nothing runs the pending turn: it stays
	f.storeMessage(t, "earlier")
	before := f.commits.n.Load()
	f.post(t, f.conv, "later")
	if n := f.commits.n.Load() - before; n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
	eqStrings(t, "messages", f.texts(t), "earlier", "later")
	if n := f.pending(t); n != 2 {
		t.Fatalf("%d turns pending, want 2", n)
	}
}

// TestFoldNotForEveryBot: a bot that is not foldable (its effects are
// stored as it sends them), and a node with leases, commit the message
// alone and answer from the dispatcher.
func TestFoldNotForEveryBot(t *testing.T) {
	for _, c := range []struct {
		name string
		bot  turns.Bot
		o    turns.DispatcherOptions
	}{
		{"not foldable", botFunc(echoText), turns.DispatcherOptions{FoldWithin: 10 * time.Second}},
		{"off", turns.FoldableBot(botFunc(echoText)), turns.DispatcherOptions{FoldWithin: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFoldFixture(t, c.bot, c.o)
			f.post(t, f.conv, "hi")
			waitUntil(t, "the answer", func() bool { return len(f.texts(t)) == 2 })
			waitUntil(t, "the turn's completion", func() bool { return f.pending(t) == 0 })
			eqStrings(t, "messages", f.texts(t), "hi", "echo hi")
		})
	}
}

// TestFoldFailedTurn: a failing bot's turn is folded like any other: its
// run is recorded as failed and the turn done, with the message.
func TestFoldFailedTurn(t *testing.T) {
	bot := botFunc(func(context.Context, *turns.TurnInput, turns.BotOutput) error { return errors.New("boom") })
	f := newFoldFixture(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	before := f.commits.n.Load()
	f.post(t, f.conv, "hi")
	if n := f.commits.n.Load() - before; n != 1 {
		t.Fatalf("%d commits, want 1", n)
	}
	if n := f.pending(t); n != 0 {
		t.Fatalf("%d turns pending", n)
	}
	if turns, failed := f.runs(t); turns != 1 || failed != 1 {
		t.Fatalf("turn runs recorded: %d, %d failed; want one failed", turns, failed)
	}
}

// failThen fails, once, the transaction of a write whose Then runs, after
// the write's turn was numbered.
type failThen struct {
	store.Committer
	armed atomic.Bool
}

func (c *failThen) Commit(ctx context.Context, w *store.Write) error {
	if w.Then != nil && c.armed.CompareAndSwap(true, false) {
		then := *w.Then
		then.Apply = func(context.Context, store.Store) error { return errors.New("injected") }
		w.Then = &then
	}
	return c.Committer.Commit(ctx, w)
}

// TestFoldCommitFails: when the message and its answer cannot commit
// together, the message commits alone and its turn runs again from the
// store, once; the conversation's next turns are numbered as usual.
func TestFoldCommitFails(t *testing.T) {
	f := newFoldFixtureWith(t, turns.FoldableBot(botFunc(echoText)), turns.DispatcherOptions{FoldWithin: 10 * time.Second},
		func(c store.Committer) store.Committer {
			fail := &failThen{Committer: c}
			fail.armed.Store(true)
			return fail
		})
	db := f.db
	f.post(t, f.conv, "one")
	waitUntil(t, "the answer", func() bool { return len(f.texts(t)) == 2 && f.pending(t) == 0 })
	f.post(t, f.conv, "two") // folded, or not if the dispatcher still holds the conversation
	waitUntil(t, "the second answer", func() bool { return len(f.texts(t)) == 4 && f.pending(t) == 0 })
	eqStrings(t, "messages", f.texts(t), "one", "echo one", "two", "echo two")
	eqStrings(t, "signals", f.signalTexts(t), "one", "echo one", "two", "echo two")
	idle, err := db.States().GetIdleTurn(context.Background(), f.botID, "u1", f.conv)
	if err != nil {
		t.Fatal(err)
	}
	if idle.TurnSeq != 2 {
		t.Fatalf("the conversation's last turn is numbered %d after two turns", idle.TurnSeq)
	}
}
