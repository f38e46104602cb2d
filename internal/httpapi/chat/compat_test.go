package chat_test

import (
	"testing"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testbots"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// startApp starts a full server (app wiring: store, hub, broker,
// dispatcher, routes) with the echo bot plugged in.
func startApp(t *testing.T, databaseURL string) *app.App {
	return testapp.Start(t, testapp.Config(t, databaseURL), app.WithBots(testbots.Resolver(testbots.Echo{})))
}

// TestCompatChatClient runs tests/compat/chat.mjs (the real
// @botpress/chat 0.5.5 client) against a server on SQLite and on
// PostgreSQL; on PostgreSQL with two nodes sharing the database.
func TestCompatChatClient(t *testing.T) {
	if testing.Short() {
		t.Skip("compat suite skipped in -short mode")
	}
	t.Run("sqlite", func(t *testing.T) {
		a := startApp(t, "")
		bot := makeBot(t, a.Store())
		out := testapp.RunNode(t, "chat.mjs", map[string]string{
			"API_URL": a.URL + "/chat/" + bot.WebhookID, "ENCRYPTION_KEY": bot.Key})
		t.Log(lastLine(out))
	})
	t.Run("postgres-two-nodes", func(t *testing.T) {
		url := testdb.PostgresURL(t)
		a := startApp(t, url)
		b := startApp(t, url)
		bot := makeBot(t, a.Store())
		out := testapp.RunNode(t, "chat.mjs", map[string]string{
			"API_URL":        a.URL + "/chat/" + bot.WebhookID,
			"API_URL_2":      b.URL + "/chat/" + bot.WebhookID,
			"ENCRYPTION_KEY": bot.Key})
		t.Log(lastLine(out))
	})
}

func lastLine(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}
