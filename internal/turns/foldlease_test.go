package turns_test

// The Fold with leases (several nodes on PostgreSQL): a message folds where
// this node holds its conversation's lease, parked by the last run.

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// TestFoldWithLease: a message folded under the lease its conversation's
// last run parked (TestFoldAnswersWithTheMessage counts its one commit)
// leaves that lease this node's, parked again.
func TestFoldWithLease(t *testing.T) {
	f := leasedFold(t, botFunc(echoText), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	f.warm(t)
	before := f.commits.n.Load()
	f.post(t, f.conv, "a")
	if n := f.commits.n.Load() - before; n != 1 {
		t.Fatalf("the message took %d commits, want 1", n)
	}
	if !turns.Parked(f.dispatcher, f.ref()) {
		t.Fatal("the lease is not parked after the fold")
	}
	// Still this node's lease: another node cannot take it.
	if _, ok, err := f.db.Leases().Take(context.Background(), "turns:"+f.botID+":"+f.conv, "n2", time.Second); err != nil || ok {
		t.Fatalf("another node took the lease (%v, %v)", ok, err)
	}
}

// TestFoldTakesTheLease: a conversation's first message, with no lease
// parked, folds under the lease it takes (one commit, its answer stored
// when createMessage returns), and leaves that lease parked; where another
// node holds the lease, the message commits alone at once and its turn
// waits for that node to let go.
func TestFoldTakesTheLease(t *testing.T) {
	for _, heldElsewhere := range []bool{false, true} {
		name := map[bool]string{false: "free", true: "held elsewhere"}[heldElsewhere]
		t.Run(name, func(t *testing.T) {
			obs := &countingObserver{}
			rec := &recorder{}
			bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
				rec.add(in)
				return echoText(ctx, in, out)
			})
			f := leasedFold(t, bot, turns.DispatcherOptions{FoldWithin: 10 * time.Second, Sweep: 50 * time.Millisecond, Observer: obs})
			lease := "turns:" + f.botID + ":" + f.conv
			ctx := context.Background()
			if heldElsewhere {
				if _, ok, err := f.db.Leases().Take(ctx, lease, "n2", time.Minute); err != nil || !ok {
					t.Fatalf("n2 could not take the lease (%v, %v)", ok, err)
				}
			}
			before := f.commits.n.Load()
			f.post(t, f.conv, "first")
			if n := f.commits.n.Load() - before; n != 1 {
				t.Fatalf("the first message took %d commits, want 1", n)
			}
			if !heldElsewhere {
				eqStrings(t, "how the message committed", obs.storedSince(0), "folded")
				eqStrings(t, "messages once createMessage returned", f.texts(t), "first", "echo first")
				if !turns.Parked(f.dispatcher, f.ref()) {
					t.Fatal("the lease is not parked after the fold")
				}
				if _, ok, err := f.db.Leases().Take(ctx, lease, "n2", time.Second); err != nil || ok {
					t.Fatalf("another node took the lease (%v, %v)", ok, err)
				}
				return
			}
			eqStrings(t, "how the message committed", obs.storedSince(0), turns.AloneLease)
			eqStrings(t, "messages once createMessage returned", f.texts(t), "first")
			f.runsOnceN2LetsGo(t, lease, rec, nil, "first", "echo first")
		})
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
	f.runsOnceN2LetsGo(t, name, rec, []string{"warm", "taken"}, "warm", "echo warm", "taken", "echo taken")
}

// localWrites records, for each write with a Then it commits, whether it
// was Local, and the states it shares.
type localWrites struct {
	store.Committer
	mu     sync.Mutex
	local  []bool
	shared [][]store.StateKey
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
		c.shared = append(c.shared, w.SharedStates)
		c.mu.Unlock()
	}
}

// TestFoldWithLeaseNotLocal: a folded answer whose completion changes more
// than its conversation's rows (an issue) makes the message's write not
// Local, so PostgreSQL's group commit commits it in a transaction of its
// own (two batches side by side never take those rows in different
// orders); one whose completion changes a user's state lists it
// (SharedStates: batched, locked first); an answer that changes only its
// conversation's rows keeps it Local.
func TestFoldWithLeaseNotLocal(t *testing.T) {
	rec := &localWrites{}
	userState := []store.StateKey{{BotID: "b", Scope: store.ScopeUser, OwnerID: "u"}}
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		var p struct{ Text string }
		_ = json.Unmarshal(in.Message.Payload, &p)
		switch p.Text {
		case "shared":
			out.WithCompletion(func(context.Context, store.Store) error { return nil })
		case "states":
			out.WithStatesCompletion(userState, func(context.Context, store.Store) error { return nil })
		}
		return echoText(ctx, in, out)
	})
	o := turns.DispatcherOptions{FoldWithin: 10 * time.Second, Leases: true, LeaseTTL: 10 * time.Second, Node: "n1"}
	f := newFoldFixtureOn(t, testdb.Postgres(t), turns.FoldableBot(bot), o, func(c store.Committer) store.Committer {
		rec.Committer = c
		return rec
	})
	f.warm(t)
	rec.mu.Lock()
	rec.local, rec.shared = nil, nil // the first message's, folded under the lease it took
	rec.mu.Unlock()
	f.post(t, f.conv, "own")
	f.post(t, f.conv, "shared")
	f.post(t, f.conv, "states")
	eqStrings(t, "messages", f.texts(t), "warm", "echo warm", "own", "echo own", "shared", "echo shared", "states", "echo states")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.local, []bool{true, false, false}) {
		t.Fatalf("folded writes Local = %v, want [true false false]", rec.local)
	}
	if len(rec.shared) != 3 || rec.shared[0] != nil || rec.shared[1] != nil || !slices.Equal(rec.shared[2], userState) {
		t.Fatalf("folded writes SharedStates = %v, want [[] [] %v]", rec.shared, userState)
	}
}
