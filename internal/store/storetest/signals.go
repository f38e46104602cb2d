package storetest

// The signal log and the turn queue: appends, their order under
// concurrency, turns and what the dispatcher reads with them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func testSignals(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Signals()
	newConv(t, db, f.bot.ID, "a", "", 0)
	newConv(t, db, f.bot.ID, "b", "", 1)
	for i := 1; i <= 5; i++ {
		s := &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: model.SignalMessageCreated,
			Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), CreatedAt: at(i)}
		ok(t, r.AppendSignal(ctx, s))
		eq(t, "seq", s.Seq, int64(i))
	}
	// Sequences are per conversation.
	s := &model.Signal{BotID: f.bot.ID, ConversationID: "b", Type: model.SignalEventCreated}
	ok(t, r.AppendSignal(ctx, s))
	eq(t, "other conversation starts at 1", s.Seq, int64(1))
	wantErr(t, r.AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "nope", Type: "x"}), model.ErrNotFound)

	// A rolled-back append leaves no gap.
	boom := errors.New("boom")
	err := db.InTx(ctx, func(tx store.Store) error {
		ok(t, tx.Signals().AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: "x"}))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx returned %v", err)
	}
	s = &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: model.SignalMessageDeleted}
	ok(t, r.AppendSignal(ctx, s))
	eq(t, "no gap after rollback", s.Seq, int64(6))

	got, err := r.SignalsAfter(ctx, f.bot.ID, "a", 2, 2)
	ok(t, err)
	eq(t, "after 2, limit 2", []int64{got[0].Seq, got[1].Seq}, []int64{3, 4})
	eq(t, "len", len(got), 2)
	eq(t, "data", string(got[0].Data), `{"i":3}`)
	eq(t, "time", got[0].CreatedAt, at(3))
	eq(t, "type", got[0].Type, model.SignalMessageCreated)
	got, err = r.SignalsAfter(ctx, f.bot.ID, "a", 0, 100)
	ok(t, err)
	eq(t, "all", len(got), 6)
	got, err = r.SignalsAfter(ctx, f.bot.ID, "a", 6, 100)
	ok(t, err)
	eq(t, "none after last", len(got), 0)
}

// testSignalTurn covers AppendSignalTurn: both numbers continue the
// conversation's sequences shared with AppendSignal and EnqueueTurn, a
// rollback leaves no gap in either, a missing conversation is NotFound, a
// duplicate explicit turn number is a conflict and stores nothing.
func testSignalTurn(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Signals()
	newConv(t, db, f.bot.ID, "a", "", 0)
	newConv(t, db, f.bot.ID, "b", "", 1)
	ok(t, r.AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: model.SignalMessageCreated}))
	ok(t, r.EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnMessage, RefID: "m0"}))
	ok(t, r.EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnMessage, RefID: "m1"}))
	for i := range 3 {
		sg := &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: model.SignalMessageCreated,
			Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), CreatedAt: at(20 + i)}
		tn := &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnMessage, RefID: fmt.Sprint("x", i),
			UserID: "u", Attempts: i, CreatedAt: at(20 + i)}
		if i == 1 {
			ok(t, db.InTx(ctx, func(tx store.Store) error { return tx.Signals().AppendSignalTurn(ctx, sg, tn) }))
		} else {
			ok(t, r.AppendSignalTurn(ctx, sg, tn))
		}
		eq(t, "signal seq", sg.Seq, int64(2+i))
		eq(t, "turn seq", tn.Seq, int64(3+i))
	}
	// Without a turn it is AppendSignal.
	sg := &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: model.SignalEventCreated}
	ok(t, r.AppendSignalTurn(ctx, sg, nil))
	eq(t, "signal only", sg.Seq, int64(5))
	// A rollback leaves no gap.
	boom := errors.New("boom")
	err := db.InTx(ctx, func(tx store.Store) error {
		ok(t, tx.Signals().AppendSignalTurn(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: "x"},
			&model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnEvent}))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx returned %v", err)
	}
	sg = &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: "x"}
	tn := &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnEvent, RefID: "e"}
	ok(t, r.AppendSignalTurn(ctx, sg, tn))
	eq(t, "no signal gap", sg.Seq, int64(6))
	eq(t, "no turn gap", tn.Seq, int64(6))
	// An explicit turn number is kept and does not move the counter.
	sg = &model.Signal{BotID: f.bot.ID, ConversationID: "b", Type: "x"}
	ok(t, r.AppendSignalTurn(ctx, sg, &model.Turn{BotID: f.bot.ID, ConversationID: "b", Seq: 9, Kind: model.TurnEvent}))
	eq(t, "b signal", sg.Seq, int64(1))
	err = r.AppendSignalTurn(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "b", Type: "x"},
		&model.Turn{BotID: f.bot.ID, ConversationID: "b", Seq: 9, Kind: model.TurnEvent})
	wantErr(t, err, model.ErrAlreadyExists)
	tn = &model.Turn{BotID: f.bot.ID, ConversationID: "b", Kind: model.TurnEvent}
	ok(t, r.AppendSignalTurn(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "b", Type: "x"}, tn))
	eq(t, "b turn counter untouched by explicit seq", tn.Seq, int64(1))
	wantErr(t, r.AppendSignalTurn(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "nope", Type: "x"},
		&model.Turn{BotID: f.bot.ID, ConversationID: "nope", Kind: model.TurnEvent}), model.ErrNotFound)

	sigs, err := r.SignalsAfter(ctx, f.bot.ID, "a", 0, 100)
	ok(t, err)
	eq(t, "signals stored", len(sigs), 6)
	eq(t, "signal data", string(sigs[2].Data), `{"i":1}`)
	eq(t, "signal time", sigs[2].CreatedAt, at(21))
	sigs, err = r.SignalsAfter(ctx, f.bot.ID, "b", 0, 100)
	ok(t, err)
	eq(t, "failed append stored no signal", len(sigs), 2)
	turns, err := r.PendingTurns(ctx, f.bot.ID, "a", 100)
	ok(t, err)
	eq(t, "turns stored", len(turns), 6)
	eq(t, "turn fields", turns[3], &model.Turn{BotID: f.bot.ID, ConversationID: "a", Seq: 4, Kind: model.TurnMessage,
		RefID: "x1", UserID: "u", Attempts: 1, CreatedAt: at(21)})
	turns, err = r.PendingTurns(ctx, f.bot.ID, "b", 100)
	ok(t, err)
	eq(t, "b turns", []int64{turns[0].Seq, turns[1].Seq}, []int64{1, 9})
}

func testSignalsConcurrent(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newConv(t, db, f.bot.ID, "c", "", 0)
	const n = 20
	seqs := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half append inside a caller's transaction, as services do.
			s := &model.Signal{BotID: f.bot.ID, ConversationID: "c", Type: model.SignalMessageCreated}
			var err error
			if i%2 == 0 {
				err = db.InTx(ctx, func(tx store.Store) error { return tx.Signals().AppendSignal(ctx, s) })
			} else {
				err = db.Signals().AppendSignal(ctx, s)
			}
			seqs[i] = s.Seq
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		ok(t, err)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("sequence numbers not gapless 1..%d: %v", n, seqs)
		}
	}
	got, err := db.Signals().SignalsAfter(ctx, f.bot.ID, "c", 0, 100)
	ok(t, err)
	eq(t, "stored", len(got), n)
}

func testTurns(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Signals()
	newConv(t, db, f.bot.ID, "a", "", 0)
	newConv(t, db, f.bot.ID, "b", "", 1)
	newConv(t, db, f.bot.ID, "idle", "", 2)
	var turns []*model.Turn
	for i := range 3 {
		tn := &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnMessage, RefID: fmt.Sprint("m", i), UserID: "u",
			Attempts: i, CreatedAt: at(10 + i)}
		ok(t, r.EnqueueTurn(ctx, tn))
		eq(t, "assigned seq", tn.Seq, int64(i+1))
		turns = append(turns, tn)
	}
	ok(t, r.EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "b", Seq: 7, Kind: model.TurnEvent, RefID: "e", CreatedAt: at(5)}))
	wantErr(t, r.EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "b", Seq: 7, Kind: model.TurnEvent}), model.ErrAlreadyExists)
	wantErr(t, r.EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "nope", Kind: model.TurnEvent}), model.ErrNotFound)

	got, err := r.PendingTurns(ctx, f.bot.ID, "a", 10)
	ok(t, err)
	eq(t, "pending in order", got, turns)
	got, err = r.PendingTurns(ctx, f.bot.ID, "a", 2)
	ok(t, err)
	eq(t, "limit", len(got), 2)

	refs, err := r.PendingConversations(ctx, 10)
	ok(t, err)
	eq(t, "pending conversations, oldest first", refs, []model.ConversationRef{
		{BotID: f.bot.ID, ConversationID: "b"}, {BotID: f.bot.ID, ConversationID: "a"}})
	refs, err = r.PendingConversations(ctx, 1)
	ok(t, err)
	eq(t, "limited", len(refs), 1)
	// Without the ones whose lease is held: b's is; a's expired.
	_, err = db.Leases().Acquire(ctx, "t:"+f.bot.ID+":b", "n1", time.Minute)
	ok(t, err)
	_, err = db.Leases().Acquire(ctx, "t:"+f.bot.ID+":a", "n1", time.Millisecond)
	ok(t, err)
	time.Sleep(5 * time.Millisecond)
	refs, err = r.UnleasedPendingConversations(ctx, "t:", 10)
	ok(t, err)
	eq(t, "unleased pending conversations", refs, []model.ConversationRef{{BotID: f.bot.ID, ConversationID: "a"}})
	ok(t, db.Leases().Release(ctx, "t:"+f.bot.ID+":b", "n1"))
	refs, err = r.UnleasedPendingConversations(ctx, "t:", 10)
	ok(t, err)
	eq(t, "released lease", len(refs), 2)

	ok(t, r.CompleteTurn(ctx, f.bot.ID, "a", 1))
	ok(t, r.CompleteTurn(ctx, f.bot.ID, "a", 1)) // idempotent
	got, err = r.PendingTurns(ctx, f.bot.ID, "a", 10)
	ok(t, err)
	eq(t, "after complete", got, turns[1:])
	ok(t, r.CompleteTurn(ctx, f.bot.ID, "b", 7))
	refs, err = r.PendingConversations(ctx, 10)
	ok(t, err)
	eq(t, "b drained", refs, []model.ConversationRef{{BotID: f.bot.ID, ConversationID: "a"}})

	// Numbers keep growing after turns complete.
	tn := &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnMessage}
	ok(t, r.EnqueueTurn(ctx, tn))
	eq(t, "next seq", tn.Seq, int64(4))
}

// testTurnInputs: PendingTurnInputs returns PendingTurns, each with its
// message or event as GetMessage and GetEvent read them, and nothing for a
// row that is gone.
func testTurnInputs(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Chat()
	newConv(t, db, f.bot.ID, "a", "", 0)
	newConv(t, db, f.bot.ID, "b", "", 1)
	m := &model.Message{BotID: f.bot.ID, ConversationID: "a", UserID: "u", Payload: json.RawMessage(`{"type":"text","text":"hi"}`),
		Metadata: json.RawMessage(`{"k":"v"}`), Tags: map[string]string{"a": "b"}, Direction: model.DirectionIncoming, CreatedAt: at(1)}
	ok(t, r.CreateMessage(ctx, m))
	plain := &model.Message{BotID: f.bot.ID, ConversationID: "a", UserID: "u", Payload: json.RawMessage(`{"type":"text","text":"x"}`),
		Direction: model.DirectionIncoming, CreatedAt: at(2)}
	ok(t, r.CreateMessage(ctx, plain))
	e := &model.Event{BotID: f.bot.ID, ConversationID: "a", UserID: "u", Type: "t", Payload: json.RawMessage(`{"x":[1,2]}`), CreatedAt: at(3)}
	ok(t, r.CreateEvent(ctx, e))
	gone := &model.Message{BotID: f.bot.ID, ConversationID: "a", UserID: "u", Payload: json.RawMessage(`{}`), CreatedAt: at(4)}
	ok(t, r.CreateMessage(ctx, gone))
	// An event id used as a message ref (and vice versa) must not match.
	enqueue := func(conv, kind, ref string) {
		ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: conv, Kind: kind, RefID: ref, UserID: "u", CreatedAt: at(5)}))
	}
	enqueue("a", model.TurnMessage, m.ID)
	enqueue("a", model.TurnEvent, e.ID)
	enqueue("a", model.TurnMessage, gone.ID)
	enqueue("a", model.TurnMessage, plain.ID)
	enqueue("a", model.TurnEvent, m.ID)
	enqueue("b", model.TurnMessage, m.ID) // another conversation's
	// Another user's turn in the same conversation starts with that user.
	ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "a", Kind: model.TurnEvent, RefID: e.ID, UserID: "v", CreatedAt: at(6)}))
	ok(t, r.DeleteMessage(ctx, f.bot.ID, gone.ID))

	turns, err := db.Signals().PendingTurns(ctx, f.bot.ID, "a", 10)
	ok(t, err)
	got, err := db.Signals().PendingTurnInputs(ctx, f.bot.ID, "a", 10)
	ok(t, err)
	eq(t, "count", len(got), len(turns))
	for i, p := range got {
		eq(t, "turn", p.Turn, turns[i])
	}
	wantM, err := r.GetMessage(ctx, f.bot.ID, m.ID)
	ok(t, err)
	wantPlain, err := r.GetMessage(ctx, f.bot.ID, plain.ID)
	ok(t, err)
	wantE, err := r.GetEvent(ctx, f.bot.ID, e.ID)
	ok(t, err)
	eq(t, "message", got[0].Message, wantM)
	eq(t, "message turn has no event", got[0].Event, (*model.Event)(nil))
	eq(t, "event", got[1].Event, wantE)
	eq(t, "event turn has no message", got[1].Message, (*model.Message)(nil))
	eq(t, "gone message", got[2].Message, (*model.Message)(nil))
	eq(t, "plain message", got[3].Message, wantPlain)
	eq(t, "kind mismatch", got[4].Event, (*model.Event)(nil))
	eq(t, "kind mismatch", got[4].Message, (*model.Message)(nil))

	// Every turn comes with its start, as GetTurn reads it for the turn's
	// user.
	startOf := func(user string) store.TurnStart {
		ts, err := db.States().GetTurn(ctx, f.bot.ID, user, "a")
		ok(t, err)
		return ts
	}
	for _, p := range got {
		if p.Start == nil {
			t.Fatalf("turn %d has no start", p.Turn.Seq)
		}
		eq(t, "start without user, with conversation", *p.Start, startOf(p.Turn.UserID))
	}
	newUser(t, db, f.bot.ID, "u")
	ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeUser, "u", json.RawMessage(`{"n":1}`)))
	ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeConversation, "a", json.RawMessage(`{"c":1}`)))
	ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeBot, f.bot.ID, json.RawMessage(`{"b":1}`)))
	got, err = db.Signals().PendingTurnInputs(ctx, f.bot.ID, "a", 2)
	ok(t, err)
	eq(t, "limit", len(got), 2)
	for _, p := range got {
		want := startOf(p.Turn.UserID)
		if p.Turn.UserID == "u" && (want.User == nil || want.UserState == nil || want.BotState == nil) {
			t.Fatalf("GetTurn = %+v", want)
		}
		eq(t, "start with user and states", *p.Start, want)
	}
	newUser(t, db, f.bot.ID, "v")
	ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeUser, "v", json.RawMessage(`{"v":2}`)))
	got, err = db.Signals().PendingTurnInputs(ctx, f.bot.ID, "a", 10)
	ok(t, err)
	last := got[len(got)-1]
	if last.Turn.UserID != "v" || last.Start.User == nil || last.Start.User.ID != "v" || string(last.Start.UserState) != `{"v":2}` {
		t.Fatalf("the other user's turn starts with %+v", last.Start)
	}
	eq(t, "the other user's start", *last.Start, startOf("v"))
	eq(t, "the first user's start", *got[0].Start, startOf("u"))
	got, err = db.Signals().PendingTurnInputs(ctx, f.bot.ID, "idle", 10)
	ok(t, err)
	eq(t, "none", len(got), 0)
}

// testLimits: a read with a limit returns exactly that many rows, in
// order, whatever the limit (an engine may write it into the query
// rounded up, and must stop the scan there).
func testLimits(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Signals()
	newConv(t, db, f.bot.ID, "a", "", 0)
	for i := 1; i <= 10; i++ {
		ok(t, r.AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "a", Type: model.SignalMessageCreated, CreatedAt: at(i)}))
	}
	for limit := 1; limit <= 12; limit++ {
		for _, after := range []int64{0, 4} {
			got, err := r.SignalsAfter(ctx, f.bot.ID, "a", after, limit)
			ok(t, err)
			var seqs, want []int64
			for _, sg := range got {
				seqs = append(seqs, sg.Seq)
			}
			for seq := after + 1; seq <= 10 && len(want) < limit; seq++ {
				want = append(want, seq)
			}
			eq(t, fmt.Sprintf("SignalsAfter(%d, limit %d)", after, limit), fmt.Sprint(seqs), fmt.Sprint(want))
		}
	}
}
