package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// testWriteThenChecks: a message write with Then (a folded answer) under
// a lease's fence, through the group commit (pipelined on PostgreSQL,
// where a check that fails fails the whole transaction, and the write
// runs again without Then): a fence that holds commits both and renews
// the lease; a stale one commits nothing (ErrFenced); another turn in
// between commits the message alone; a missing conversation is not
// found.
func testWriteThenChecks(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	newConv(t, db, f.bot.ID, "c1", "u1", 0)
	cm := db.NewCommitter(nil)
	leases := db.Leases()
	l1, got, err := leases.Take(ctx, "conv:c1", "n1", 150*time.Millisecond)
	ok(t, err)
	if !got {
		t.Fatal("lease not taken")
	}
	fence := &store.Fence{Name: "conv:c1", Holder: "n1", Epoch: l1.Epoch, Renew: time.Minute}

	var last int64 // the conversation's last turn number
	n := 0
	write := func(conv string, fence *store.Fence, thenSeq int64) (*store.Write, *model.Message, *model.Message) {
		n++
		w, m, r := foldedWrite(f.bot.ID, conv, n, thenSeq)
		w.Fence = fence
		return w, m, r
	}
	stored := func(m *model.Message) bool {
		t.Helper()
		_, err := db.Chat().GetMessage(ctx, f.bot.ID, m.ID)
		if err != nil && !model.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	// The fence holds: both commit, the turn completed, the lease renewed
	// past its 150 ms.
	w, m, r := write("c1", fence, last+1)
	ok(t, cm.Commit(ctx, w))
	if !w.ThenRan() || !stored(m) || !stored(r) {
		t.Fatalf("fence held: Then ran %v, message %v, answer %v", w.ThenRan(), stored(m), stored(r))
	}
	last = w.Turn.Seq
	time.Sleep(300 * time.Millisecond)
	if _, got, err := leases.Take(ctx, "conv:c1", "n2", time.Minute); err != nil || got {
		t.Fatalf("the lease was not renewed by the fenced write: taken by another (%v, %v)", got, err)
	}

	// Another turn in between: the message commits alone, its turn
	// pending after the other.
	ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnEvent, RefID: "e"}))
	w, m, r = write("c1", fence, last+1)
	ok(t, cm.Commit(ctx, w))
	if w.ThenRan() || !stored(m) || stored(r) {
		t.Fatalf("turn between: Then ran %v, message %v, answer %v", w.ThenRan(), stored(m), stored(r))
	}
	pending, err := db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	if len(pending) != 2 || pending[1].Seq != w.Turn.Seq || w.Turn.Seq != last+2 {
		t.Fatalf("pending = %+v (the message's turn %d), want the other's and the message's", pending, w.Turn.Seq)
	}
	for _, p := range pending {
		ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", p.Seq))
	}
	last = w.Turn.Seq

	// The lease taken over: nothing commits.
	ok(t, leases.Release(ctx, "conv:c1", "n1"))
	if _, got, err := leases.Take(ctx, "conv:c1", "n2", time.Minute); err != nil || !got {
		t.Fatalf("take over: %v, %v", got, err)
	}
	w, m, r = write("c1", fence, last+1)
	if err := cm.Commit(ctx, w); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale fence: %v, want ErrFenced", err)
	}
	if stored(m) || stored(r) {
		t.Fatal("a fenced write stored its message")
	}

	// No such conversation: not found, nothing stored.
	l2, _, err := leases.Take(ctx, "conv:gone", "n1", time.Minute)
	ok(t, err)
	w, m, _ = write("gone", &store.Fence{Name: "conv:gone", Holder: "n1", Epoch: l2.Epoch}, 1)
	if err := cm.Commit(ctx, w); !model.IsNotFound(err) {
		t.Fatalf("missing conversation: %v, want not found", err)
	}
	if stored(m) {
		t.Fatal("a message of a missing conversation was stored")
	}
}
