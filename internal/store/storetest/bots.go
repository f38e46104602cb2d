package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func botID(b *model.Bot) string { return b.ID }

func testBots(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Bots()
	a := newAccount(t, db, "a@example.com")
	w := newWorkspace(t, db, a, "", 0)
	w2 := newWorkspace(t, db, a, "", 1)
	b := &model.Bot{WorkspaceID: w.ID, Name: "b", Description: "d", Dev: true, Type: "adk",
		Tags: map[string]string{"env": "prod"}, Spec: map[string]any{"states": map[string]any{"x": 1.0}, "list": []any{"a"}},
		Secrets: map[string]string{"KEY": "v"}, Code: "export default {}", URL: "https://u", MaxExecutionTime: 30,
		AlwaysAlive: true, SigningSecret: "sig", CreatedBy: a.ID, CreatedAt: at(5)}
	ok(t, r.Create(ctx, b))
	eq(t, "updatedAt defaults to createdAt", b.UpdatedAt, b.CreatedAt)
	got, err := r.Get(ctx, w.ID, b.ID)
	ok(t, err)
	eq(t, "bot", got, b)
	if !got.DeployedAt.IsZero() {
		t.Fatalf("DeployedAt should stay zero, got %v", got.DeployedAt)
	}
	got, err = r.GetByID(ctx, b.ID)
	ok(t, err)
	eq(t, "by id", got, b)
	_, err = r.Get(ctx, w2.ID, b.ID)
	wantErr(t, err, model.ErrNotFound)
	_, err = r.GetByID(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)
	wantErr(t, r.Create(ctx, &model.Bot{ID: b.ID, WorkspaceID: w.ID}), model.ErrAlreadyExists)

	b.Name, b.Dev, b.Tags, b.Spec, b.Secrets, b.VersionID = "b2", false, map[string]string{"env": "dev"}, nil, nil, "v1"
	b.DeployedAt, b.UpdatedAt = at(9), at(10)
	ok(t, r.Update(ctx, b))
	got, err = r.Get(ctx, w.ID, b.ID)
	ok(t, err)
	eq(t, "updated bot", got, b)
	wrong := *b
	wrong.WorkspaceID = w2.ID
	wantErr(t, r.Update(ctx, &wrong), model.ErrNotFound)

	b2 := newBot(t, db, w2, nil, 6)
	all, err := r.ListAll(ctx)
	ok(t, err)
	eq(t, "list all count", len(all), 2)
	if !(contains(all, b.ID) && contains(all, b2.ID)) {
		t.Fatalf("ListAll = %v", all)
	}

	wantErr(t, r.Delete(ctx, w2.ID, b.ID), model.ErrNotFound)
	ok(t, r.Delete(ctx, w.ID, b.ID))
	wantErr(t, r.Delete(ctx, w.ID, b.ID), model.ErrNotFound)
	_, err = r.GetByID(ctx, b.ID)
	wantErr(t, err, model.ErrNotFound)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func testBotList(t *testing.T, db store.DB) {
	ctx := t.Context()
	r := db.Bots()
	a := newAccount(t, db, "a@example.com")
	w := newWorkspace(t, db, a, "", 0)
	w2 := newWorkspace(t, db, a, "", 1)
	b1 := newBot(t, db, w, map[string]string{"env": "prod", "team": "x"}, 1)
	b2 := newBot(t, db, w, map[string]string{"env": "prod", "team": "y"}, 2)
	b3 := newBot(t, db, w, map[string]string{"env": "dev"}, 3)
	b4 := newBot(t, db, w, nil, 4)
	newBot(t, db, w2, map[string]string{"env": "prod", "team": "x"}, 5)
	dev := &model.Bot{WorkspaceID: w.ID, Dev: true, Tags: map[string]string{"env": "prod"}, CreatedAt: at(6)}
	ok(t, r.Create(ctx, dev))

	// b1 is updated last.
	b1.UpdatedAt = at(100)
	ok(t, r.Update(ctx, b1))

	cases := []struct {
		name string
		f    store.BotFilter
		want []string
	}{
		{"default newest first", store.BotFilter{WorkspaceID: w.ID}, []string{b4.ID, b3.ID, b2.ID, b1.ID}},
		{"ascending", store.BotFilter{WorkspaceID: w.ID, Ascending: true}, []string{b1.ID, b2.ID, b3.ID, b4.ID}},
		{"updatedAt", store.BotFilter{WorkspaceID: w.ID, SortField: "updatedAt"}, []string{b1.ID, b4.ID, b3.ID, b2.ID}},
		{"updatedAt ascending", store.BotFilter{WorkspaceID: w.ID, SortField: "updatedAt", Ascending: true}, []string{b2.ID, b3.ID, b4.ID, b1.ID}},
		{"one tag", store.BotFilter{WorkspaceID: w.ID, Tags: map[string]string{"env": "prod"}}, []string{b2.ID, b1.ID}},
		{"all tags must match", store.BotFilter{WorkspaceID: w.ID, Tags: map[string]string{"env": "prod", "team": "x"}}, []string{b1.ID}},
		{"tag value mismatch", store.BotFilter{WorkspaceID: w.ID, Tags: map[string]string{"env": "staging"}}, []string{}},
		{"dev bots", store.BotFilter{WorkspaceID: w.ID, Dev: true}, []string{dev.ID}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := collect(t, 2, func(p store.Page) ([]*model.Bot, string, error) { return r.List(ctx, c.f, p) })
			eq(t, "bots", append([]string{}, ids(got, botID)...), c.want)
		})
	}

	// Tag changes are reflected in filters.
	b3.Tags = map[string]string{"env": "prod", "team": "x"}
	ok(t, r.Update(ctx, b3))
	got, _, err := r.List(ctx, store.BotFilter{WorkspaceID: w.ID, Tags: map[string]string{"team": "x"}}, store.Page{})
	ok(t, err)
	eq(t, "after retag", ids(got, botID), []string{b3.ID, b1.ID})

	_, _, err = r.List(ctx, store.BotFilter{WorkspaceID: w.ID, SortField: "name"}, store.Page{})
	wantErr(t, err, model.ErrInvalidQuery)
}

func testIntegrations(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	r := db.Bots()
	chat := &model.Integration{BotID: f.bot.ID, Name: model.IntegrationChat, Enabled: true, WebhookID: "wh-chat",
		Configuration: map[string]any{"a": "b"}, CreatedAt: at(1), UpdatedAt: at(1)}
	ok(t, r.PutIntegration(ctx, chat))
	web := &model.Integration{BotID: f.bot.ID, Name: model.IntegrationWebchat, WebhookID: "wh-web", CreatedAt: at(2), UpdatedAt: at(2)}
	ok(t, r.PutIntegration(ctx, web))

	got, err := r.IntegrationByWebhook(ctx, "wh-chat")
	ok(t, err)
	eq(t, "by webhook", got, chat)
	_, err = r.IntegrationByWebhook(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)

	// Put again replaces fields but keeps the creation time.
	again := &model.Integration{BotID: f.bot.ID, Name: model.IntegrationChat, Enabled: false, WebhookID: "wh-chat2",
		CreatedAt: at(50), UpdatedAt: at(50)}
	ok(t, r.PutIntegration(ctx, again))
	eq(t, "created kept", again.CreatedAt, at(1))
	list, err := r.Integrations(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "count", len(list), 2)
	eq(t, "replaced", list[0], again)
	_, err = r.IntegrationByWebhook(ctx, "wh-chat")
	wantErr(t, err, model.ErrNotFound)

	wantErr(t, r.PutIntegration(ctx, &model.Integration{BotID: other.ID, Name: "chat", WebhookID: "wh-web"}), model.ErrAlreadyExists)
	list, err = r.Integrations(ctx, other.ID)
	ok(t, err)
	eq(t, "other bot has none", len(list), 0)

	ok(t, r.DeleteIntegration(ctx, f.bot.ID, model.IntegrationWebchat))
	wantErr(t, r.DeleteIntegration(ctx, f.bot.ID, model.IntegrationWebchat), model.ErrNotFound)
	list, err = r.Integrations(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "after delete", len(list), 1)
}

func testVersions(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	r := db.Bots()
	var want []string
	for i := range 3 {
		v := &model.BotVersion{BotID: f.bot.ID, Name: fmt.Sprint("v", i), Code: "code", CreatedAt: at(i)}
		ok(t, r.CreateVersion(ctx, v))
		want = append([]string{v.ID}, want...)
		got, err := r.GetVersion(ctx, f.bot.ID, v.ID)
		ok(t, err)
		eq(t, "version", got, v)
		_, err = r.GetVersion(ctx, other.ID, v.ID)
		wantErr(t, err, model.ErrNotFound)
	}
	list, err := r.ListVersions(ctx, f.bot.ID)
	ok(t, err)
	eq(t, "newest first", ids(list, func(v *model.BotVersion) string { return v.ID }), want)
	list, err = r.ListVersions(ctx, other.ID)
	ok(t, err)
	eq(t, "other bot", len(list), 0)
}

func testLogs(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	var entries []*model.LogEntry
	for i := range 10 {
		l := &model.LogEntry{BotID: f.bot.ID, Time: at(i), Level: "info", Message: fmt.Sprintf("line %d", i), ConversationID: "c1"}
		if i%2 == 1 {
			l.Level, l.ConversationID, l.UserID, l.WorkflowID = "error", "c2", "u1", "wf"
		}
		entries = append(entries, l)
	}
	entries[3].Message = "Hello 100% World_x"
	ok(t, db.Logs().Append(ctx, entries...))
	ok(t, db.Logs().Append(ctx, &model.LogEntry{BotID: other.ID, Level: "info", Message: "line other"}))
	ok(t, db.Logs().Append(ctx))

	idsOf := func(ls []*model.LogEntry) []string {
		return ids(ls, func(l *model.LogEntry) string { return l.Message })
	}
	cases := []struct {
		name string
		f    model.LogFilter
		want []string
	}{
		{"all newest first", model.LogFilter{}, []string{"line 9", "line 8", "line 7", "line 6", "line 5", "line 4", "Hello 100% World_x", "line 2", "line 1", "line 0"}},
		{"level", model.LogFilter{Level: "error"}, []string{"line 9", "line 7", "line 5", "Hello 100% World_x", "line 1"}},
		{"conversation", model.LogFilter{ConversationID: "c1"}, []string{"line 8", "line 6", "line 4", "line 2", "line 0"}},
		{"user", model.LogFilter{UserID: "u1", Since: at(5)}, []string{"line 9", "line 7", "line 5"}},
		{"workflow and until", model.LogFilter{WorkflowID: "wf", Until: at(5)}, []string{"Hello 100% World_x", "line 1"}},
		{"since until", model.LogFilter{Since: at(2), Until: at(4)}, []string{"Hello 100% World_x", "line 2"}},
		{"contains case-insensitive", model.LogFilter{Contains: "hello"}, []string{"Hello 100% World_x"}},
		{"contains literal percent", model.LogFilter{Contains: "0% w"}, []string{"Hello 100% World_x"}},
		{"percent is not a wildcard", model.LogFilter{Contains: "line%"}, []string{}},
		{"underscore is not a wildcard", model.LogFilter{Contains: "line_"}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f.BotID = f.bot.ID
			got := collect(t, 3, func(p store.Page) ([]*model.LogEntry, string, error) { return db.Logs().List(ctx, c.f, p) })
			eq(t, "logs", append([]string{}, idsOf(got)...), c.want)
		})
	}
	got, _, err := db.Logs().List(ctx, model.LogFilter{BotID: f.bot.ID}, store.Page{Size: 1})
	ok(t, err)
	eq(t, "entry", got[0], entries[9])
}

func testIssues(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newBot(t, db, f.ws, nil, 1)
	r := db.Issues()

	i1, err := r.Report(ctx, &model.Issue{BotID: f.bot.ID, Code: "E1", Category: "runtime", Title: "t1", Description: "d1"},
		&model.IssueEvent{CreatedAt: at(1), Data: map[string]any{"n": 1.0}})
	ok(t, err)
	eq(t, "first count", i1.EventsCount, 1)
	eq(t, "created", i1.CreatedAt, at(1))
	eq(t, "title", i1.Title, "t1")

	i2, err := r.Report(ctx, &model.Issue{BotID: f.bot.ID, Code: "E2", Title: "t2"}, &model.IssueEvent{CreatedAt: at(2)})
	ok(t, err)
	again, err := r.Report(ctx, &model.Issue{BotID: f.bot.ID, Code: "E1", Title: "t1"}, &model.IssueEvent{CreatedAt: at(3), Data: map[string]any{"n": 2.0}})
	ok(t, err)
	eq(t, "grouped by code", again.ID, i1.ID)
	eq(t, "count", again.EventsCount, 2)
	eq(t, "last seen", again.LastSeenAt, at(3))
	eq(t, "created kept", again.CreatedAt, at(1))
	if i2.ID == i1.ID {
		t.Fatal("different codes share an issue")
	}
	// Same code on another bot is another issue.
	o, err := r.Report(ctx, &model.Issue{BotID: other.ID, Code: "E1"}, &model.IssueEvent{CreatedAt: at(4)})
	ok(t, err)
	eq(t, "other bot count", o.EventsCount, 1)

	got, err := r.Get(ctx, f.bot.ID, i1.ID)
	ok(t, err)
	eq(t, "get", got, again)
	_, err = r.Get(ctx, other.ID, i1.ID)
	wantErr(t, err, model.ErrNotFound)

	list := collect(t, 1, func(p store.Page) ([]*model.Issue, string, error) { return r.List(ctx, f.bot.ID, p) })
	eq(t, "most recently seen first", ids(list, func(i *model.Issue) string { return i.ID }), []string{i1.ID, i2.ID})

	evs := collect(t, 1, func(p store.Page) ([]*model.IssueEvent, string, error) { return r.Events(ctx, i1.ID, p) })
	eq(t, "events", len(evs), 2)
	eq(t, "newest event first", evs[0].Data, map[string]any{"n": 2.0})
	eq(t, "event issue", evs[1].IssueID, i1.ID)

	wantErr(t, r.Delete(ctx, other.ID, i1.ID), model.ErrNotFound)
	ok(t, r.Delete(ctx, f.bot.ID, i1.ID))
	_, err = r.Get(ctx, f.bot.ID, i1.ID)
	wantErr(t, err, model.ErrNotFound)
	evs, _, err = r.Events(ctx, i1.ID, store.Page{})
	ok(t, err)
	eq(t, "events deleted with issue", len(evs), 0)

	// A deleted issue starts over.
	n, err := r.Report(ctx, &model.Issue{BotID: f.bot.ID, Code: "E1"}, &model.IssueEvent{})
	ok(t, err)
	eq(t, "fresh count", n.EventsCount, 1)
	if n.ID == i1.ID || strings.TrimSpace(n.ID) == "" {
		t.Fatalf("expected a new issue id, got %q", n.ID)
	}
}
