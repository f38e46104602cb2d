package turns_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// botFunc is a Bot made of a function.
type botFunc func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error

func (f botFunc) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	return f(ctx, in, out)
}

// echoText answers a text message with "echo <text>".
func echoText(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	var p struct{ Text string }
	_ = json.Unmarshal(in.Message.Payload, &p)
	b, _ := json.Marshal(map[string]string{"type": "text", "text": "echo " + p.Text})
	_, err := out.CreateMessage(ctx, turns.OutgoingMessage{Payload: b})
	return err
}

// countingCommitter counts the writes committed through it.
type countingCommitter struct {
	store.Committer
	n atomic.Int64
}

func (c *countingCommitter) Commit(ctx context.Context, w *store.Write) error {
	c.n.Add(1)
	return c.Committer.Commit(ctx, w)
}

func (c *countingCommitter) Submit(ctx context.Context, w *store.Write) func() error {
	c.n.Add(1)
	return c.Committer.Submit(ctx, w)
}

// foldFixture is a node whose Chat API folds users' messages through its
// dispatcher (started), on SQLite, with the commits counted.
type foldFixture struct {
	*chatFixture
	db      store.DB
	commits *countingCommitter
	queue   *turns.Queue
	reads   *atomic.Int64 // the dispatcher's reads of an idle turn's start
	conv    string
	// skip is how many of the conversation's first messages and signals
	// texts and signalTexts leave out (warm's).
	skip int
}

// foldEngines runs test on SQLite, and on PostgreSQL with leases, where
// the fixture's conversation has had a first message (warm) that left
// its lease parked, for the test's to fold under; texts and signalTexts
// leave it out.
func foldEngines(t *testing.T, test func(t *testing.T, newFixture func(bot turns.Bot, o turns.DispatcherOptions) *foldFixture)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, func(bot turns.Bot, o turns.DispatcherOptions) *foldFixture { return newFoldFixture(t, bot, o) })
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, func(bot turns.Bot, o turns.DispatcherOptions) *foldFixture {
			o.Leases, o.LeaseTTL, o.Node = true, 10*time.Second, "n1"
			f := newFoldFixtureOn(t, testdb.Postgres(t), bot, o, nil)
			f.warm(t)
			f.skip = 2
			return f
		})
	})
}

// startReads is a store whose reads of an idle turn's start are counted.
type startReads struct {
	store.Store
	n *atomic.Int64
}

func (s startReads) States() store.States { return countedStates{s.Store.States(), s.n} }

type countedStates struct {
	store.States
	n *atomic.Int64
}

func (s countedStates) GetIdleTurn(ctx context.Context, botID, userID, conversationID string) (store.IdleTurn, error) {
	s.n.Add(1)
	return s.States.GetIdleTurn(ctx, botID, userID, conversationID)
}

func newFoldFixture(t *testing.T, bot turns.Bot, o turns.DispatcherOptions) *foldFixture {
	t.Helper()
	return newFoldFixtureWith(t, bot, o, nil)
}

// newFoldFixtureWith is newFoldFixture with, unless nil, a wrapper of the
// committer (inside the counting one).
func newFoldFixtureWith(t *testing.T, bot turns.Bot, o turns.DispatcherOptions, wrap func(store.Committer) store.Committer) *foldFixture {
	t.Helper()
	return newFoldFixtureOn(t, testdb.SQLite(t), bot, o, wrap)
}

// newFoldFixtureOn is newFoldFixtureWith on db, with before run before
// the dispatcher starts. With leases, the
// dispatcher keeps a lease parked for 5 s after its run (not 300 ms), so
// that a slow machine does not let it go between a test's messages.
func newFoldFixtureOn(t *testing.T, db store.DB, bot turns.Bot, o turns.DispatcherOptions, wrap func(store.Committer) store.Committer, before ...func(*foldFixture)) *foldFixture {
	t.Helper()
	queue := turns.NewQueue()
	var inner store.Committer = db.NewCommitter(queue.AfterCommit(nil))
	if wrap != nil {
		inner = wrap(inner)
	}
	commit := &countingCommitter{Committer: inner}
	resolver := func(context.Context, string) (turns.Bot, error) { return bot, nil }
	reads := &atomic.Int64{}
	n := &node{chat: conversations.NewChat(db, commit, nopStreams{}, nil, queue),
		dispatcher: turns.NewDispatcher(startReads{db, reads}, commit, queue, resolver, slog.Default(), o)}
	f := &foldFixture{chatFixture: newChatFixtureOn(t, db, n), db: db, commits: commit, queue: queue, reads: reads}
	conv, err := f.chat.CreateConversation(context.Background(), f.caller, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.conv = conv.ID
	if o.Leases {
		turns.SetLeaseLinger(f.dispatcher, 5*time.Second)
	}
	for _, b := range before {
		b(f)
	}
	f.dispatcher.Start(context.Background())
	t.Cleanup(f.dispatcher.Stop)
	return f
}

// texts are the conversation's messages' texts, oldest first.
func (f *foldFixture) texts(t *testing.T) []string {
	t.Helper()
	ms, _, err := f.db.Chat().ListMessages(context.Background(), f.botID, f.conv, store.Page{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(ms) - 1 - f.skip; i >= 0; i-- {
		var p struct{ Text string }
		_ = json.Unmarshal(ms[i].Payload, &p)
		out = append(out, p.Text)
	}
	return out
}

func (f *foldFixture) pending(t *testing.T) int {
	t.Helper()
	ts, err := f.db.Signals().PendingTurns(context.Background(), f.botID, f.conv, 10)
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// signalTexts are the texts of the conversation's message_created
// signals, in order.
func (f *foldFixture) signalTexts(t *testing.T) []string {
	t.Helper()
	sigs, err := f.db.Signals().SignalsAfter(context.Background(), f.botID, f.conv, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range sigs[min(f.skip, len(sigs)):] {
		var d struct{ Payload struct{ Text string } }
		_ = json.Unmarshal(s.Data, &d)
		out = append(out, d.Payload.Text)
	}
	return out
}

func eqStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %q, want %q", what, got, want)
		}
	}
}

// TestFoldAnswersWithTheMessage: a foldable bot's answer to a user's
// message is committed with the message, in one commit: when
// createMessage returns, the answer is stored, its signal follows the
// message's, the turn is done and its run recorded.
func TestFoldAnswersWithTheMessage(t *testing.T) {
	obs := &countingObserver{}
	f := newFoldFixture(t, turns.FoldableBot(botFunc(echoText)), turns.DispatcherOptions{FoldWithin: 10 * time.Second, Observer: obs})
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
	if turns, failed := f.runs(t); turns != 3 || failed != 0 {
		t.Fatalf("turn runs recorded: %d, %d failed; want 3, none failed", turns, failed)
	}
	if n := obs.ran.Load(); n != 3 {
		t.Fatalf("the observer was told of %d turns, want 3", n)
	}
}

// countingObserver counts the turns a dispatcher reports.
type countingObserver struct{ ran atomic.Int64 }

func (o *countingObserver) TurnRan(time.Duration, bool) { o.ran.Add(1) }
func (o *countingObserver) RunWaited(time.Duration)     {}

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
	ctx := context.Background()
	m := &model.Message{BotID: f.botID, ID: model.NewID(), ConversationID: f.conv, UserID: "u1",
		Payload: json.RawMessage(`{"type":"text","text":"earlier"}`), Direction: model.DirectionIncoming, CreatedAt: model.Now()}
	if err := f.db.InTx(ctx, func(tx store.Store) error {
		if err := tx.Chat().CreateMessage(ctx, m); err != nil {
			return err
		}
		return tx.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.botID, ConversationID: f.conv, Kind: model.TurnMessage, RefID: m.ID, UserID: "u1"})
	}); err != nil {
		t.Fatal(err)
	}
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

// TestFoldKeptStart: a folded turn that changed none of what it started
// with leaves that start for the conversation's next message, which folds
// without reading it; a change made meanwhile by anything else (a state
// set, a handoff) is found in the commit's transaction, and the turn runs
// again from the store instead; another user's message reads its own.
func TestFoldKeptStart(t *testing.T) {
	// The bot answers with the conversation's state it started with, and
	// changes nothing.
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		text, err := echoWithState(ctx, in, out)
		if err == nil && text == "help" {
			err = out.RequestHandoff(ctx, in.ConversationID, "asked")
		}
		turns.KeepStart(out)
		return err
	})
	for _, tc := range []struct {
		name      string
		between   func(t *testing.T, f *foldFixture)
		reads     int64  // the second message's reads of its start
		commits   int64  // and commits
		answer    string // the second message's answer ("": none)
		otherUser bool
		first     string // the first message ("a" unless set)
	}{
		{name: "nothing changed", reads: 0, commits: 1, answer: "echo b none"},
		{name: "state set", between: func(t *testing.T, f *foldFixture) {
			if err := f.db.States().Put(context.Background(), f.botID, store.ScopeConversation, f.conv, json.RawMessage(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
		}, reads: 0, commits: 2, answer: `echo b {"n":1}`},
		{name: "handoff", between: func(t *testing.T, f *foldFixture) {
			if _, err := f.db.Handoffs().Request(context.Background(), &model.Handoff{BotID: f.botID, ConversationID: f.conv,
				Status: model.HandoffWaiting, RequestedBy: "test", RequestedAt: model.Now()}); err != nil {
				t.Fatal(err)
			}
		}, reads: 0, commits: 2},
		{name: "another user", otherUser: true, reads: 1, commits: 1, answer: "echo b none"},
		// A turn that asked for a human keeps no start: the next message
		// reads that the conversation is in handoff.
		{name: "handoff asked by the turn", first: "help", reads: 1, commits: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			foldEngines(t, func(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
				f := newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
				first := cmp.Or(tc.first, "a")
				f.post(t, f.conv, first)
				if n := f.reads.Load(); n != 1 {
					t.Fatalf("the first message read its start %d times, want 1", n)
				}
				if tc.between != nil {
					tc.between(t, f)
				}
				if tc.otherUser {
					f.chatFixture = f.otherCaller(t, f.conv)
				}
				reads, commits := f.reads.Load(), f.commits.n.Load()
				f.post(t, f.conv, "b")
				want := []string{first, "echo " + first + " none", "b"}
				if tc.answer != "" {
					want = append(want, tc.answer)
				}
				waitUntil(t, "the second turn", func() bool { return f.pending(t) == 0 })
				time.Sleep(20 * time.Millisecond) // an answer given twice would show
				eqStrings(t, "messages", f.texts(t), want...)
				if n := f.reads.Load() - reads; n != tc.reads {
					t.Fatalf("the second message read its start %d times, want %d", n, tc.reads)
				}
				if n := f.commits.n.Load() - commits; n != tc.commits {
					t.Fatalf("the second message took %d commits, want %d", n, tc.commits)
				}
			})
		})
	}
}

// otherCaller adds a second user to the conversation and returns the
// fixture acting as that user.
func (f *foldFixture) otherCaller(t *testing.T, conv string) *chatFixture {
	t.Helper()
	ctx := context.Background()
	c := &conversations.Caller{Scope: f.caller.Scope, UserID: "u2"}
	if _, err := f.chat.GetOrCreateUser(ctx, c, conversations.UserInput{}); err != nil {
		t.Fatal(err)
	}
	id := "u2"
	if _, err := f.chat.AddParticipant(ctx, f.caller, conv, &id); err != nil {
		t.Fatal(err)
	}
	return &chatFixture{node: f.node, botID: f.botID, caller: c}
}

// TestFoldKeptStartWithStates: a folded turn that changed only its states
// leaves its start with those states for the next message, which folds
// without reading and starts from them.
func TestFoldKeptStartWithStates(t *testing.T) {
	foldEngines(t, testFoldKeptStartWithStates)
}

func testFoldKeptStartWithStates(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
	var botID string
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		text, err := echoWithState(ctx, in, out)
		if err != nil {
			return err
		}
		next, _ := json.Marshal(map[string]string{"last": text})
		out.WithLocalCompletion(func(ctx context.Context, tx store.Store) error {
			return tx.States().Put(ctx, botID, store.ScopeConversation, in.ConversationID, next)
		})
		turns.KeepStartWith(out, nil, next, nil)
		return nil
	})
	f := newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	botID = f.botID
	for _, text := range []string{"a", "b", "c"} {
		commits := f.commits.n.Load()
		f.post(t, f.conv, text)
		if n := f.commits.n.Load() - commits; n != 1 {
			t.Fatalf("message %q took %d commits, want 1", text, n)
		}
	}
	eqStrings(t, "messages", f.texts(t), "a", "echo a none", "b", `echo b {"last":"a"}`, "c", `echo c {"last":"b"}`)
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("the messages read their start %d times, want once (the first)", n)
	}
}

// echoWithState answers a text message with "echo <text> <the
// conversation's state the turn started with>" and returns the text.
func echoWithState(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) (string, error) {
	var p struct{ Text string }
	_ = json.Unmarshal(in.Message.Payload, &p)
	state := "none"
	if st := turns.StartOf(in); st != nil && st.ConvState != nil {
		state = string(st.ConvState)
	}
	b, _ := json.Marshal(map[string]string{"type": "text", "text": "echo " + p.Text + " " + state})
	_, err := out.CreateMessage(ctx, turns.OutgoingMessage{Payload: b})
	return p.Text, err
}
