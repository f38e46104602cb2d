package turns_test

// The Fold with leases (several nodes on PostgreSQL): a message folds where
// this node holds its conversation's lease, parked by the last run.

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// leasedFold is a fold fixture on PostgreSQL with leases, node "n1".
func leasedFold(t *testing.T, bot turns.Bot, o turns.DispatcherOptions, before ...func(*foldFixture)) *foldFixture {
	t.Helper()
	o.Leases, o.LeaseTTL, o.Node = true, 10*time.Second, "n1"
	return newFoldFixtureOn(t, testdb.Postgres(t), turns.FoldableBot(bot), o, nil, before...)
}

func (f *foldFixture) ref() model.ConversationRef {
	return model.ConversationRef{BotID: f.botID, ConversationID: f.conv}
}

// warm sends a first message, which does not fold (no lease is parked
// yet: the queue's run takes it), and waits for its answer and the lease
// parked after that run.
func (f *foldFixture) warm(t *testing.T) {
	t.Helper()
	before := f.commits.n.Load()
	f.post(t, f.conv, "warm")
	waitUntil(t, "the first answer", func() bool { return len(f.texts(t)) == 2 })
	if n := f.commits.n.Load() - before; n != 2 {
		t.Fatalf("the first message took %d commits, want 2 (no lease to fold under)", n)
	}
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

// TestFoldWithLease: where the node holds the conversation's lease parked,
// a message and its answer commit in one fenced commit; the lease stays
// this node's, parked again.
func TestFoldWithLease(t *testing.T) {
	obs := &countingObserver{}
	f := leasedFold(t, botFunc(echoText), turns.DispatcherOptions{FoldWithin: 10 * time.Second, Observer: obs})
	f.warm(t)
	for i, text := range []string{"a", "b"} {
		before := f.commits.n.Load()
		f.post(t, f.conv, text)
		if n := f.commits.n.Load() - before; n != 1 {
			t.Fatalf("message %d took %d commits, want 1", i, n)
		}
	}
	eqStrings(t, "messages once createMessage returned", f.texts(t), "warm", "echo warm", "a", "echo a", "b", "echo b")
	eqStrings(t, "signals", f.signalTexts(t), "warm", "echo warm", "a", "echo a", "b", "echo b")
	if n := f.pending(t); n != 0 {
		t.Fatalf("%d turns pending", n)
	}
	if turns, failed := f.runs(t); turns != 3 || failed != 0 {
		t.Fatalf("turn runs recorded: %d, %d failed; want 3, none failed", turns, failed)
	}
	if !turns.Parked(f.dispatcher, f.ref()) {
		t.Fatal("the lease is not parked after the folds")
	}
	// Still this node's lease: another node cannot take it.
	if _, ok, err := f.db.Leases().Take(context.Background(), "turns:"+f.botID+":"+f.conv, "n2", time.Second); err != nil || ok {
		t.Fatalf("another node took the lease (%v, %v)", ok, err)
	}
}

// TestFoldWithLeaseTurnInBetween: a turn enqueued while the bot answered
// comes first. PostgreSQL numbers the message's turn only at the commit,
// so the server refuses the folded answer (store.ErrTurnBetween) and the
// group commit stores the message alone; the dispatcher runs both turns in
// order.
func TestFoldWithLeaseTurnInBetween(t *testing.T) {
	var db store.DB
	rec := &recorder{}
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if rec.add(in) == "first" && len(rec.turns()) == 2 {
			e := &model.Event{BotID: in.BotID, ID: model.NewID(), ConversationID: in.ConversationID, UserID: in.UserID,
				Type: "custom", Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
			if err := db.InTx(ctx, func(tx store.Store) error {
				if err := tx.Chat().CreateEvent(ctx, e); err != nil {
					return err
				}
				return tx.Signals().EnqueueTurn(ctx, &model.Turn{BotID: in.BotID, ConversationID: in.ConversationID,
					Kind: model.TurnEvent, RefID: e.ID, UserID: in.UserID, CreatedAt: e.CreatedAt})
			}); err != nil {
				return err
			}
		}
		if in.Message == nil {
			return nil
		}
		return echoText(ctx, in, out)
	})
	f := leasedFold(t, bot, turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	db = f.db
	f.warm(t)
	f.post(t, f.conv, "first")
	waitUntil(t, "both turns", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == 4 })
	time.Sleep(50 * time.Millisecond) // a further run would answer again
	eqStrings(t, "turns run", rec.turns(), "warm", "first", "event", "first")
	eqStrings(t, "messages", f.texts(t), "warm", "echo warm", "first", "echo first")
}

// TestFoldWithLeaseFenced: the lease moved to another node while the bot
// answered: the folded commit is fenced off, the message is stored alone
// (createMessage succeeds), its answer is not; the turn stays pending for
// the lease's holder and runs once, here, when that node lets it go.
func TestFoldWithLeaseFenced(t *testing.T) {
	var db store.DB
	var name string
	rec := &recorder{}
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if rec.add(in) == "taken" && len(rec.turns()) == 2 {
			// Another node takes the lease over.
			if err := db.Leases().Release(ctx, name, "n1"); err != nil {
				return err
			}
			if _, ok, err := db.Leases().Take(ctx, name, "n2", time.Minute); err != nil || !ok {
				t.Errorf("n2 could not take the lease (%v, %v)", ok, err)
			}
		}
		return echoText(ctx, in, out)
	})
	f := leasedFold(t, bot, turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: 50 * time.Millisecond})
	db, name = f.db, "turns:"+f.botID+":"+f.conv
	f.warm(t)
	f.post(t, f.conv, "taken")
	eqStrings(t, "messages once createMessage returned", f.texts(t), "warm", "echo warm", "taken")
	if n := f.pending(t); n != 1 {
		t.Fatalf("%d turns pending, want the fenced one", n)
	}
	time.Sleep(200 * time.Millisecond) // n2 holds it: nothing runs here
	eqStrings(t, "turns run while n2 holds the lease", rec.turns(), "warm", "taken")
	if err := db.Leases().Release(context.Background(), name, "n2"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the answer once n2 let go", func() bool { return f.pending(t) == 0 && len(f.texts(t)) == 4 })
	time.Sleep(50 * time.Millisecond)
	eqStrings(t, "messages", f.texts(t), "warm", "echo warm", "taken", "echo taken")
	eqStrings(t, "turns run", rec.turns(), "warm", "taken", "taken")
}

// TestFoldWaitsForTheRunsLastTurn: a message that comes while its
// conversation's run ends its one pending turn (a message that did not
// fold) waits for that run, then folds: its answer is stored when
// createMessage returns. On SQLite, and on PostgreSQL under the lease
// that run took and parked.
func TestFoldWaitsForTheRunsLastTurn(t *testing.T) {
	for _, leases := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[leases]
		t.Run(name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			rec := &recorder{}
			bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				if rec.add(in) == "first" {
					close(started)
					<-release
				}
				return echoText(ctx, in, out)
			})
			// "first" is stored with its turn before the dispatcher
			// starts, which finds it pending and runs it, as a message
			// that did not fold (no sweep after that: it would notify it
			// again, and the run would go on).
			o := turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: time.Hour}
			storeFirst := func(f *foldFixture) {
				ctx := context.Background()
				m := &model.Message{BotID: f.botID, ID: model.NewID(), ConversationID: f.conv, UserID: "u1",
					Payload: json.RawMessage(`{"type":"text","text":"first"}`), Direction: model.DirectionIncoming, CreatedAt: model.Now()}
				if err := f.db.InTx(ctx, func(tx store.Store) error {
					if err := tx.Chat().CreateMessage(ctx, m); err != nil {
						return err
					}
					return tx.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.botID, ConversationID: f.conv, Kind: model.TurnMessage, RefID: m.ID, UserID: "u1"})
				}); err != nil {
					t.Fatal(err)
				}
			}
			var f *foldFixture
			if leases {
				f = leasedFold(t, bot, o, storeFirst)
			} else {
				f = newFoldFixtureOn(t, testdb.SQLite(t), turns.FoldableBot(bot), o, nil, storeFirst)
			}
			<-started
			before := f.commits.n.Load()
			done := make(chan []string)
			go func() {
				f.post(t, f.conv, "second")
				done <- f.texts(t)
			}()
			select {
			case <-done:
				close(release)
				t.Fatal("createMessage returned while the run's last turn had not ended")
			case <-time.After(100 * time.Millisecond):
			}
			close(release)
			// "second" was sent before "first" was answered: its time is
			// earlier (model.MessageTime), its signal after the answer's.
			eqStrings(t, "messages once createMessage returned", <-done, "first", "second", "echo first", "echo second")
			eqStrings(t, "signals", f.signalTexts(t), "echo first", "second", "echo second") // "first" was stored without one
			if n := f.commits.n.Load() - before; n != 2 {
				t.Fatalf("%d commits, want 2 (the first's completion, the second with its answer)", n)
			}
			eqStrings(t, "turns run", rec.turns(), "first", "second")
		})
	}
}

// localWrites records, for each write with a Then it commits, whether it
// was Local.
type localWrites struct {
	store.Committer
	mu    sync.Mutex
	local []bool
}

func (c *localWrites) Commit(ctx context.Context, w *store.Write) error {
	c.record(w)
	return c.Committer.Commit(ctx, w)
}

func (c *localWrites) Submit(ctx context.Context, w *store.Write) func() error {
	c.record(w)
	return c.Committer.Submit(ctx, w)
}

func (c *localWrites) record(w *store.Write) {
	if w.Then != nil {
		c.mu.Lock()
		c.local = append(c.local, w.Local)
		c.mu.Unlock()
	}
}

// TestFoldWithLeaseNotLocal: a folded answer whose completion changes more
// than its conversation's rows (a user's state, the bot's) makes the
// message's write not Local, so PostgreSQL's group commit commits it in a
// transaction of its own (two batches side by side never take those rows
// in different orders); an answer that changes only its conversation's
// rows keeps it Local.
func TestFoldWithLeaseNotLocal(t *testing.T) {
	rec := &localWrites{}
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		if p.Text == "shared" {
			out.WithCompletion(func(context.Context, store.Store) error { return nil })
		}
		return echoText(ctx, in, out)
	})
	o := turns.DispatcherOptions{FoldWithin: 10 * time.Second, Leases: true, LeaseTTL: 10 * time.Second, Node: "n1"}
	f := newFoldFixtureOn(t, testdb.Postgres(t), turns.FoldableBot(bot), o, func(c store.Committer) store.Committer {
		rec.Committer = c
		return rec
	})
	f.warm(t)
	f.post(t, f.conv, "own")
	f.post(t, f.conv, "shared")
	eqStrings(t, "messages", f.texts(t), "warm", "echo warm", "own", "echo own", "shared", "echo shared")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.local) != 2 || !rec.local[0] || rec.local[1] {
		t.Fatalf("folded writes Local = %v, want [true false]", rec.local)
	}
}

// TestFoldKeptStartDroppedByARun: a start a folded turn kept is dropped
// once a worker runs the conversation (here an event's turn): its last
// turn's number is stale then, and the next message reads its start and
// folds, in one commit, instead of failing the number's check.
func TestFoldKeptStartDroppedByARun(t *testing.T) {
	foldEngines(t, func(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
		bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
			if in.Message == nil {
				return nil // the event
			}
			_, err := echoWithState(ctx, in, out)
			turns.KeepStart(out)
			return err
		})
		f := newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
		f.post(t, f.conv, "a")
		ctx := context.Background()
		e := &model.Event{BotID: f.botID, ID: model.NewID(), ConversationID: f.conv, UserID: "u1",
			Type: "custom", Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
		if err := f.db.InTx(ctx, func(tx store.Store) error {
			if err := tx.Chat().CreateEvent(ctx, e); err != nil {
				return err
			}
			return tx.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.botID, ConversationID: f.conv, Kind: model.TurnEvent, RefID: e.ID, UserID: "u1"})
		}); err != nil {
			t.Fatal(err)
		}
		f.queue.Notify(f.ref())
		waitUntil(t, "the event's turn", func() bool { return f.pending(t) == 0 })
		reads, commits := f.reads.Load(), f.commits.n.Load()
		f.post(t, f.conv, "b")
		eqStrings(t, "messages once createMessage returned", f.texts(t), "a", "echo a none", "b", "echo b none")
		if n := f.commits.n.Load() - commits; n != 1 {
			t.Fatalf("the message after the run took %d commits, want 1", n)
		}
		if n := f.reads.Load() - reads; n != 1 {
			t.Fatalf("the message after the run read its start %d times, want 1", n)
		}
	})
}

// gatedCommitter holds back the commit of a message write without Then
// whose signal holds text until open is closed.
type gatedCommitter struct {
	store.Committer
	text string
	open chan struct{}
}

func (c *gatedCommitter) Commit(ctx context.Context, w *store.Write) error {
	if w.Then == nil && w.Signal != nil && strings.Contains(string(w.Signal.Data), `"text":"`+c.text+`"`) {
		<-c.open
	}
	return c.Committer.Commit(ctx, w)
}

// TestFoldWaitsForAMessageBeingStored: while a message that could not
// fold is being committed on its own, its conversation is not claimed by
// the next message (which would read a last turn number about to be
// stale, and answer before the message sent earlier): that one waits for
// it, and for its turn's run, then folds.
func TestFoldWaitsForAMessageBeingStored(t *testing.T) {
	releaseA := make(chan struct{})
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		if p.Text == "a" {
			<-releaseA
		}
		return echoText(ctx, in, out)
	})
	gate := &gatedCommitter{text: "b", open: make(chan struct{})}
	// FoldWithin bounds how long c waits: longer than b is held.
	f := newFoldFixtureWith(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: time.Second}, func(c store.Committer) store.Committer {
		gate.Committer = c
		return gate
	})
	// "a" commits alone past FoldWithin; its fold holds the conversation
	// while its turn runs.
	f.post(t, f.conv, "a")
	bDone := make(chan struct{})
	go func() { f.post(t, f.conv, "b"); close(bDone) }() // commits on its own, held at the gate
	time.Sleep(100 * time.Millisecond)
	close(releaseA)
	waitUntil(t, "the answer to a", func() bool { return len(f.signalTexts(t)) == 2 })
	cDone := make(chan []string)
	go func() { f.post(t, f.conv, "c"); cDone <- f.signalTexts(t) }()
	select {
	case <-cDone:
		close(gate.open)
		t.Fatal("c was stored while b was being stored")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate.open)
	<-bDone
	// c folded once b's turn ran: its answer was there when it returned.
	eqStrings(t, "signals once c was stored", <-cDone, "a", "echo a", "b", "echo b", "c", "echo c")
}

// TestFoldAloneWaitsForTheFoldsMessage: a message that does not fold
// (here: a turn was notified for its conversation meanwhile) is submitted
// after the message of the Fold holding its conversation, not before it:
// it is stored after the message sent before it, and its turn is numbered
// after that one's.
func TestFoldAloneWaitsForTheFoldsMessage(t *testing.T) {
	started, releaseA := make(chan struct{}), make(chan struct{})
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if in.Message == nil {
			return nil // the event
		}
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		if p.Text == "a" {
			select {
			case <-started:
			default:
				close(started)
			}
			<-releaseA
		}
		return echoText(ctx, in, out)
	})
	f := newFoldFixture(t, turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	aDone := make(chan struct{})
	go func() { f.post(t, f.conv, "a"); close(aDone) }()
	<-started
	// A turn of the conversation is notified while a's fold holds it.
	ctx := context.Background()
	e := &model.Event{BotID: f.botID, ID: model.NewID(), ConversationID: f.conv, UserID: "u1",
		Type: "custom", Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
	if err := f.db.InTx(ctx, func(tx store.Store) error {
		if err := tx.Chat().CreateEvent(ctx, e); err != nil {
			return err
		}
		return tx.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.botID, ConversationID: f.conv, Kind: model.TurnEvent, RefID: e.ID, UserID: "u1"})
	}); err != nil {
		t.Fatal(err)
	}
	f.queue.Notify(f.ref())
	bDone := make(chan struct{})
	go func() { f.post(t, f.conv, "b"); close(bDone) }()
	select {
	case <-bDone:
		close(releaseA)
		t.Fatal("b was stored before a, which was sent first")
	case <-time.After(100 * time.Millisecond):
	}
	close(releaseA)
	<-aDone
	<-bDone
	waitUntil(t, "every answer", func() bool { return f.pending(t) == 0 && len(f.signalTexts(t)) == 4 })
	eqStrings(t, "signals", f.signalTexts(t), "a", "b", "echo a", "echo b")
}
