package storetest

import (
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// testIntegrationDefs: integration definitions (by id, by name and version
// with "latest", list filters, update, delete), the bots' entries that
// install them, their logs, and the outbox's delivered seq.
func testIntegrationDefs(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	other := newWorkspace(t, db, f.acct, "other", 1)
	r := db.Integrations()
	def := func(ws *model.Workspace, name, version string, public, dev bool, i int) *model.IntegrationDef {
		d := &model.IntegrationDef{WorkspaceID: ws.ID, Name: name, Version: version, Public: public, Dev: dev,
			Title: "Title " + name, Visibility: "private", Spec: map[string]any{"channels": map[string]any{"c": map[string]any{}}},
			Secrets: map[string]string{"K": "v"}, SigningSecret: "s", CreatedAt: at(i), UpdatedAt: at(i)}
		ok(t, r.Create(ctx, d))
		return d
	}
	a1 := def(f.ws, "alpha", "0.1.0", false, false, 1)
	a2 := def(f.ws, "alpha", "0.2.0", true, false, 2)
	def(f.ws, "alpha", "0.2.0", false, true, 3) // a development one of the same version
	b := def(other, "beta", "1.0.0", false, false, 4)
	wantErr(t, r.Create(ctx, &model.IntegrationDef{WorkspaceID: f.ws.ID, Name: "alpha", Version: "0.1.0", CreatedAt: at(5), UpdatedAt: at(5)}), model.ErrAlreadyExists)

	got, err := r.Get(ctx, a1.ID)
	ok(t, err)
	eq(t, "get", []any{got.Name, got.Version, got.Title, got.Secrets["K"], got.Spec["channels"] != nil}, []any{"alpha", "0.1.0", "Title alpha", "v", true})
	_, err = r.Get(ctx, "nope")
	wantErr(t, err, model.ErrNotFound)
	got, err = r.GetByName(ctx, f.ws.ID, "alpha", "latest")
	ok(t, err)
	eq(t, "latest (not the development one)", got.ID, a2.ID)
	got, err = r.GetByName(ctx, f.ws.ID, "alpha", "0.1.0")
	ok(t, err)
	eq(t, "by version", got.ID, a1.ID)
	_, err = r.GetByName(ctx, other.ID, "alpha", "0.1.0")
	wantErr(t, err, model.ErrNotFound)
	got, err = r.GetByName(ctx, "", "alpha", "latest")
	ok(t, err)
	eq(t, "public by name", got.ID, a2.ID)

	name := func(d *model.IntegrationDef) string { return d.Name + "@" + d.Version }
	list := func(f store.IntegrationFilter) []string {
		return ids(collect(t, 1, func(p store.Page) ([]*model.IntegrationDef, string, error) { return r.List(ctx, f, p) }), name)
	}
	notDev := false
	eq(t, "workspace, newest first", list(store.IntegrationFilter{WorkspaceID: f.ws.ID}), []string{"alpha@0.2.0", "alpha@0.2.0", "alpha@0.1.0"})
	eq(t, "not dev", list(store.IntegrationFilter{WorkspaceID: f.ws.ID, Dev: &notDev}), []string{"alpha@0.2.0", "alpha@0.1.0"})
	eq(t, "public, any workspace", list(store.IntegrationFilter{Public: true}), []string{"alpha@0.2.0"})
	eq(t, "version", list(store.IntegrationFilter{WorkspaceID: f.ws.ID, Version: "0.1.0"}), []string{"alpha@0.1.0"})
	eq(t, "search title", list(store.IntegrationFilter{Search: "TITLE BE"}), []string{"beta@1.0.0"})

	// Installed by a bot.
	ok(t, db.Bots().PutIntegration(ctx, &model.Integration{BotID: f.bot.ID, Name: "alpha", Enabled: true, WebhookID: "wh-1",
		IntegrationID: a1.ID, Status: model.IntegrationRegistered, Configuration: map[string]any{"k": "v"},
		DisabledChannels: []string{"c"}, Identifier: "acct"}))
	eq(t, "installed by the bot", list(store.IntegrationFilter{InstalledByBotID: f.bot.ID}), []string{"alpha@0.1.0"})
	ins, err := r.Installations(ctx, a1.ID)
	ok(t, err)
	eq(t, "installations", len(ins), 1)
	eq(t, "entry", []any{ins[0].Name, ins[0].IntegrationID, ins[0].Status, ins[0].Identifier, ins[0].DisabledChannels[0]},
		[]any{"alpha", a1.ID, model.IntegrationRegistered, "acct", "c"})
	byHook, err := db.Bots().IntegrationByWebhook(ctx, "wh-1")
	ok(t, err)
	eq(t, "by webhook", byHook.IntegrationID, a1.ID)

	b.Title, b.Code, b.UpdatedAt = "Beta!", "code", at(9)
	ok(t, r.Update(ctx, b))
	got, err = r.Get(ctx, b.ID)
	ok(t, err)
	eq(t, "updated", []string{got.Title, got.Code}, []string{"Beta!", "code"})

	// Logs, newest first, filtered.
	ok(t, r.AppendLogs(ctx, &model.IntegrationLog{IntegrationID: a1.ID, BotID: f.bot.ID, Level: "error", Message: "Register failed", Time: at(10)},
		&model.IntegrationLog{IntegrationID: a1.ID, Level: "info", Message: "hello", ConversationID: "c1", Time: at(11)},
		&model.IntegrationLog{IntegrationID: a2.ID, Level: "info", Message: "other", Time: at(12)}))
	logs := func(f model.IntegrationLogFilter) []string {
		ls := collect(t, 1, func(p store.Page) ([]*model.IntegrationLog, string, error) { return r.Logs(ctx, f, p) })
		return ids(ls, func(l *model.IntegrationLog) string { return l.Message })
	}
	eq(t, "logs", logs(model.IntegrationLogFilter{IntegrationID: a1.ID}), []string{"hello", "Register failed"})
	eq(t, "logs by level", logs(model.IntegrationLogFilter{IntegrationID: a1.ID, Level: "error"}), []string{"Register failed"})
	eq(t, "logs containing", logs(model.IntegrationLogFilter{IntegrationID: a1.ID, Contains: "REGISTER"}), []string{"Register failed"})
	eq(t, "logs since", logs(model.IntegrationLogFilter{IntegrationID: a1.ID, Since: at(11)}), []string{"hello"})

	// The outbox: conversations of an installed integration past their
	// delivered seq.
	c := &model.Conversation{BotID: f.bot.ID, ID: "ic", Integration: "alpha", Channel: "c", CreatedAt: at(13)}
	ok(t, db.Chat().CreateConversation(ctx, c))
	newConv(t, db, f.bot.ID, "chat-conv", "", 14)
	seq, err := r.DeliveredSeq(ctx, f.bot.ID, "ic")
	ok(t, err)
	eq(t, "nothing delivered", seq, int64(0))
	undelivered := func() []string {
		refs, err := r.Undelivered(ctx, 10)
		ok(t, err)
		return ids(refs, func(r model.ConversationRef) string { return r.ConversationID })
	}
	eq(t, "no signal, nothing to deliver", undelivered(), []string{})
	for i := 0; i < 2; i++ {
		for _, conv := range []string{"ic", "chat-conv"} {
			ok(t, db.Signals().AppendSignal(ctx, &model.Signal{BotID: f.bot.ID, ConversationID: conv, Type: model.SignalMessageCreated, Data: []byte(`{}`), CreatedAt: at(15 + i)}))
		}
	}
	eq(t, "the integration's conversation (not the chat one)", undelivered(), []string{"ic"})
	ok(t, r.SetDeliveredSeq(ctx, f.bot.ID, "ic", 1))
	eq(t, "one left", undelivered(), []string{"ic"})
	ok(t, r.SetDeliveredSeq(ctx, f.bot.ID, "ic", 2))
	eq(t, "all delivered", undelivered(), []string{})
	seq, err = r.DeliveredSeq(ctx, f.bot.ID, "ic")
	ok(t, err)
	eq(t, "delivered seq", seq, int64(2))

	wantErr(t, r.Delete(ctx, "nope"), model.ErrNotFound)
	ok(t, r.Delete(ctx, b.ID))
	_, err = r.Get(ctx, b.ID)
	wantErr(t, err, model.ErrNotFound)
}
