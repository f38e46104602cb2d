package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/service"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// codeBot creates a bot with the given JavaScript and returns it with its
// chat webhook URL and encryption key.
func codeBot(t *testing.T, a *app.App, code string) (bot *model.Bot, chatURL, key string) {
	t.Helper()
	ctx := context.Background()
	p, err := a.Service().Authenticate(ctx, a.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Service().InWorkspace(ctx, p, defaultWorkspace(t, a))
	if err != nil {
		t.Fatal(err)
	}
	v, err := a.Service().CreateBot(ctx, c, service.BotWrite{Code: &code})
	if err != nil {
		t.Fatalf("create bot: %v", err)
	}
	for _, in := range v.Integrations {
		if in.Name == model.IntegrationChat {
			key, _ = in.Configuration["encryptionKey"].(string)
			return v.Bot, a.URL + "/chat/" + in.WebhookID, key
		}
	}
	t.Fatal("bot has no chat integration")
	return nil, "", ""
}

func readBotFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testapp.CompatDir(), "bots", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestChatCompatibilityWithJavaScriptEchoBot runs the whole @botpress/chat
// compatibility suite against a bot written with Parley's code API, on both
// engines.
func TestChatCompatibilityWithJavaScriptEchoBot(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		_, url, key := codeBot(t, a, readBotFile(t, "echo.js"))
		out := testapp.RunNode(t, "chat.mjs", map[string]string{"API_URL": url, "ENCRYPTION_KEY": key})
		t.Log(out[max(0, len(out)-200):])
	})
}
