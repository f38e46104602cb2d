package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func timeoutKeys(ts []*store.DialogTimeout) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.BotID + "/" + t.ConversationID
	}
	return out
}

func testDialogTimeouts(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		newConv(t, db, f.bot.ID, id, "", 0)
	}
	newConv(t, db, other.ID, "c1", "", 0)
	r := db.DialogTimeouts()
	set := func(botID, conv, user string, i int) {
		t.Helper()
		ok(t, r.Set(ctx, &store.DialogTimeout{BotID: botID, ConversationID: conv, UserID: user, DueAt: at(i)}))
	}
	due := func(i, limit int) []*store.DialogTimeout {
		t.Helper()
		ts, err := r.Due(ctx, at(i), limit)
		ok(t, err)
		return ts
	}

	eq(t, "nothing due", len(due(1000, 10)), 0)
	set(f.bot.ID, "c1", "u1", 30)
	set(f.bot.ID, "c2", "u2", 10)
	set(other.ID, "c1", "u3", 20)
	set(f.bot.ID, "c3", "u4", 100)
	eq(t, "due at 30, earliest first", timeoutKeys(due(30, 10)), []string{f.bot.ID + "/c2", other.ID + "/c1", f.bot.ID + "/c1"})
	eq(t, "limit", timeoutKeys(due(30, 2)), []string{f.bot.ID + "/c2", other.ID + "/c1"})
	eq(t, "limit 3 of 4", timeoutKeys(due(100, 3)), []string{f.bot.ID + "/c2", other.ID + "/c1", f.bot.ID + "/c1"})
	eq(t, "not yet due", timeoutKeys(due(9, 10)), []string{})
	got := due(10, 10)
	eq(t, "fields", *got[0], store.DialogTimeout{BotID: f.bot.ID, ConversationID: "c2", UserID: "u2", DueAt: at(10)})

	// Set replaces (newer activity moves the due time).
	set(f.bot.ID, "c2", "u5", 200)
	eq(t, "moved", timeoutKeys(due(30, 10)), []string{other.ID + "/c1", f.bot.ID + "/c1"})
	eq(t, "moved row", *due(200, 10)[3], store.DialogTimeout{BotID: f.bot.ID, ConversationID: "c2", UserID: "u5", DueAt: at(200)})

	// Claim takes the row only at its current due time, once.
	claim := func(botID, conv string, i int) bool {
		t.Helper()
		got, err := r.Claim(ctx, botID, conv, at(i))
		ok(t, err)
		return got
	}
	eq(t, "claim at an old due time", claim(f.bot.ID, "c2", 10), false)
	eq(t, "claim", claim(f.bot.ID, "c2", 200), true)
	eq(t, "claim twice", claim(f.bot.ID, "c2", 200), false)
	eq(t, "claim of another bot's", claim(f.bot.ID, "c1", 20), false)
	eq(t, "claim unknown", claim(f.bot.ID, "nope", 20), false)

	// Clear removes one conversation's row; clearing nothing is fine.
	ok(t, r.Clear(ctx, f.bot.ID, "c1"))
	ok(t, r.Clear(ctx, f.bot.ID, "c1"))
	ok(t, r.Clear(ctx, f.bot.ID, "nope"))
	eq(t, "after clear", timeoutKeys(due(1000, 10)), []string{other.ID + "/c1", f.bot.ID + "/c3"})

	// Inside a rolled-back transaction nothing sticks.
	err := db.InTx(ctx, func(tx store.Store) error {
		ok(t, tx.DialogTimeouts().Set(ctx, &store.DialogTimeout{BotID: f.bot.ID, ConversationID: "c4", DueAt: at(1)}))
		return fmt.Errorf("rollback")
	})
	if err == nil {
		t.Fatal("InTx did not return fn's error")
	}
	eq(t, "rolled back", timeoutKeys(due(1000, 10)), []string{other.ID + "/c1", f.bot.ID + "/c3"})

	// A timeout needs its conversation, and goes with it.
	err = r.Set(ctx, &store.DialogTimeout{BotID: f.bot.ID, ConversationID: "ghost", DueAt: at(1)})
	wantErr(t, err, model.ErrNotFound)
	ok(t, db.Chat().DeleteConversation(ctx, f.bot.ID, "c3"))
	eq(t, "conversation deleted", timeoutKeys(due(1000, 10)), []string{other.ID + "/c1"})
	ok(t, db.Bots().Delete(ctx, f.ws.ID, other.ID))
	eq(t, "bot deleted", timeoutKeys(due(1000, 10)), []string{})

	// Concurrent claimers of one timeout (nodes sharing a database):
	// exactly one wins.
	set(f.bot.ID, "c4", "u", 50)
	var wg sync.WaitGroup
	var wins atomic.Int32
	for range 8 {
		wg.Go(func() {
			got, err := db.DialogTimeouts().Claim(ctx, f.bot.ID, "c4", at(50))
			if err != nil {
				t.Error(err)
				return
			}
			if got {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	eq(t, "concurrent claims won", wins.Load(), int32(1))

	// Due times keep millisecond precision.
	precise := base.Add(1234567 * time.Millisecond)
	ok(t, r.Set(ctx, &store.DialogTimeout{BotID: f.bot.ID, ConversationID: "c4", DueAt: precise}))
	got = due(1234567, 10)
	if len(got) != 1 || !got[0].DueAt.Equal(precise) {
		t.Fatalf("precision: %+v", got)
	}
}

// testScheduleFires: a trigger's fired-up-to time starts once, advances
// only from the value read (one of racing leaders wins), rolls back with
// its transaction, and goes with its trigger or bot.
func testScheduleFires(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	r := db.ScheduleFires()
	list := func() []string {
		t.Helper()
		all, err := r.List(ctx)
		ok(t, err)
		out := []string{}
		for _, x := range all {
			out = append(out, fmt.Sprintf("%s/%s@%d", x.BotID, x.TriggerID, x.FiredUpTo.Sub(base).Milliseconds()))
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	advance := func(botID, trigger string, from, to int) bool {
		t.Helper()
		got, err := r.Advance(ctx, botID, trigger, at(from), at(to))
		ok(t, err)
		return got
	}
	eq(t, "none", list(), []string{})
	ok(t, r.Start(ctx, f.bot.ID, "t1", at(10)))
	ok(t, r.Start(ctx, f.bot.ID, "t1", at(20))) // already started: kept
	ok(t, r.Start(ctx, f.bot.ID, "t2", at(5)))
	ok(t, r.Start(ctx, other.ID, "t1", at(7)))
	eq(t, "started once", list(), sorted(f.bot.ID+"/t1@10", f.bot.ID+"/t2@5", other.ID+"/t1@7"))

	eq(t, "advance from the value read", advance(f.bot.ID, "t1", 10, 20), true)
	eq(t, "stale advance refused", advance(f.bot.ID, "t1", 10, 20), false)
	eq(t, "unknown trigger", advance(f.bot.ID, "t9", 0, 20), false)

	// Racing leaders: exactly one advances.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := r.Advance(ctx, f.bot.ID, "t1", at(20), at(30))
			if err != nil {
				t.Error(err)
			}
			if got {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	eq(t, "one of racing advances", wins.Load(), int32(1))

	// Inside a transaction that fails, the advance is rolled back.
	boom := fmt.Errorf("boom")
	err := db.InTx(ctx, func(tx store.Store) error {
		got, err := tx.ScheduleFires().Advance(ctx, f.bot.ID, "t1", at(30), at(40))
		ok(t, err)
		eq(t, "advance in tx", got, true)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("tx error = %v, want boom", err)
	}
	eq(t, "rolled back", advance(f.bot.ID, "t1", 30, 40), true)

	ok(t, db.Bots().Delete(ctx, f.ws.ID, other.ID))
	eq(t, "gone with the bot", list(), sorted(f.bot.ID+"/t1@40", f.bot.ID+"/t2@5"))
}
