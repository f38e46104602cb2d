package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// testBotIsolation checks that every bot-scoped read ignores another bot's
// data even when ids are known.
func testBotIsolation(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	b := f.bot
	o := newBot(t, db, f.ws, nil, 1)
	r := db.Chat()
	newUser(t, db, b.ID, "u")
	c := newConv(t, db, b.ID, "c", "u", 1)
	ok(t, r.AddParticipant(ctx, b.ID, "c", "u", at(1)))
	m := newMessage(t, db, c, "u", 1)
	e := &model.Event{BotID: b.ID, ConversationID: "c", Type: "t", Payload: json.RawMessage(`{}`)}
	ok(t, r.CreateEvent(ctx, e))
	ok(t, db.Signals().AppendSignal(ctx, &model.Signal{BotID: b.ID, ConversationID: "c", Type: "x"}))
	ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: b.ID, ConversationID: "c", Kind: model.TurnMessage}))

	_, err := r.GetUser(ctx, o.ID, "u")
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetConversation(ctx, o.ID, "c")
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetMessage(ctx, o.ID, m.ID)
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetEvent(ctx, o.ID, e.ID)
	wantErr(t, err, model.ErrNotFound)
	wantErr(t, r.DeleteMessage(ctx, o.ID, m.ID), model.ErrNotFound)
	wantErr(t, r.DeleteConversation(ctx, o.ID, "c"), model.ErrNotFound)
	wantErr(t, r.DeleteUser(ctx, o.ID, "u"), model.ErrNotFound)
	wantErr(t, r.UpdateUser(ctx, &model.ChatUser{BotID: o.ID, ID: "u"}), model.ErrNotFound)
	wantErr(t, db.Signals().AppendSignal(ctx, &model.Signal{BotID: o.ID, ConversationID: "c", Type: "x"}), model.ErrNotFound)
	isP, err := r.IsParticipant(ctx, o.ID, "c", "u")
	ok(t, err)
	eq(t, "participant via other bot", isP, false)
	wantErr(t, r.RemoveParticipant(ctx, o.ID, "c", "u"), model.ErrNotFound)

	ms, _, err := r.ListMessages(ctx, o.ID, "c", store.Page{})
	ok(t, err)
	eq(t, "messages via other bot", len(ms), 0)
	ps, _, err := r.ListParticipants(ctx, o.ID, "c", store.Page{})
	ok(t, err)
	eq(t, "participants via other bot", len(ps), 0)
	cs, _, err := r.ListBotConversations(ctx, o.ID, "", store.Page{})
	ok(t, err)
	eq(t, "conversations of other bot", len(cs), 0)
	cs, _, err = r.ListConversations(ctx, o.ID, "u", store.Page{})
	ok(t, err)
	eq(t, "owned conversations of other bot", len(cs), 0)
	sg, err := db.Signals().SignalsAfter(ctx, o.ID, "c", 0, 10)
	ok(t, err)
	eq(t, "signals via other bot", len(sg), 0)
	tn, err := db.Signals().PendingTurns(ctx, o.ID, "c", 10)
	ok(t, err)
	eq(t, "turns via other bot", len(tn), 0)
	ok(t, db.Signals().CompleteTurn(ctx, o.ID, "c", 1))
	tn, err = db.Signals().PendingTurns(ctx, b.ID, "c", 10)
	ok(t, err)
	eq(t, "other bot cannot complete our turn", len(tn), 1)

	// The same ids can be reused by another bot independently.
	newUser(t, db, o.ID, "u")
	newConv(t, db, o.ID, "c", "u", 2)
	s := &model.Signal{BotID: o.ID, ConversationID: "c", Type: "x"}
	ok(t, db.Signals().AppendSignal(ctx, s))
	eq(t, "independent sequence", s.Seq, int64(1))
}

func testBotDelete(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	keep := newBot(t, db, f.ws, map[string]string{"k": "v"}, 1)
	for _, b := range []*model.Bot{f.bot, keep} {
		fill(t, db, b)
	}
	ok(t, db.Bots().Delete(ctx, f.ws.ID, f.bot.ID))
	checkBotData(t, db, f.bot, false)
	checkBotData(t, db, keep, true)
	got, err := db.Workspaces().Get(ctx, f.ws.ID)
	ok(t, err)
	eq(t, "bot count after delete", got.BotCount, 1)
}

// fill gives a bot one of everything.
func fill(t *testing.T, db store.DB, b *model.Bot) {
	t.Helper()
	ctx := t.Context()
	r := db.Chat()
	ok(t, db.Bots().PutIntegration(ctx, &model.Integration{BotID: b.ID, Name: "chat", WebhookID: "wh-" + b.ID}))
	ok(t, db.Bots().CreateVersion(ctx, &model.BotVersion{BotID: b.ID, Code: "x"}))
	ok(t, db.Tokens().Create(ctx, &model.Token{Kind: model.TokenBotKey, BotID: b.ID, WorkspaceID: b.WorkspaceID, Hash: "key-" + b.ID}))
	ok(t, db.Logs().Append(ctx, &model.LogEntry{BotID: b.ID, Message: "m"}))
	_, err := db.Issues().Report(ctx, &model.Issue{BotID: b.ID, Code: "E"}, &model.IssueEvent{})
	ok(t, err)
	newUser(t, db, b.ID, "u")
	c := newConv(t, db, b.ID, "c", "u", 1)
	ok(t, r.AddParticipant(ctx, b.ID, "c", "u", at(1)))
	newMessage(t, db, c, "u", 1)
	ok(t, r.CreateEvent(ctx, &model.Event{BotID: b.ID, ID: "ev-" + b.ID, ConversationID: "c", Type: "t", Payload: json.RawMessage(`{}`)}))
	ok(t, db.Signals().AppendSignal(ctx, &model.Signal{BotID: b.ID, ConversationID: "c", Type: "x"}))
	ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: b.ID, ConversationID: "c", Kind: model.TurnMessage}))
	ok(t, db.States().Put(ctx, b.ID, store.ScopeBot, b.ID, json.RawMessage(`{}`)))
	ok(t, db.Activity().RecordTurn(ctx, &model.TurnRun{BotID: b.ID, ConversationID: "c", Seq: 1, RanAt: at(1), Duration: time.Millisecond}))
}

// checkBotData asserts that all of fill's data exists (or none of it).
func checkBotData(t *testing.T, db store.DB, b *model.Bot, exists bool) {
	t.Helper()
	ctx := t.Context()
	r := db.Chat()
	present := func(what string, n int) {
		t.Helper()
		if (n > 0) != exists {
			t.Fatalf("bot %s: %s count %d, want exists=%v", b.Name, what, n, exists)
		}
	}
	found := func(what string, err error) {
		t.Helper()
		if err != nil && !model.IsNotFound(err) {
			t.Fatalf("%s: %v", what, err)
		}
		present(what, map[bool]int{true: 1, false: 0}[err == nil])
	}
	_, err := db.Bots().GetByID(ctx, b.ID)
	found("bot", err)
	ins, err := db.Bots().Integrations(ctx, b.ID)
	ok(t, err)
	present("integrations", len(ins))
	_, err = db.Bots().IntegrationByWebhook(ctx, "wh-"+b.ID)
	found("integration by webhook", err)
	vs, err := db.Bots().ListVersions(ctx, b.ID)
	ok(t, err)
	present("versions", len(vs))
	ks, err := db.Tokens().ListByBot(ctx, b.ID)
	ok(t, err)
	present("api keys", len(ks))
	_, err = db.Tokens().GetByHash(ctx, "key-"+b.ID)
	found("api key by hash", err)
	ls, _, err := db.Logs().List(ctx, model.LogFilter{BotID: b.ID}, store.Page{})
	ok(t, err)
	present("logs", len(ls))
	is, _, err := db.Issues().List(ctx, b.ID, store.Page{})
	ok(t, err)
	present("issues", len(is))
	_, err = r.GetUser(ctx, b.ID, "u")
	found("user", err)
	_, err = r.GetConversation(ctx, b.ID, "c")
	found("conversation", err)
	ms, _, err := r.ListMessages(ctx, b.ID, "c", store.Page{})
	ok(t, err)
	present("messages", len(ms))
	_, err = r.GetEvent(ctx, b.ID, "ev-"+b.ID)
	found("event", err)
	sg, err := db.Signals().SignalsAfter(ctx, b.ID, "c", 0, 10)
	ok(t, err)
	present("signals", len(sg))
	tn, err := db.Signals().PendingTurns(ctx, b.ID, "c", 10)
	ok(t, err)
	present("turns", len(tn))
	st, err := db.States().Get(ctx, b.ID, store.ScopeBot, b.ID)
	ok(t, err)
	present("state", len(st))
	bk, err := db.Activity().Buckets(ctx, b.ID, at(0), at(10), time.Hour)
	ok(t, err)
	runs := 0
	for _, x := range bk {
		runs += int(x.Turns)
	}
	present("turn runs", runs)
	bs, _, err := db.Bots().List(ctx, store.BotFilter{WorkspaceID: b.WorkspaceID, Tags: b.Tags}, store.Page{})
	ok(t, err)
	n := 0
	for _, x := range bs {
		if x.ID == b.ID {
			n++
		}
	}
	present("listed bots", n)
}

// testConcurrentWrites hammers the store from many goroutines; SQLite must
// queue writers rather than fail with "database is locked".
func testConcurrentWrites(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n*4)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprint("c", i)
			errs <- db.Accounts().Create(ctx, &model.Account{Email: fmt.Sprintf("w%d@example.com", i)})
			errs <- db.InTx(ctx, func(tx store.Store) error {
				if err := tx.Chat().CreateConversation(ctx, &model.Conversation{BotID: f.bot.ID, ID: conv}); err != nil {
					return err
				}
				// Read then write in one transaction: the pattern that
				// deadlocks SQLite with deferred transactions.
				if _, err := tx.Chat().GetConversation(ctx, f.bot.ID, conv); err != nil {
					return err
				}
				return tx.Signals().AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: conv, Type: "x"})
			})
			errs <- db.Logs().Append(ctx, &model.LogEntry{BotID: f.bot.ID, Message: "m"}, &model.LogEntry{BotID: f.bot.ID, Message: "n"})
			_, err := db.Leases().Acquire(ctx, "shared", conv, 0)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		ok(t, err)
	}
	cnt, err := db.Accounts().Count(ctx)
	ok(t, err)
	eq(t, "accounts", cnt, n+1)
	all := collect(t, 100, func(p store.Page) ([]*model.Conversation, string, error) {
		return db.Chat().ListBotConversations(ctx, f.bot.ID, "", p)
	})
	eq(t, "conversations", len(all), n)
}

func testLifecycle(t *testing.T, db store.DB) {
	ctx := t.Context()
	ok(t, db.Ping(ctx))
	ok(t, db.Migrated(ctx))
	if e := db.Engine(); e != "sqlite" && e != "postgres" {
		t.Fatalf("Engine() = %q", e)
	}
}
