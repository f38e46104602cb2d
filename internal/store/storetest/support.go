package storetest

import (
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func testHandoffs(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	for i, id := range []string{"c1", "c2", "c3"} {
		newConv(t, db, f.bot.ID, id, "", i)
	}
	newConv(t, db, other.ID, "c1", "", 0)
	r := db.Handoffs()

	_, err := r.Get(ctx, f.bot.ID, "c1")
	wantErr(t, err, model.ErrNotFound)
	wantErr(t, r.Delete(ctx, f.bot.ID, "c1"), model.ErrNotFound)

	// Request stores once; a second request leaves the first.
	created, err := r.Request(ctx, &model.Handoff{BotID: f.bot.ID, ConversationID: "c2", Status: model.HandoffWaiting,
		Reason: "first", RequestedBy: "bot", RequestedAt: at(20)})
	ok(t, err)
	eq(t, "created", created, true)
	created, err = r.Request(ctx, &model.Handoff{BotID: f.bot.ID, ConversationID: "c2", Status: model.HandoffWaiting,
		Reason: "second", RequestedBy: "bot", RequestedAt: at(30)})
	ok(t, err)
	eq(t, "not created twice", created, false)
	h, err := r.Get(ctx, f.bot.ID, "c2")
	ok(t, err)
	eq(t, "first request kept", *h, model.Handoff{BotID: f.bot.ID, ConversationID: "c2", Status: model.HandoffWaiting,
		Reason: "first", RequestedBy: "bot", RequestedAt: at(20)})
	_, err = r.Request(ctx, &model.Handoff{BotID: f.bot.ID, ConversationID: "nope", Status: model.HandoffWaiting, RequestedAt: at(1)})
	wantErr(t, err, model.ErrNotFound)

	ok(t, r.Put(ctx, &model.Handoff{BotID: f.bot.ID, ConversationID: "c1", Status: model.HandoffWaiting, RequestedAt: at(10)}))
	ok(t, r.Put(ctx, &model.Handoff{BotID: other.ID, ConversationID: "c1", Status: model.HandoffWaiting, RequestedAt: at(5)}))
	// Put replaces: taking c2 over.
	taken := model.Handoff{BotID: f.bot.ID, ConversationID: "c2", Status: model.HandoffActive, Reason: "first",
		RequestedBy: "bot", RequestedAt: at(20), AgentAccountID: f.acct.ID, AgentUserID: model.AgentUserID(f.acct.ID),
		AgentName: "Ann", TakenAt: at(40)}
	ok(t, r.Put(ctx, &taken))
	h, err = r.Get(ctx, f.bot.ID, "c2")
	ok(t, err)
	eq(t, "taken", *h, taken)

	key := func(h *model.Handoff) string { return h.ConversationID }
	all := collect(t, 1, func(p store.Page) ([]*model.Handoff, string, error) { return r.List(ctx, f.bot.ID, "", p) })
	eq(t, "longest waiting first, this bot only", ids(all, key), []string{"c1", "c2"})
	waiting := collect(t, 10, func(p store.Page) ([]*model.Handoff, string, error) {
		return r.List(ctx, f.bot.ID, model.HandoffWaiting, p)
	})
	eq(t, "status filter", ids(waiting, key), []string{"c1"})

	// The dispatcher reads whether a conversation is in handoff with its
	// pending turns.
	for _, conv := range []string{"c2", "c3"} {
		ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: conv, Kind: model.TurnEvent, RefID: "x", CreatedAt: at(50)}))
		ok(t, db.Signals().EnqueueTurn(ctx, &model.Turn{BotID: f.bot.ID, ConversationID: conv, Kind: model.TurnEvent, RefID: "y", CreatedAt: at(51)}))
		ps, err := db.Signals().PendingTurnInputs(ctx, f.bot.ID, conv, 10)
		ok(t, err)
		eq(t, conv+" turns", len(ps), 2)
		for _, p := range ps {
			eq(t, conv+" in handoff", p.Handoff, conv == "c2")
		}
	}

	ok(t, r.Delete(ctx, f.bot.ID, "c2"))
	ps, err := db.Signals().PendingTurnInputs(ctx, f.bot.ID, "c2", 10)
	ok(t, err)
	eq(t, "handed back", ps[0].Handoff, false)
	_, err = r.Get(ctx, f.bot.ID, "c2")
	wantErr(t, err, model.ErrNotFound)
	// Deleting the conversation ends its handoff.
	ok(t, db.Chat().DeleteConversation(ctx, f.bot.ID, "c1"))
	_, err = r.Get(ctx, f.bot.ID, "c1")
	wantErr(t, err, model.ErrNotFound)
	_, err = r.Get(ctx, other.ID, "c1")
	ok(t, err)
}

func testActivity(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	hour := time.Hour
	day0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	h := func(n int, min int) time.Time {
		return day0.Add(time.Duration(n)*hour + time.Duration(min)*time.Minute)
	}
	user := func(botID, id string, created time.Time) {
		ok(t, db.Chat().CreateUser(ctx, &model.ChatUser{BotID: botID, ID: id, CreatedAt: created}))
	}
	conv := func(botID, id string, created time.Time) *model.Conversation {
		c := &model.Conversation{BotID: botID, ID: id, CreatedAt: created}
		ok(t, db.Chat().CreateConversation(ctx, c))
		return c
	}
	msg := func(c *model.Conversation, userID, dir string, at time.Time) {
		ok(t, db.Chat().CreateMessage(ctx, &model.Message{BotID: c.BotID, ConversationID: c.ID, UserID: userID,
			Payload: []byte(`{"text":"x"}`), Direction: dir, CreatedAt: at}))
	}
	// Hour 0: u1 (new) in c1, 2 in + 2 bot replies. Hour 2: u1 again
	// (returning) and u2 (new) in c2: 3 in, 1 out, 1 agent reply.
	user(f.bot.ID, "u1", h(0, 1))
	user(f.bot.ID, "u2", h(2, 1))
	user(f.bot.ID, model.AgentUserID(f.acct.ID), h(2, 2)) // an operator: not a new user
	user(f.bot.ID, f.bot.ID, h(0, 0))                     // the bot's own user
	c1 := conv(f.bot.ID, "c1", h(0, 1))
	c2 := conv(f.bot.ID, "c2", h(2, 1))
	msg(c1, "u1", model.DirectionIncoming, h(0, 2))
	msg(c1, f.bot.ID, model.DirectionOutgoing, h(0, 3))
	msg(c1, "u1", model.DirectionIncoming, h(0, 4))
	msg(c1, f.bot.ID, model.DirectionOutgoing, h(0, 5))
	msg(c1, "u1", model.DirectionIncoming, h(2, 5))
	msg(c2, "u2", model.DirectionIncoming, h(2, 6))
	msg(c2, "u2", model.DirectionIncoming, h(2, 7))
	msg(c2, f.bot.ID, model.DirectionOutgoing, h(2, 8))
	msg(c2, model.AgentUserID(f.acct.ID), model.DirectionOutgoing, h(2, 9))
	a := db.Activity()
	for i, d := range []int{100, 300, 200, 400} {
		ok(t, a.RecordTurn(ctx, &model.TurnRun{BotID: f.bot.ID, ConversationID: "c1", Seq: int64(i + 1), RanAt: h(0, 10+i),
			Duration: time.Duration(d) * time.Millisecond, Failed: i == 3}))
	}
	// The same turn twice is recorded once.
	ok(t, a.RecordTurn(ctx, &model.TurnRun{BotID: f.bot.ID, ConversationID: "c1", Seq: 1, RanAt: h(0, 10), Duration: time.Second}))
	ok(t, a.RecordTurn(ctx, &model.TurnRun{BotID: f.bot.ID, ConversationID: "c2", Seq: 1, RanAt: h(2, 10), Duration: 50 * time.Millisecond}))
	// Another bot's data is not counted.
	user(other.ID, "u1", h(0, 1))
	oc := conv(other.ID, "c1", h(0, 1))
	msg(oc, "u1", model.DirectionIncoming, h(0, 2))
	ok(t, a.RecordTurn(ctx, &model.TurnRun{BotID: other.ID, ConversationID: "c1", Seq: 1, RanAt: h(0, 10), Duration: time.Second}))

	ms := func(ds ...int) []time.Duration {
		out := []time.Duration{}
		for _, d := range ds {
			out = append(out, time.Duration(d)*time.Millisecond)
		}
		return out
	}
	got, err := a.Buckets(ctx, f.bot.ID, day0, day0.Add(24*hour), hour)
	ok(t, err)
	want := []model.ActivityBucket{
		{Start: h(0, 0), MessagesIn: 2, MessagesOut: 2, ActiveUsers: 1, NewUsers: 1, Conversations: 1, NewConversations: 1,
			Turns: 4, TurnFailures: 1, TurnDurations: ms(100, 200, 300, 400)},
		{Start: h(2, 0), MessagesIn: 3, MessagesOut: 1, AgentMessages: 1, ActiveUsers: 2, ReturningUsers: 1, NewUsers: 1,
			Conversations: 2, NewConversations: 1, Turns: 1, TurnDurations: ms(50)},
	}
	eq(t, "hourly", got, want)

	got, err = a.Buckets(ctx, f.bot.ID, day0, day0.Add(24*hour), 24*hour)
	ok(t, err)
	eq(t, "daily", got, []model.ActivityBucket{{Start: day0, MessagesIn: 5, MessagesOut: 3, AgentMessages: 1, ActiveUsers: 2,
		NewUsers: 2, Conversations: 2, NewConversations: 2, Turns: 5, TurnFailures: 1, TurnDurations: ms(50, 100, 200, 300, 400)}})

	// The range is [from, to).
	got, err = a.Buckets(ctx, f.bot.ID, h(1, 0), h(2, 0), hour)
	ok(t, err)
	eq(t, "empty range", len(got), 0)
}
