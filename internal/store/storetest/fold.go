package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// testIdleTurn checks States.GetIdleTurn: what GetTurn reads, and whether
// the conversation is idle (no pending turn, no handoff) with its last
// turn's number.
func testIdleTurn(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	newConv(t, db, f.bot.ID, "c1", "u1", 0)
	ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeConversation, "c1", json.RawMessage(`{"c":1}`)))
	r := db.States()

	got, err := r.GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	want, err := r.GetTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	got.Start.Mark = store.StartMark{} // the store's, where it gives one (RequireTurnStart's)
	eq(t, "start", got.Start, want)
	if !got.Idle || got.Handoff || got.TurnSeq != 0 {
		t.Fatalf("new conversation: %+v, want idle at 0", got)
	}

	tn := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "m"}
	ok(t, db.Signals().EnqueueTurn(ctx, tn))
	got, err = r.GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	if got.Idle || got.TurnSeq != 1 {
		t.Fatalf("with a pending turn: idle %v at %d, want busy at 1", got.Idle, got.TurnSeq)
	}
	ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", tn.Seq))
	got, err = r.GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	if !got.Idle || got.TurnSeq != 1 {
		t.Fatalf("turn completed: idle %v at %d, want idle at 1", got.Idle, got.TurnSeq)
	}
	_, err = db.Handoffs().Request(ctx, &model.Handoff{BotID: f.bot.ID, ConversationID: "c1", Status: model.HandoffWaiting, RequestedAt: at(1)})
	ok(t, err)
	got, err = r.GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	if got.Idle || !got.Handoff {
		t.Fatalf("a conversation in handoff: idle %v, handoff %v", got.Idle, got.Handoff)
	}
	// Another bot's conversation of the same id is not this one.
	other := newBot(t, db, f.ws, nil, 1)
	newConv(t, db, other.ID, "c1", "", 0)
	got, err = r.GetIdleTurn(ctx, other.ID, "u1", "c1")
	ok(t, err)
	if !got.Idle || got.TurnSeq != 0 || got.Start.Conversation == nil || got.Start.User != nil {
		t.Fatalf("other bot's conversation: %+v", got)
	}
}

// testRequireTurnStart checks States.RequireTurnStart, directly and in the
// engine's group commit (pipelined on PostgreSQL, where the server refuses
// it): a start read with GetTurn holds until any of what it holds changes,
// or a handoff begins.
func testRequireTurnStart(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	u := newUser(t, db, f.bot.ID, "u1")
	c := newConv(t, db, f.bot.ID, "c1", "u1", 0)
	ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeConversation, "c1", json.RawMessage(`{"n":1}`)))
	cm := db.NewCommitter(nil)
	// holds checks start both ways: they must agree.
	holdsFor := func(what, user string, start store.TurnStart) bool {
		t.Helper()
		direct := db.States().RequireTurnStart(ctx, f.bot.ID, user, "c1", start)
		if direct != nil && !errors.Is(direct, store.ErrStartChanged) {
			t.Fatalf("%s: %v", what, direct)
		}
		committed := cm.Commit(ctx, &store.Write{Local: true, Ref: model.ConversationRef{BotID: f.bot.ID, ConversationID: "c1"},
			Apply: func(ctx context.Context, tx store.Store) error {
				return tx.States().RequireTurnStart(ctx, f.bot.ID, user, "c1", start)
			}})
		if (direct == nil) != (committed == nil) || (committed != nil && !errors.Is(committed, store.ErrStartChanged)) {
			t.Fatalf("%s: directly %v, in a commit %v", what, direct, committed)
		}
		return direct == nil
	}
	holds := func(what string, start store.TurnStart) bool { t.Helper(); return holdsFor(what, "u1", start) }
	read := func() store.TurnStart {
		t.Helper()
		s, err := db.States().GetTurn(ctx, f.bot.ID, "u1", "c1")
		ok(t, err)
		return s
	}
	// A start read as a fold reads it (GetIdleTurn): a store may then tell
	// it holds without reading it again (sqlstore's marks on SQLite).
	readIdle := func() store.TurnStart {
		t.Helper()
		it, err := db.States().GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
		ok(t, err)
		return it.Start
	}
	start := read()
	if !holds("as read", start) {
		t.Fatal("a start as read does not hold")
	}
	if !holds("as read idle", readIdle()) {
		t.Fatal("a start as read idle does not hold")
	}
	// Writes that change no start (a message, its signal, a turn's
	// numbers) leave it holding.
	idle := readIdle()
	m := newMessage(t, db, c, "u1", 1)
	ok(t, db.Signals().AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: "message_created", Data: json.RawMessage(`{"id":"` + m.ID + `"}`)}))
	if !holds("after a message", idle) {
		t.Fatal("a start read idle does not hold after a message")
	}
	changed := start
	changed.ConvState = json.RawMessage(`{"n":2}`)
	if holds("another conversation state", changed) {
		t.Fatal("a changed conversation state holds")
	}
	changed = start
	changed.UserState = json.RawMessage(`{}`)
	if holds("a user state that is not stored", changed) {
		t.Fatal("a user state that is not stored holds")
	}
	// What the store holds changes: the old start no longer holds, the new
	// one does.
	for _, tc := range []struct {
		name   string
		change func()
	}{
		{"bot state set", func() { ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeBot, f.bot.ID, json.RawMessage(`{"b":1}`))) }},
		{"user renamed", func() { u.Name = "renamed"; ok(t, db.Chat().UpdateUser(ctx, u)) }},
		{"user tagged", func() { u.Tags = map[string]string{"k": "v"}; ok(t, db.Chat().UpdateUser(ctx, u)) }},
		{"conversation tagged", func() { c.Tags = map[string]string{"topic": "news"}; ok(t, db.Chat().UpdateConversation(ctx, c)) }},
		{"conversation untagged", func() { c.Tags = nil; ok(t, db.Chat().UpdateConversation(ctx, c)) }},
		{"user's picture", func() { u.PictureURL = "https://example.com/u.png"; ok(t, db.Chat().UpdateUser(ctx, u)) }},
		{"user's profile", func() { u.Profile = "p"; ok(t, db.Chat().UpdateUser(ctx, u)) }},
		{"user state set", func() { ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeUser, "u1", json.RawMessage(`{"u":1}`))) }},
		{"user state changed", func() { ok(t, db.States().Put(ctx, f.bot.ID, store.ScopeUser, "u1", json.RawMessage(`{"u":2}`))) }},
	} {
		idle := readIdle()
		tc.change()
		if holds(tc.name+": the old start", start) {
			t.Fatalf("%s: the old start holds", tc.name)
		}
		if holds(tc.name+": the old start read idle", idle) {
			t.Fatalf("%s: the old start read idle holds", tc.name)
		}
		start = read()
		if !holds(tc.name+": the new start", start) {
			t.Fatalf("%s: the start read since does not hold", tc.name)
		}
	}
	// A start without its user (not stored) holds until the user is.
	alone, err := db.States().GetTurn(ctx, f.bot.ID, "u2", "c1")
	ok(t, err)
	if alone.User != nil || !holdsFor("without its user", "u2", alone) {
		t.Fatalf("a start without its user does not hold: %+v", alone.User)
	}
	if holdsFor("of another user", "u2", start) {
		t.Fatal("a start with u1 holds for u2, who is not stored")
	}
	newUser(t, db, f.bot.ID, "u2")
	if holdsFor("its user since stored", "u2", alone) {
		t.Fatal("a start without its user holds once the user is stored")
	}
	idle = readIdle()
	_, err = db.Handoffs().Request(ctx, &model.Handoff{BotID: f.bot.ID, ConversationID: "c1", Status: model.HandoffWaiting, RequestedAt: at(1)})
	ok(t, err)
	if holds("in handoff", start) || holds("in handoff, read idle before", idle) {
		t.Fatal("a start holds in handoff")
	}
	ok(t, db.Handoffs().Delete(ctx, f.bot.ID, "c1"))
	idle = readIdle()
	if !holds("handed back", idle) {
		t.Fatal("a start read idle once handed back does not hold")
	}
	// The user deleted, the conversation deleted: no start read before holds.
	ok(t, db.Chat().DeleteUser(ctx, f.bot.ID, "u1"))
	if holds("the user deleted", idle) {
		t.Fatal("a start holds once its user is deleted")
	}
	idle = readIdle()
	ok(t, db.Chat().DeleteConversation(ctx, f.bot.ID, "c1"))
	if holds("the conversation deleted", start) || holds("the conversation deleted, read idle before", idle) {
		t.Fatal("a start holds once its conversation is deleted")
	}
}

// testRequireFirstTurn checks Signals.RequireFirstTurn, directly and in
// the engine's group commit: a turn may complete only when no turn
// numbered before it is pending.
func testRequireFirstTurn(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	newConv(t, db, f.bot.ID, "c1", "u1", 0)
	cm := db.NewCommitter(nil)
	first := func(seq int64) error {
		t.Helper()
		direct := db.Signals().RequireFirstTurn(ctx, f.bot.ID, "c1", seq)
		committed := cm.Commit(ctx, &store.Write{Local: true, Ref: model.ConversationRef{BotID: f.bot.ID, ConversationID: "c1"},
			Apply: func(ctx context.Context, tx store.Store) error {
				return tx.Signals().RequireFirstTurn(ctx, f.bot.ID, "c1", seq)
			}})
		if (direct == nil) != (committed == nil) || (direct != nil && (!errors.Is(direct, store.ErrTurnBetween) || !errors.Is(committed, store.ErrTurnBetween))) {
			t.Fatalf("turn %d: directly %v, in a commit %v", seq, direct, committed)
		}
		return direct
	}
	a := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "a"}
	b := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "b"}
	ok(t, db.Signals().EnqueueTurn(ctx, a))
	ok(t, db.Signals().EnqueueTurn(ctx, b))
	ok(t, first(a.Seq))
	if first(b.Seq) == nil {
		t.Fatal("the second turn may complete while the first is pending")
	}
	ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", a.Seq))
	ok(t, first(b.Seq))
}

// testUnstoredTurn checks store.WithUnstoredTurn, outside a pipelined
// transaction: AppendSignalTurn numbers the marked turn (the next turn
// follows it) and stores its signal, not its row; CompleteTurn of that
// turn deletes nothing, while CompleteTurn of a stored turn still does.
// Then store.WithSignalsAhead.
func testUnstoredTurn(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	newConv(t, db, f.bot.ID, "c1", "u1", 0)
	stored := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "a"}
	ok(t, db.Signals().EnqueueTurn(ctx, stored))
	held := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "b"}
	sig := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated, Data: []byte(`{"m":"b"}`)}
	ok(t, db.InTx(ctx, func(tx store.Store) error {
		marked := store.WithUnstoredTurn(ctx, held)
		if err := tx.Signals().AppendSignalTurn(marked, sig, held); err != nil {
			return err
		}
		if err := tx.Signals().CompleteTurn(marked, f.bot.ID, "c1", held.Seq); err != nil {
			return err
		}
		// The mark names one turn: another one's completion still deletes.
		return tx.Signals().CompleteTurn(marked, f.bot.ID, "c1", stored.Seq)
	}))
	eq(t, "the unstored turn's number", held.Seq, stored.Seq+1)
	pending, err := db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	eq(t, "pending turns", len(pending), 0)
	sigs, err := db.Signals().SignalsAfter(ctx, f.bot.ID, "c1", 0, 10)
	ok(t, err)
	if len(sigs) != 1 || sigs[0].Seq != sig.Seq || string(sigs[0].Data) != `{"m":"b"}` {
		t.Fatalf("signals = %+v, want the marked write's", sigs)
	}
	next := &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "c"}
	ok(t, db.Signals().EnqueueTurn(ctx, next))
	eq(t, "the next turn's number", next.Seq, held.Seq+1)

	// Signal numbers taken ahead: used in order by the conversation's
	// signals (not another conversation's), the rest given back; in a
	// pipelined transaction too, where the engine may know them only once
	// the statements ran.
	for i, pipelined := range []bool{false, true} {
		tctx, other := ctx, "c"+strconv.Itoa(2+i)
		if pipelined {
			tctx = store.WithPipeline(ctx)
		}
		newConv(t, db, f.bot.ID, other, "u1", 0)
		ahead := &store.SignalsAhead{Want: 3}
		held = &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: "d" + other}
		first := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated, Data: []byte(`{}`)}
		inAhead := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated, Data: []byte(`{"n":1}`)}
		inAhead2 := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated, Data: []byte(`{"n":2}`)}
		elsewhere := &model.Signal{BotID: f.bot.ID, ConversationID: other, Type: model.SignalMessageCreated, Data: []byte(`{}`)}
		ok(t, db.InTx(tctx, func(tx store.Store) error {
			marked := store.WithSignalsAhead(store.WithUnstoredTurn(tctx, held), ahead)
			if err := tx.Signals().AppendSignalTurn(marked, first, held); err != nil {
				return err
			}
			if err := tx.Signals().AppendSignal(marked, elsewhere); err != nil {
				return err
			}
			for _, sg := range []*model.Signal{inAhead, inAhead2} {
				if err := tx.Signals().AppendSignal(marked, sg); err != nil {
					return err
				}
			}
			if n := ahead.Left(); n != 1 {
				t.Errorf("pipelined %v: numbers left = %d, want 1", pipelined, n)
			}
			return tx.Signals().GiveBackSignals(tctx, f.bot.ID, "c1", ahead.Left())
		}))
		eq(t, "the signal after the first", inAhead.Seq, first.Seq+1)
		eq(t, "the signal after it", inAhead2.Seq, first.Seq+2)
		eq(t, "another conversation's signal", elsewhere.Seq, int64(1))
		after := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated, Data: []byte(`{}`)}
		ok(t, db.Signals().AppendSignal(ctx, after))
		eq(t, "the number after those given back", after.Seq, inAhead2.Seq+1)
		sigs, err := db.Signals().SignalsAfter(ctx, f.bot.ID, "c1", first.Seq-1, 10)
		ok(t, err)
		var got []string
		for _, sg := range sigs {
			got = append(got, strconv.FormatInt(sg.Seq, 10)+string(sg.Data))
		}
		want := []string{strconv.FormatInt(first.Seq, 10) + `{}`, strconv.FormatInt(first.Seq+1, 10) + `{"n":1}`,
			strconv.FormatInt(first.Seq+2, 10) + `{"n":2}`, strconv.FormatInt(first.Seq+3, 10) + `{}`}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("pipelined %v: the log holds %v, want %v", pipelined, got, want)
		}
	}
}

// foldedWrite is a write of user u1's message in conv, with its turn,
// whose Then is what completes that turn (the bot's answer and the turn's
// deletion), expected to run when the turn gets thenSeq: the write, the
// message and the answer. They are timed at(2i) and at(2i+1), and their
// signals' data tell the user's ({"m":"user"}) from the bot's.
func foldedWrite(botID, conv string, i int, thenSeq int64) (w *store.Write, m, reply *model.Message) {
	m = &model.Message{BotID: botID, ID: model.NewID(), ConversationID: conv, UserID: "u1",
		Payload: []byte(`{"type":"text","text":"hi"}`), Direction: model.DirectionIncoming, CreatedAt: at(2 * i)}
	tn := &model.Turn{BotID: botID, ConversationID: conv, Kind: model.TurnMessage, RefID: m.ID, UserID: "u1", CreatedAt: m.CreatedAt}
	reply = &model.Message{BotID: botID, ID: model.NewID(), ConversationID: conv, UserID: botID,
		Payload: []byte(`{"type":"text","text":"echo"}`), Direction: model.DirectionOutgoing, CreatedAt: at(2*i + 1)}
	w = &store.Write{Local: true, Turn: tn,
		Apply:  func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) },
		Signal: &model.Signal{BotID: botID, ConversationID: conv, Type: model.SignalMessageCreated, Data: []byte(`{"m":"user"}`), CreatedAt: m.CreatedAt},
		Then: &store.Write{Local: true, Ref: model.ConversationRef{BotID: botID, ConversationID: conv},
			Apply: func(ctx context.Context, tx store.Store) error {
				if err := tx.Chat().CreateMessage(ctx, reply); err != nil {
					return err
				}
				return tx.Signals().CompleteTurn(ctx, tn.BotID, tn.ConversationID, tn.Seq)
			},
			More: []*model.Signal{{BotID: botID, ConversationID: conv, Type: model.SignalMessageCreated, Data: []byte(`{"m":"bot"}`), CreatedAt: reply.CreatedAt}}},
		ThenSeq: thenSeq}
	return w, m, reply
}

// testWriteThen checks Write.Then through the engine's Committer: it
// completes the write's turn in the same transaction when the turn got
// ThenSeq, its signals following the write's; when another turn came in
// between, the write commits alone and its turn stays pending. Every
// engine runs it: SQLite, which numbers the turn as the write runs, and
// PostgreSQL, whose pipelined group commit numbers it only at the commit
// and has the server refuse a Then whose turn got another number (the
// write then commits again without it).
func testWriteThen(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u1")
	newConv(t, db, f.bot.ID, "c1", "u1", 0)
	var after []*store.Write
	cm := db.NewCommitter(func(w *store.Write) { after = append(after, w) })

	w, _, reply := foldedWrite(f.bot.ID, "c1", 1, 1)
	ok(t, cm.Commit(ctx, w))
	pending, err := db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	_, replyErr := db.Chat().GetMessage(ctx, f.bot.ID, reply.ID)
	sigs, err := db.Signals().SignalsAfter(ctx, f.bot.ID, "c1", 0, 10)
	ok(t, err)
	if !w.ThenRan() {
		t.Fatal("Then did not run with the turn's own number")
	}
	eq(t, "pending turns once completed with the message", len(pending), 0)
	ok(t, replyErr)
	if len(sigs) != 2 || string(sigs[0].Data) != `{"m":"user"}` || string(sigs[1].Data) != `{"m":"bot"}` || sigs[1].Seq != 2 {
		t.Fatalf("signals = %+v, want the user's then the bot's", sigs)
	}
	if ws := w.Signals(); len(ws) != 2 || ws[1] != w.Then.More[0] {
		t.Fatalf("announced signals = %+v, want both", ws)
	}
	eq(t, "the turn's number", w.Turn.Seq, int64(1))

	// Another turn came in between: its number is not ThenSeq.
	w, _, reply = foldedWrite(f.bot.ID, "c1", 2, 2)
	ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnEvent, RefID: "e"}))
	ok(t, cm.Commit(ctx, w))
	if w.ThenRan() {
		t.Fatal("Then ran although another turn came first")
	}
	pending, err = db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	if len(pending) != 2 || pending[0].Kind != model.TurnEvent || pending[1].Seq != w.Turn.Seq {
		t.Fatalf("pending = %+v, want the event's turn and the message's", pending)
	}
	if _, err := db.Chat().GetMessage(ctx, f.bot.ID, reply.ID); !model.IsNotFound(err) {
		t.Fatalf("the reply of a Then that did not run: err = %v", err)
	}
	if ws := w.Signals(); len(ws) != 1 {
		t.Fatalf("announced signals = %d, want the user's only", len(ws))
	}
	eq(t, "writes announced", len(after), 2)
	for _, p := range pending {
		ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", p.Seq))
	}

	// ThenIf, checked in the transaction once the turn got ThenSeq: a
	// refusal leaves the turn pending, as another turn in between does; a
	// failure fails the whole write.
	seq := w.Turn.Seq
	for _, tc := range []struct {
		name   string
		answer bool
		err    error
	}{{"accepts", true, nil}, {"refuses", false, nil}, {"fails", false, errors.New("check failed")}} {
		seq++
		w, _, reply = foldedWrite(f.bot.ID, "c1", int(seq), seq)
		asked := false
		w.ThenIf = func(ctx context.Context, tx store.Store) (bool, error) {
			asked = true
			// It reads in the transaction: the message's turn is numbered
			// (its row is stored only if Then does not run:
			// store.WithUnstoredTurn).
			idle, err := tx.States().GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
			if err == nil && idle.TurnSeq != seq {
				t.Errorf("%s: ThenIf read %+v, want the message's turn %d numbered", tc.name, idle, seq)
			}
			return tc.answer, tc.err
		}
		err := cm.Commit(ctx, w)
		if tc.err != nil {
			if err == nil {
				t.Fatalf("%s: the write committed", tc.name)
			}
			if _, err := db.Chat().GetMessage(ctx, f.bot.ID, w.Turn.RefID); !model.IsNotFound(err) {
				t.Fatalf("%s: the message of a failed write: err = %v", tc.name, err)
			}
			break
		}
		ok(t, err)
		_, replyErr := db.Chat().GetMessage(ctx, f.bot.ID, reply.ID)
		switch ran := w.ThenRan(); {
		case ran && (!tc.answer || !asked):
			t.Fatalf("%s: Then ran (ThenIf asked: %v)", tc.name, asked)
		case ran:
			ok(t, replyErr)
		case tc.answer:
			t.Fatalf("%s: Then did not run", tc.name)
		default:
			if !model.IsNotFound(replyErr) {
				t.Fatalf("%s: the reply of a Then that did not run: err = %v", tc.name, replyErr)
			}
			ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", w.Turn.Seq))
		}
	}
	// A fold's ThenIf (States.RequireTurnStart of a start that still
	// holds): Then runs when the turn got ThenSeq, and is refused all the
	// same when another turn came in between (pipelined, the engine may
	// check both in the one statement: store.LastTurn).
	for _, between := range []bool{true, false} {
		idle, err := db.States().GetIdleTurn(ctx, f.bot.ID, "u1", "c1")
		ok(t, err)
		if between {
			ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnEvent, RefID: "between"}))
		}
		w, _, _ = foldedWrite(f.bot.ID, "c1", int(idle.TurnSeq)+10, idle.TurnSeq+1)
		w.ThenIf = func(ctx context.Context, tx store.Store) (bool, error) {
			err := tx.States().RequireTurnStart(ctx, f.bot.ID, "u1", "c1", idle.Start)
			// Pipelined (PostgreSQL), the last turn's check is offered to
			// the start check's statement, which takes it: no statement
			// of its own.
			if lt := store.LastTurnOf(ctx); store.Pipelined(ctx) && (lt == nil || !lt.Checked) {
				t.Errorf("another turn in between %v: pipelined, the start check did not take the last turn's (%+v)", between, lt)
			}
			if errors.Is(err, store.ErrStartChanged) {
				return false, nil
			}
			return err == nil, err
		}
		ok(t, cm.Commit(ctx, w))
		if w.ThenRan() == between {
			t.Fatalf("another turn in between %v: Then ran %v", between, w.ThenRan())
		}
		pending, err := db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
		ok(t, err)
		if want := map[bool]int{true: 2, false: 0}[between]; len(pending) != want {
			t.Fatalf("another turn in between %v: %d turns pending, want %d", between, len(pending), want)
		}
		for _, p := range pending {
			ok(t, db.Signals().CompleteTurn(ctx, f.bot.ID, "c1", p.Seq))
		}
	}
	// Whether Then ran or not, the log has no gap (numbers taken ahead for
	// a Then that did not run were given back: store.SignalsAhead).
	sigs, err = db.Signals().SignalsAfter(ctx, f.bot.ID, "c1", 0, 100)
	ok(t, err)
	for i, sg := range sigs {
		if sg.Seq != int64(i+1) {
			t.Fatalf("signal %d has number %d: a gap in %d signals", i, sg.Seq, len(sigs))
		}
	}
	last := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated, Data: []byte(`{}`)}
	ok(t, db.Signals().AppendSignal(ctx, last))
	eq(t, "the next signal's number", last.Seq, int64(len(sigs)+1))
}
