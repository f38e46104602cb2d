package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// The Runtime API's storage: tags with filters and look-ups, updates,
// events with schedules, named states with expiry, workflows, tasks and
// analytics counters.

func testRuntimeTags(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	r := db.Chat()
	u1 := &model.ChatUser{BotID: f.bot.ID, ID: "u1", Tags: map[string]string{"ext": "a", "team": "x"}, CreatedAt: at(1)}
	u2 := &model.ChatUser{BotID: f.bot.ID, ID: "u2", Tags: map[string]string{"ext": "b", "team": "x"}, CreatedAt: at(2)}
	ok(t, r.CreateUser(ctx, u1))
	ok(t, r.CreateUser(ctx, u2))
	ok(t, r.CreateUser(ctx, &model.ChatUser{BotID: other.ID, ID: "u1", Tags: map[string]string{"ext": "a"}}))

	got, err := r.FindUserByTags(ctx, f.bot.ID, map[string]string{"team": "x"})
	ok(t, err)
	eq(t, "oldest user with the tag", got.ID, "u1")
	_, err = r.FindUserByTags(ctx, f.bot.ID, map[string]string{"ext": "zzz"})
	wantErr(t, err, model.ErrNotFound)
	us, _, err := r.ListUsers(ctx, f.bot.ID, store.UserFilter{Tags: map[string]string{"ext": "b"}}, store.Page{})
	ok(t, err)
	eq(t, "filtered users", len(us), 1)
	eq(t, "its tags", us[0].Tags, u2.Tags)

	u2.Tags = map[string]string{"ext": "c"}
	ok(t, r.UpdateUser(ctx, u2))
	us, _, err = r.ListUsers(ctx, f.bot.ID, store.UserFilter{Tags: map[string]string{"team": "x"}}, store.Page{})
	ok(t, err)
	eq(t, "tags replaced", len(us), 1)
	vals, _, err := r.TagValues(ctx, f.bot.ID, store.TagsUser, "ext", store.Page{Size: 1})
	ok(t, err)
	eq(t, "first value", vals, []string{"a"})
	vals, _, err = r.TagValues(ctx, f.bot.ID, store.TagsUser, "ext", store.Page{})
	ok(t, err)
	eq(t, "values", vals, []string{"a", "c"})

	c := &model.Conversation{BotID: f.bot.ID, ID: "c1", Integration: "telegram", Channel: "dm", Tags: map[string]string{"thread": "1"}, CreatedAt: at(3)}
	ok(t, r.CreateConversation(ctx, c))
	gc, err := r.GetConversation(ctx, f.bot.ID, "c1")
	ok(t, err)
	eq(t, "conversation", gc, c)
	_, err = r.FindConversationByTags(ctx, f.bot.ID, "chat", "", map[string]string{"thread": "1"})
	wantErr(t, err, model.ErrNotFound)
	fc, err := r.FindConversationByTags(ctx, f.bot.ID, "telegram", "dm", map[string]string{"thread": "1"})
	ok(t, err)
	eq(t, "found conversation", fc.ID, "c1")
	c.Tags = map[string]string{"thread": "1", "topic": "t"}
	ok(t, r.UpdateConversation(ctx, c))
	cs, _, err := r.ListConversationsBy(ctx, f.bot.ID, store.ConversationFilter{Tags: map[string]string{"topic": "t"}, Integration: "telegram"}, store.Page{})
	ok(t, err)
	eq(t, "filtered conversations", len(cs), 1)

	m := &model.Message{BotID: f.bot.ID, ID: "m1", ConversationID: "c1", UserID: "u1", Payload: json.RawMessage(`{"type":"text","text":"x"}`),
		Tags: map[string]string{"k": "v"}, Direction: model.DirectionIncoming, CreatedAt: at(4)}
	ok(t, r.CreateMessage(ctx, m))
	fm, err := r.FindMessageByTags(ctx, f.bot.ID, "c1", map[string]string{"k": "v"})
	ok(t, err)
	eq(t, "found message", fm.ID, "m1")
	m.Tags, m.Payload, m.UpdatedAt = map[string]string{"k": "w"}, json.RawMessage(`{"type":"text","text":"y"}`), at(9)
	ok(t, r.UpdateMessage(ctx, m))
	gm, err := r.GetMessage(ctx, f.bot.ID, "m1")
	ok(t, err)
	eq(t, "updated message", gm, m)
	n, err := r.CountMessages(ctx, f.bot.ID, "c1")
	ok(t, err)
	eq(t, "message count", n, 1)
	ok(t, r.DeleteConversation(ctx, f.bot.ID, "c1"))
	vals, _, err = r.TagValues(ctx, f.bot.ID, store.TagsMessage, "k", store.Page{})
	ok(t, err)
	eq(t, "tags of deleted messages", len(vals), 0)
}

func testRuntimeEvents(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u")
	newConv(t, db, f.bot.ID, "c", "u", 1)
	r := db.Chat()
	due := &model.Event{BotID: f.bot.ID, ConversationID: "c", Type: "later", Payload: json.RawMessage(`{}`), Status: model.EventScheduled, DueAt: at(10), CreatedAt: at(1)}
	ok(t, r.CreateEvent(ctx, due))
	ok(t, r.CreateEvent(ctx, &model.Event{BotID: f.bot.ID, ConversationID: "c", Type: "now", Payload: json.RawMessage(`{}`), CreatedAt: at(2)}))
	es, err := r.DueEvents(ctx, at(5), 10)
	ok(t, err)
	eq(t, "not due yet", len(es), 0)
	es, err = r.DueEvents(ctx, at(10), 10)
	ok(t, err)
	eq(t, "due", len(es), 1)
	ok(t, r.TransitionEvent(ctx, f.bot.ID, due.ID, model.EventScheduled, model.EventProcessed))
	wantErr(t, r.TransitionEvent(ctx, f.bot.ID, due.ID, model.EventScheduled, model.EventCanceled), model.ErrNotFound)
	list, _, err := r.ListEvents(ctx, f.bot.ID, store.EventFilter{Status: model.EventProcessed}, store.Page{})
	ok(t, err)
	eq(t, "processed events", len(list), 2)
}

func testRuntimeStates(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	s := db.RuntimeStates()
	st := &model.State{BotID: f.bot.ID, Type: "bot", OwnerID: f.bot.ID, Name: "n", Payload: json.RawMessage(`{"a":1}`), CreatedAt: at(1), UpdatedAt: at(1)}
	ok(t, s.Put(ctx, st))
	id := st.ID
	st2 := &model.State{BotID: f.bot.ID, Type: "bot", OwnerID: f.bot.ID, Name: "n", Payload: json.RawMessage(`{"a":2}`),
		Expiry: 5, ExpiresAt: at(20), CreatedAt: at(5), UpdatedAt: at(5)}
	ok(t, s.Put(ctx, st2))
	eq(t, "id kept", st2.ID, id)
	eq(t, "creation kept", st2.CreatedAt, at(1))
	got, err := s.Get(ctx, f.bot.ID, "bot", f.bot.ID, "n")
	ok(t, err)
	eq(t, "state", got, st2)
	wantErr(t, s.Create(ctx, &model.State{BotID: f.bot.ID, Type: "bot", OwnerID: f.bot.ID, Name: "n", Payload: json.RawMessage(`{}`)}), model.ErrAlreadyExists)
	exp, err := s.Expired(ctx, at(19), 10)
	ok(t, err)
	eq(t, "not expired", len(exp), 0)
	wantErr(t, s.DeleteExpired(ctx, f.bot.ID, "bot", f.bot.ID, "n", at(19)), model.ErrNotFound)
	exp, err = s.Expired(ctx, at(20), 10)
	ok(t, err)
	eq(t, "expired", len(exp), 1)
	ok(t, s.DeleteExpired(ctx, f.bot.ID, "bot", f.bot.ID, "n", at(20)))
	_, err = s.Get(ctx, f.bot.ID, "bot", f.bot.ID, "n")
	wantErr(t, err, model.ErrNotFound)
}

func testWorkflowsTasksAnalytics(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	w := &model.Workflow{BotID: f.bot.ID, Name: "flow", Status: "pending", Input: json.RawMessage(`{"q":1}`), Output: json.RawMessage(`{}`),
		Tags: map[string]string{"k": "v"}, TimeoutAt: at(100), CreatedAt: at(1), UpdatedAt: at(1)}
	ok(t, db.Workflows().Create(ctx, w))
	got, err := db.Workflows().Get(ctx, f.bot.ID, w.ID)
	ok(t, err)
	eq(t, "workflow", got, w)
	w.Status, w.CompletedAt, w.Output, w.Tags = "completed", at(7), json.RawMessage(`{"r":2}`), nil
	ok(t, db.Workflows().Update(ctx, w))
	ws, _, err := db.Workflows().List(ctx, f.bot.ID, store.WorkflowFilter{Statuses: []string{"completed"}, Name: "flow"}, store.Page{})
	ok(t, err)
	eq(t, "listed", len(ws), 1)
	ws, _, err = db.Workflows().List(ctx, f.bot.ID, store.WorkflowFilter{Tags: map[string]string{"k": "v"}}, store.Page{})
	ok(t, err)
	eq(t, "tag removed", len(ws), 0)
	ok(t, db.Workflows().Delete(ctx, f.bot.ID, w.ID))
	wantErr(t, db.Workflows().Delete(ctx, f.bot.ID, w.ID), model.ErrNotFound)

	task := &model.Task{BotID: f.bot.ID, Type: "review", Data: json.RawMessage(`{}`), Status: "pending", TimeoutAt: at(50), CreatedAt: at(1), UpdatedAt: at(1)}
	ok(t, db.Tasks().Create(ctx, task))
	task.Status = "completed"
	ok(t, db.Tasks().Update(ctx, task))
	ts, _, err := db.Tasks().List(ctx, f.bot.ID, store.TaskFilter{Status: []string{"completed"}}, store.Page{})
	ok(t, err)
	eq(t, "tasks", len(ts), 1)

	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	ok(t, db.Analytics().Add(ctx, f.bot.ID, "x", day, 2))
	ok(t, db.Analytics().Add(ctx, f.bot.ID, "x", day, 3))
	counts, err := db.Analytics().List(ctx, f.bot.ID, day, day)
	ok(t, err)
	eq(t, "counts", counts, []model.AnalyticsCount{{BotID: f.bot.ID, Name: "x", Day: day, Count: 5}})
}
