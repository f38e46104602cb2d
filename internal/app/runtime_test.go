package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// codeBot creates a bot with the given JavaScript and returns it with its
// chat webhook URL and encryption key.
func codeBot(t *testing.T, a *app.App, code string) (bot *model.Bot, chatURL, key string) {
	t.Helper()
	ctx := context.Background()
	c := adminCaller(t, a)
	v, err := a.Bots().Create(ctx, c, administration.BotWrite{Code: &code})
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

// TestRuntimeThroughChatClient checks the bot-side event object, hooks and
// the sandbox end to end with the real @botpress/chat client.
func TestRuntimeThroughChatClient(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	inspect, inspectURL, _ := codeBot(t, a, readBotFile(t, "inspect.js"))
	_, hooksURL, _ := codeBot(t, a, readBotFile(t, "hooks.js"))
	sandbox, sandboxURL, _ := codeBot(t, a, readBotFile(t, "sandbox.js"))
	setMaxExecutionTime(t, a, sandbox.ID, 1)
	out := testapp.RunNode(t, "runtime.mjs", map[string]string{
		"INSPECT_URL": inspectURL, "INSPECT_BOT_ID": inspect.ID, "HOOKS_URL": hooksURL,
		"SANDBOX_URL": sandboxURL, "SANDBOX_BOT_ID": sandbox.ID,
		"ADMIN_URL": a.URL, "TOKEN": a.AdminToken, "WORKSPACE_ID": defaultWorkspace(t, a),
	})
	t.Log(out[max(0, len(out)-300):])
}

func setMaxExecutionTime(t *testing.T, a *app.App, botID string, seconds int) {
	t.Helper()
	ctx := context.Background()
	c := adminCaller(t, a)
	if _, err := a.Bots().Update(ctx, c, botID, administration.BotWrite{MaxExecutionTime: &seconds}); err != nil {
		t.Fatal(err)
	}
}

// TestCodeThatDoesNotCompileIsRefused checks that a deploy of broken code is
// a 400 naming the line and column, and leaves the deployed version alone.
func TestCodeThatDoesNotCompileIsRefused(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	good := "bot.on.message('*', async () => {})"
	bot, _, _ := codeBot(t, a, good)
	res := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+bot.ID, `{"code":"bot.on.message('*', async () => {\n  let x = ;\n})"}`)
	if res.status != 400 || res.body["type"] != "InvalidPayload" || !strings.Contains(res.body["message"].(string), "line 2") {
		t.Fatalf("deploy of broken code: %d %v", res.status, res.body)
	}
	if md, _ := res.body["metadata"].(map[string]any); md["line"] != float64(2) || md["column"] == nil {
		t.Fatalf("metadata = %v", res.body["metadata"])
	}
	versions := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/versions", "")
	if n := len(versions.body["versions"].([]any)); n != 1 {
		t.Fatalf("versions after refused deploy = %d", n)
	}
	// A good deploy creates version 2, and getBotVersion returns its code.
	res = adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+bot.ID, `{"code":"bot.on.message('text', async () => {})"}`)
	if res.status != 200 {
		t.Fatalf("good deploy: %v", res.body)
	}
	versions = adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/versions", "")
	list := versions.body["versions"].([]any)
	latest := list[0].(map[string]any)
	if len(list) != 2 || latest["name"] != "v2" {
		t.Fatalf("versions = %v", list)
	}
	got := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/versions/"+latest["id"].(string), "")
	if v := got.body["version"].(map[string]any); v["code"] != "bot.on.message('text', async () => {})" || got.body["url"] == "" {
		t.Fatalf("getBotVersion = %v", got.body)
	}
}

type adminResult struct {
	status int
	body   map[string]any
}

func adminCall(t *testing.T, a *app.App, ws, method, path, body string) adminResult {
	t.Helper()
	req, _ := http.NewRequest(method, a.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.AdminToken)
	req.Header.Set("x-workspace-id", ws)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return adminResult{res.StatusCode, out}
}
