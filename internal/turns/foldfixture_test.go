package turns_test

// The fold tests' fixture: a node whose Chat API folds users' messages,
// on SQLite or on PostgreSQL with leases.

import (
	"context"
	"encoding/json"
	"fmt"
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
			f := leasedFixture(t, bot, o)
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
	n := &node{chat: conversations.NewChat(db, commit, nopStreams{}, nil, queue, nil),
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

func (f *foldFixture) ref() model.ConversationRef {
	return model.ConversationRef{BotID: f.botID, ConversationID: f.conv}
}

// warm sends a first message (which folds where the bot's turn allows it,
// taking the conversation's lease: TestFoldTakesTheLease), and waits for
// its answer and the lease parked after its run.
func (f *foldFixture) warm(t *testing.T) {
	t.Helper()
	f.post(t, f.conv, "warm")
	waitUntil(t, "the first answer", func() bool { return len(f.texts(t)) == 2 })
	waitUntil(t, "the lease parked", func() bool { return turns.Parked(f.dispatcher, f.ref()) })
}

// recorder records the turns a bot ran, by their message's text ("event"
// for an event turn).
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) add(in *turns.TurnInput) string {
	kind := "event"
	if in.Message != nil {
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		kind = p.Text
	}
	r.mu.Lock()
	r.ran = append(r.ran, kind)
	r.mu.Unlock()
	return kind
}

func (r *recorder) turns() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ran...)
}

// leasedFold is a fold fixture on PostgreSQL with leases, node "n1", for
// bot made foldable.
func leasedFold(t *testing.T, bot turns.Bot, o turns.DispatcherOptions, before ...func(*foldFixture)) *foldFixture {
	t.Helper()
	return leasedFixture(t, turns.FoldableBot(bot), o, before...)
}

// leasedFixture is leasedFold for a bot as it is.
func leasedFixture(t *testing.T, bot turns.Bot, o turns.DispatcherOptions, before ...func(*foldFixture)) *foldFixture {
	t.Helper()
	o.Leases, o.LeaseTTL, o.Node = true, 10*time.Second, "n1"
	return newFoldFixtureOn(t, testdb.Postgres(t), bot, o, nil, before...)
}

// storeMessage stores a message of user u1 with its pending turn, as a
// message committed without a signal (nobody told of it).
func (f *foldFixture) storeMessage(t *testing.T, text string) {
	t.Helper()
	ctx := context.Background()
	m := &model.Message{BotID: f.botID, ID: model.NewID(), ConversationID: f.conv, UserID: "u1",
		Payload: json.RawMessage(fmt.Sprintf(`{"type":"text","text":%q}`, text)), Direction: model.DirectionIncoming, CreatedAt: model.Now()}
	f.storeTurn(t, func(tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) },
		&model.Turn{BotID: f.botID, ConversationID: f.conv, Kind: model.TurnMessage, RefID: m.ID, UserID: "u1"})
}

// storeEvent stores an event of user u1 with its pending turn.
func (f *foldFixture) storeEvent(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	e := &model.Event{BotID: f.botID, ID: model.NewID(), ConversationID: f.conv, UserID: "u1",
		Type: "custom", Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
	f.storeTurn(t, func(tx store.Store) error { return tx.Chat().CreateEvent(ctx, e) },
		&model.Turn{BotID: f.botID, ConversationID: f.conv, Kind: model.TurnEvent, RefID: e.ID, UserID: "u1"})
}

func (f *foldFixture) storeTurn(t *testing.T, create func(tx store.Store) error, turn *model.Turn) {
	t.Helper()
	ctx := context.Background()
	if err := f.db.InTx(ctx, func(tx store.Store) error {
		if err := create(tx); err != nil {
			return err
		}
		return tx.Signals().EnqueueTurn(ctx, turn)
	}); err != nil {
		t.Fatal(err)
	}
}
