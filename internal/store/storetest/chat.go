package storetest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func testPagination(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	c := newConv(t, db, f.bot.ID, "c", "", 0)
	var want []string
	for i := range 45 {
		want = append([]string{newMessage(t, db, c, "", i).ID}, want...)
	}
	list := func(p store.Page) ([]*model.Message, string, error) {
		return db.Chat().ListMessages(ctx, f.bot.ID, c.ID, p)
	}

	p1, next, err := list(store.Page{Size: 20})
	ok(t, err)
	eq(t, "page 1", ids(p1, msgID), want[:20])
	p2, next, err := list(store.Page{Size: 20, Token: next})
	ok(t, err)
	eq(t, "page 2", ids(p2, msgID), want[20:40])
	p3, next, err := list(store.Page{Size: 20, Token: next})
	ok(t, err)
	eq(t, "last page", ids(p3, msgID), want[40:])
	eq(t, "no token after last page", next, "")

	// Exactly one full last page still ends with "".
	_, next, err = list(store.Page{Size: 45})
	ok(t, err)
	eq(t, "exact fit", next, "")

	// Size <= 0 means the default of 20.
	d, next, err := list(store.Page{})
	ok(t, err)
	eq(t, "default size", len(d), 20)
	if next == "" {
		t.Fatal("default page should have a next token")
	}

	// Sizes above 100 are capped.
	for i := 45; i < 110; i++ {
		newMessage(t, db, c, "", i)
	}
	big, _, err := list(store.Page{Size: 1000})
	ok(t, err)
	eq(t, "capped size", len(big), 100)

	bad := []string{"!!!", "abc", base64.RawURLEncoding.EncodeToString([]byte(`{"x":1}`)), base64.RawURLEncoding.EncodeToString([]byte(`not json`))}
	for _, tok := range bad {
		_, _, err := list(store.Page{Token: tok})
		wantErr(t, err, model.ErrInvalidQuery)
	}
}

// testPaginationStable checks that rows inserted between page fetches
// neither repeat nor hide rows of the walk in progress.
func testPaginationStable(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	c := newConv(t, db, f.bot.ID, "c", "", 0)
	var want []string
	for i := range 25 {
		want = append([]string{newMessage(t, db, c, "", 100+i).ID}, want...)
	}
	var got []string
	p := store.Page{Size: 10}
	for i := 0; ; i++ {
		page, next, err := db.Chat().ListMessages(ctx, f.bot.ID, c.ID, p)
		ok(t, err)
		got = append(got, ids(page, msgID)...)
		// Newer rows, and one older than everything, arrive meanwhile.
		newMessage(t, db, c, "", 200+i)
		newMessage(t, db, c, "", 50+i)
		if next == "" {
			break
		}
		p.Token = next
	}
	// The walk sees the original rows in order; the one old row inserted
	// after page 1 is older than the cursor and so shows up at the end.
	if len(got) < len(want) {
		t.Fatalf("walk returned %d rows, want at least %d", len(got), len(want))
	}
	eq(t, "stable walk", got[:len(want)], want)
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("row %s returned twice", id)
		}
		seen[id] = true
	}
}

func testChatUsers(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Chat()
	u := &model.ChatUser{BotID: f.bot.ID, ID: "fid-1", Name: "N", PictureURL: "p", Profile: "prof", CreatedAt: at(1)}
	ok(t, r.CreateUser(ctx, u))
	got, err := r.GetUser(ctx, f.bot.ID, "fid-1")
	ok(t, err)
	eq(t, "user", got, u)
	wantErr(t, r.CreateUser(ctx, &model.ChatUser{BotID: f.bot.ID, ID: "fid-1"}), model.ErrAlreadyExists)
	gen := &model.ChatUser{BotID: f.bot.ID}
	ok(t, r.CreateUser(ctx, gen))
	if gen.ID == "" {
		t.Fatal("no id generated")
	}
	_, err = r.GetUser(ctx, f.bot.ID, "nope")
	wantErr(t, err, model.ErrNotFound)

	u.Name, u.Profile, u.UpdatedAt = "N2", "", at(5)
	ok(t, r.UpdateUser(ctx, u))
	got, err = r.GetUser(ctx, f.bot.ID, "fid-1")
	ok(t, err)
	eq(t, "updated user", got, u)
	wantErr(t, r.UpdateUser(ctx, &model.ChatUser{BotID: f.bot.ID, ID: "nope"}), model.ErrNotFound)

	ok(t, r.DeleteUser(ctx, f.bot.ID, "fid-1"))
	wantErr(t, r.DeleteUser(ctx, f.bot.ID, "fid-1"), model.ErrNotFound)
	_, err = r.GetUser(ctx, f.bot.ID, "fid-1")
	wantErr(t, err, model.ErrNotFound)
}

func convID(c *model.Conversation) string { return c.ID }

func testConversations(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Chat()
	newUser(t, db, f.bot.ID, "u1")
	newUser(t, db, f.bot.ID, "u2")
	c1 := newConv(t, db, f.bot.ID, "c1", "u1", 1)
	c2 := newConv(t, db, f.bot.ID, "c2", "u2", 2)
	c3 := newConv(t, db, f.bot.ID, "c3", "u1", 3)
	got, err := r.GetConversation(ctx, f.bot.ID, "c1")
	ok(t, err)
	eq(t, "conversation", got, c1)
	wantErr(t, r.CreateConversation(ctx, &model.Conversation{BotID: f.bot.ID, ID: "c1"}), model.ErrAlreadyExists)
	_, err = r.GetConversation(ctx, f.bot.ID, "nope")
	wantErr(t, err, model.ErrNotFound)

	mine := collect(t, 1, func(p store.Page) ([]*model.Conversation, string, error) {
		return r.ListConversations(ctx, f.bot.ID, "u1", p)
	})
	eq(t, "owned, newest first", ids(mine, convID), []string{c3.ID, c1.ID})
	everything := collect(t, 2, func(p store.Page) ([]*model.Conversation, string, error) {
		return r.ListBotConversations(ctx, f.bot.ID, "", p)
	})
	eq(t, "all, newest first", ids(everything, convID), []string{c3.ID, c2.ID, c1.ID})

	// Search: a message's text, a user's id or name, the conversation id;
	// case-insensitive; LIKE's wildcards are plain characters.
	u2, err := r.GetUser(ctx, f.bot.ID, "u2")
	ok(t, err)
	u2.Name, u2.UpdatedAt = "Zoë Martin", at(9)
	ok(t, r.UpdateUser(ctx, u2))
	newUser(t, db, f.bot.ID, "helper")
	ok(t, r.AddParticipant(ctx, f.bot.ID, "c3", "helper", at(4)))
	for i, text := range []string{"Where is my ORDER?", "100% sure", "under_score"} {
		conv := []*model.Conversation{c1, c3, c3}[i]
		m := &model.Message{BotID: f.bot.ID, ConversationID: conv.ID, UserID: conv.OwnerID, Direction: model.DirectionIncoming,
			Payload: json.RawMessage(fmt.Sprintf(`{"type":"text","text":%q}`, text)), CreatedAt: at(10 + i)}
		ok(t, r.CreateMessage(ctx, m))
	}
	for _, c := range []struct {
		search string
		want   []string
	}{
		{"order", []string{c1.ID}},
		{"zoë", []string{c2.ID}},
		{"MARTIN", []string{c2.ID}},
		{"helper", []string{c3.ID}},
		{"u1", []string{c3.ID, c1.ID}},
		{"c2", []string{c2.ID}},
		{"100%", []string{c3.ID}},
		{"%", []string{c3.ID}},
		{"r_s", []string{c3.ID}},
		{"_", []string{c3.ID}},
		{"type", []string{}},
		{"nothing like it", []string{}},
	} {
		found := collect(t, 1, func(p store.Page) ([]*model.Conversation, string, error) {
			return r.ListBotConversations(ctx, f.bot.ID, c.search, p)
		})
		eq(t, "search "+c.search, ids(found, convID), c.want)
	}

	// Deleting a conversation takes its content with it.
	ok(t, r.AddParticipant(ctx, f.bot.ID, "c1", "u1", at(1)))
	m := newMessage(t, db, c1, "u1", 1)
	e := &model.Event{BotID: f.bot.ID, ConversationID: "c1", UserID: "u1", Type: "custom", Payload: json.RawMessage(`{}`)}
	ok(t, r.CreateEvent(ctx, e))
	ok(t, db.Signals().AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated}))
	ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: "c1", Kind: model.TurnMessage, RefID: m.ID}))
	ok(t, r.DeleteConversation(ctx, f.bot.ID, "c1"))
	wantErr(t, r.DeleteConversation(ctx, f.bot.ID, "c1"), model.ErrNotFound)
	_, err = r.GetMessage(ctx, f.bot.ID, m.ID)
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetEvent(ctx, f.bot.ID, e.ID)
	wantErr(t, err, model.ErrNotFound)
	isP, err := r.IsParticipant(ctx, f.bot.ID, "c1", "u1")
	ok(t, err)
	eq(t, "participant gone", isP, false)
	sigs, err := db.Signals().SignalsAfter(ctx, f.bot.ID, "c1", 0, 10)
	ok(t, err)
	eq(t, "signals gone", len(sigs), 0)
	turns, err := db.Signals().PendingTurns(ctx, f.bot.ID, "c1", 10)
	ok(t, err)
	eq(t, "turns gone", len(turns), 0)
	// The user survives.
	_, err = r.GetUser(ctx, f.bot.ID, "u1")
	ok(t, err)
	// A new conversation with the same id starts a fresh signal log.
	newConv(t, db, f.bot.ID, "c1", "u1", 9)
	s := &model.Signal{BotID: f.bot.ID, ConversationID: "c1", Type: model.SignalMessageCreated}
	ok(t, db.Signals().AppendSignal(ctx, s))
	eq(t, "fresh seq", s.Seq, int64(1))
}

func testParticipants(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Chat()
	c := newConv(t, db, f.bot.ID, "c", "u0", 0)
	var want []string
	for i := range 5 {
		u := newUser(t, db, f.bot.ID, fmt.Sprintf("u%d", 4-i)) // ids sort opposite to insertion
		ok(t, r.AddParticipant(ctx, f.bot.ID, c.ID, u.ID, at(i)))
		want = append(want, u.ID)
	}
	wantErr(t, r.AddParticipant(ctx, f.bot.ID, c.ID, "u4", at(9)), model.ErrAlreadyExists)
	wantErr(t, r.AddParticipant(ctx, f.bot.ID, c.ID, "ghost", at(9)), model.ErrNotFound)

	list := collect(t, 2, func(p store.Page) ([]*model.ChatUser, string, error) {
		return r.ListParticipants(ctx, f.bot.ID, c.ID, p)
	})
	eq(t, "order added", ids(list, func(u *model.ChatUser) string { return u.ID }), want)
	eq(t, "user fields", list[0].Name, "user u4")

	isP, err := r.IsParticipant(ctx, f.bot.ID, c.ID, "u2")
	ok(t, err)
	eq(t, "is participant", isP, true)
	// RequireParticipant, in a transaction as a message's write runs it.
	requireIn := func(user string) error {
		return db.InTx(ctx, func(tx store.Store) error { return tx.Chat().RequireParticipant(ctx, f.bot.ID, c.ID, user) })
	}
	notParticipant := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotParticipant) {
			t.Fatalf("%s: want ErrNotParticipant, got %v", what, err)
		}
	}
	ok(t, requireIn("u2"))
	notParticipant("a user who never was", requireIn("ghost"))
	ok(t, r.RemoveParticipant(ctx, f.bot.ID, c.ID, "u2"))
	notParticipant("a participant removed", requireIn("u2"))
	wantErr(t, r.RemoveParticipant(ctx, f.bot.ID, c.ID, "u2"), model.ErrNotFound)
	isP, err = r.IsParticipant(ctx, f.bot.ID, c.ID, "u2")
	ok(t, err)
	eq(t, "removed", isP, false)

	// Deleting a user ends their participations.
	ok(t, r.DeleteUser(ctx, f.bot.ID, "u3"))
	isP, err = r.IsParticipant(ctx, f.bot.ID, c.ID, "u3")
	ok(t, err)
	eq(t, "deleted user", isP, false)
	list, _, err = r.ListParticipants(ctx, f.bot.ID, c.ID, store.Page{})
	ok(t, err)
	eq(t, "remaining", ids(list, func(u *model.ChatUser) string { return u.ID }), []string{"u4", "u1", "u0"})
}

func testMessages(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Chat()
	c := newConv(t, db, f.bot.ID, "c", "", 0)
	m := &model.Message{BotID: f.bot.ID, ConversationID: c.ID, UserID: "u", Payload: json.RawMessage(`{"text":"hi"}`),
		Metadata: json.RawMessage(`{"k":"v"}`), Tags: map[string]string{"a": "b"}, Direction: model.DirectionOutgoing, CreatedAt: at(1)}
	ok(t, r.CreateMessage(ctx, m))
	got, err := r.GetMessage(ctx, f.bot.ID, m.ID)
	ok(t, err)
	eq(t, "message", got, m)
	plain := newMessage(t, db, c, "u", 2)
	got, err = r.GetMessage(ctx, f.bot.ID, plain.ID)
	ok(t, err)
	if got.Metadata != nil || got.Tags != nil {
		t.Fatalf("nil metadata/tags should read back nil, got %s %v", got.Metadata, got.Tags)
	}
	wantErr(t, r.CreateMessage(ctx, &model.Message{BotID: f.bot.ID, ID: m.ID, ConversationID: c.ID, Payload: json.RawMessage(`{}`)}), model.ErrAlreadyExists)
	wantErr(t, r.CreateMessage(ctx, &model.Message{BotID: f.bot.ID, ConversationID: "nope", Payload: json.RawMessage(`{}`)}), model.ErrNotFound)

	list, next, err := r.ListMessages(ctx, f.bot.ID, c.ID, store.Page{})
	ok(t, err)
	eq(t, "newest first", ids(list, msgID), []string{plain.ID, m.ID})
	eq(t, "next", next, "")

	ok(t, r.DeleteMessage(ctx, f.bot.ID, m.ID))
	wantErr(t, r.DeleteMessage(ctx, f.bot.ID, m.ID), model.ErrNotFound)
	_, err = r.GetMessage(ctx, f.bot.ID, m.ID)
	wantErr(t, err, model.ErrNotFound)
}

func testEvents(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	r := db.Chat()
	newConv(t, db, f.bot.ID, "c", "", 0)
	e := &model.Event{BotID: f.bot.ID, ConversationID: "c", UserID: "u", Type: "t", Payload: json.RawMessage(`{"x":[1,2]}`), CreatedAt: at(1)}
	ok(t, r.CreateEvent(ctx, e))
	got, err := r.GetEvent(ctx, f.bot.ID, e.ID)
	ok(t, err)
	eq(t, "event", got, e)
	// Events outside any conversation are allowed.
	free := &model.Event{BotID: f.bot.ID, Type: "t", Payload: json.RawMessage(`{}`), CreatedAt: at(2)}
	ok(t, r.CreateEvent(ctx, free))
	got, err = r.GetEvent(ctx, f.bot.ID, free.ID)
	ok(t, err)
	eq(t, "free event", got, free)
	wantErr(t, r.CreateEvent(ctx, &model.Event{BotID: f.bot.ID, ConversationID: "nope", Payload: json.RawMessage(`{}`)}), model.ErrNotFound)
	wantErr(t, r.CreateEvent(ctx, &model.Event{BotID: f.bot.ID, ID: e.ID, Payload: json.RawMessage(`{}`)}), model.ErrAlreadyExists)
	_, err = r.GetEvent(ctx, f.bot.ID, "nope")
	wantErr(t, err, model.ErrNotFound)
}

func testStates(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	r := db.States()
	got, err := r.Get(ctx, f.bot.ID, store.ScopeUser, "u1")
	ok(t, err)
	if got != nil {
		t.Fatalf("missing state = %s, want nil", got)
	}
	ok(t, r.Put(ctx, f.bot.ID, store.ScopeUser, "u1", json.RawMessage(`{"a":1}`)))
	ok(t, r.Put(ctx, f.bot.ID, store.ScopeConversation, "u1", json.RawMessage(`{"c":1}`)))
	ok(t, r.Put(ctx, other.ID, store.ScopeUser, "u1", json.RawMessage(`{"o":1}`)))
	got, err = r.Get(ctx, f.bot.ID, store.ScopeUser, "u1")
	ok(t, err)
	eq(t, "state", string(got), `{"a":1}`)
	ok(t, r.Put(ctx, f.bot.ID, store.ScopeUser, "u1", json.RawMessage(`{"a":2}`)))
	got, err = r.Get(ctx, f.bot.ID, store.ScopeUser, "u1")
	ok(t, err)
	eq(t, "overwritten", string(got), `{"a":2}`)
	got, err = r.Get(ctx, f.bot.ID, store.ScopeConversation, "u1")
	ok(t, err)
	eq(t, "by scope", string(got), `{"c":1}`)
	got, err = r.Get(ctx, other.ID, store.ScopeUser, "u1")
	ok(t, err)
	eq(t, "by bot", string(got), `{"o":1}`)
	got, err = r.Get(ctx, f.bot.ID, store.ScopeBot, f.bot.ID)
	ok(t, err)
	if got != nil {
		t.Fatalf("bot state = %s, want nil", got)
	}

	// A turn's three states in one read, each by its scope and owner,
	// with its user and conversation (nil while they do not exist).
	ts, err := r.GetTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	if string(ts.UserState) != `{"a":2}` || ts.ConvState != nil || ts.BotState != nil || ts.User != nil || ts.Conversation != nil {
		t.Fatalf("turn start = %+v; want the user's state only", ts)
	}
	ok(t, r.Put(ctx, f.bot.ID, store.ScopeConversation, "c1", json.RawMessage(`{"c":2}`)))
	ok(t, r.Put(ctx, f.bot.ID, store.ScopeBot, f.bot.ID, json.RawMessage(`{"b":1}`)))
	ok(t, r.Put(ctx, f.bot.ID, store.ScopeUser, "c1", json.RawMessage(`{"wrong":"scope"}`)))
	u := &model.ChatUser{BotID: f.bot.ID, ID: "u1", Name: "Ann", PictureURL: "https://p", Profile: "pro", Tags: map[string]string{"k": "v"}}
	ok(t, db.Chat().CreateUser(ctx, u))
	c := &model.Conversation{BotID: f.bot.ID, ID: "c1", OwnerID: "u1", Integration: "telegram", Channel: "dm", Tags: map[string]string{"t": "x"}}
	ok(t, db.Chat().CreateConversation(ctx, c))
	newUser(t, db, other.ID, "u1")
	ts, err = r.GetTurn(ctx, f.bot.ID, "u1", "c1")
	ok(t, err)
	eq(t, "turn user state", string(ts.UserState), `{"a":2}`)
	eq(t, "turn conversation state", string(ts.ConvState), `{"c":2}`)
	eq(t, "turn bot state", string(ts.BotState), `{"b":1}`)
	wantUser, _ := db.Chat().GetUser(ctx, f.bot.ID, "u1")
	wantConv, _ := db.Chat().GetConversation(ctx, f.bot.ID, "c1")
	eq(t, "turn user", ts.User, wantUser)
	eq(t, "turn conversation", ts.Conversation, wantConv)
	ts, err = r.GetTurn(ctx, other.ID, "u1", "c1")
	ok(t, err)
	if string(ts.UserState) != `{"o":1}` || ts.ConvState != nil || ts.BotState != nil || ts.Conversation != nil || ts.User == nil || ts.User.BotID != other.ID {
		t.Fatalf("other bot's turn start = %+v", ts)
	}
}

func testInTx(t *testing.T, db store.DB) {
	ctx := t.Context()
	boom := errors.New("boom")

	err := db.InTx(ctx, func(tx store.Store) error {
		a := newAccount(t, tx, "rollback@example.com")
		// The transaction sees its own writes.
		_, err := tx.Accounts().Get(ctx, a.ID)
		ok(t, err)
		newWorkspace(t, tx, a, "rb", 0)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx error = %v, want boom", err)
	}
	_, err = db.Accounts().GetByEmail(ctx, "rollback@example.com")
	wantErr(t, err, model.ErrNotFound)
	_, err = db.Workspaces().GetByHandle(ctx, "rb")
	wantErr(t, err, model.ErrNotFound)

	// Nested calls join the outer transaction: an outer failure undoes the
	// inner work, even though the inner call succeeded.
	err = db.InTx(ctx, func(tx store.Store) error {
		ok(t, tx.InTx(ctx, func(inner store.Store) error {
			newAccount(t, inner, "inner@example.com")
			return nil
		}))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("nested InTx error = %v", err)
	}
	_, err = db.Accounts().GetByEmail(ctx, "inner@example.com")
	wantErr(t, err, model.ErrNotFound)

	// A model error from a store call inside comes back unchanged.
	newAccount(t, db, "dup@example.com")
	err = db.InTx(ctx, func(tx store.Store) error {
		newAccount(t, tx, "first@example.com")
		return tx.Accounts().Create(ctx, &model.Account{Email: "dup@example.com"})
	})
	wantErr(t, err, model.ErrAlreadyExists)
	_, err = db.Accounts().GetByEmail(ctx, "first@example.com")
	wantErr(t, err, model.ErrNotFound)

	// Success commits.
	ok(t, db.InTx(ctx, func(tx store.Store) error {
		newAccount(t, tx, "commit@example.com")
		return nil
	}))
	_, err = db.Accounts().GetByEmail(ctx, "commit@example.com")
	ok(t, err)

	// A panic rolls back and propagates.
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		_ = db.InTx(ctx, func(tx store.Store) error {
			newAccount(t, tx, "panic@example.com")
			panic("boom")
		})
	}()
	_, err = db.Accounts().GetByEmail(ctx, "panic@example.com")
	wantErr(t, err, model.ErrNotFound)
}
