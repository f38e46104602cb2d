package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/workflow/botdir"
)

func runBot(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"bot"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return out.String() + errOut.String(), err
}

// listFiles lists a folder's files, relative, sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestExampleBotsPassLocally runs every example's scripted conversations
// with `parley bot test` (no server).
func TestExampleBotsPassLocally(t *testing.T) {
	for _, name := range []string{"faq", "order-lookup", "survey"} {
		out, err := runBot(t, nil, "test", filepath.Join(testapp.RepoRoot(), "examples", name))
		if err != nil || !strings.Contains(out, "PASS") {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
}

// TestBotDeployDefaultURL: deploy and pull default to the address serve
// listens on by default.
func TestBotDeployDefaultURL(t *testing.T) {
	cfg, err := app.LoadConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + cfg.Addr; defaultServerURL != want {
		t.Fatalf("bot deploy defaults to %s, serve listens on %s", defaultServerURL, want)
	}
	out, err := runBot(t, nil, "help")
	if err != nil || !strings.Contains(out, "default http://127.0.0.1:3000") {
		t.Fatalf("help: %v %s", err, out)
	}
}

// TestBotInitDeployPull scaffolds a bot, tests it, deploys it to a running
// server (URLs printed, nothing written into the folder, an unchanged
// folder not redeployed, flags after the folder) and pulls it back (into a
// new folder, and merged into the original one only with --force).
func TestBotInitDeployPull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mybot")
	if out, err := runBot(t, nil, "init", dir); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	if out, err := runBot(t, nil, "test", dir); err != nil {
		t.Fatalf("test: %v %s", err, out)
	}
	before := listFiles(t, dir)
	a := testapp.Start(t, testapp.Config(t, ""))
	cfgDir := t.TempDir()
	env := map[string]string{"PARLEY_URL": a.URL, "PARLEY_TOKEN": a.AdminToken, "PARLEY_CONFIG_DIR": cfgDir}
	out, err := runBot(t, env, "deploy", dir)
	if err != nil || !strings.Contains(out, "created bot") || !strings.Contains(out, "version v1") {
		t.Fatalf("deploy: %v %s", err, out)
	}
	t.Logf("first deploy:\n%s", out)

	// The folder is left as it was: the bot id is kept in the config dir.
	if after := listFiles(t, dir); !slices.Equal(before, after) {
		t.Fatalf("deploy wrote into the folder: %v → %v", before, after)
	}
	var ids botMapFile
	raw, err := os.ReadFile(filepath.Join(cfgDir, "bots.json"))
	if err != nil || json.Unmarshal(raw, &ids) != nil || len(ids.Bots) != 1 {
		t.Fatalf("bots.json: %v %s", err, raw)
	}
	id := ids.Bots[0].Bot

	// The Chat API URL and the hosted page (client id: the webchat
	// integration's webhookId) are printed, and both answer.
	bot := adminJSON(t, "GET", a.URL+"/v1/admin/bots/"+id, a.AdminToken, ids.Bots[0].Workspace, "")["bot"].(map[string]any)
	ins := bot["integrations"].(map[string]any)
	chatURL := ins["chat"].(map[string]any)["webhookUrl"].(string)
	page := a.URL + "/w/" + ins["webchat"].(map[string]any)["webhookId"].(string)
	if !strings.Contains(out, "Chat API:     "+chatURL+"\n") || !strings.Contains(out, "Hosted page:  "+page+"\n") {
		t.Fatalf("deploy output lacks %s or %s:\n%s", chatURL, page, out)
	}
	if code, _ := httpGet(t, chatURL+"/hello"); code != 200 {
		t.Fatalf("GET %s/hello: %d", chatURL, code)
	}
	if code, body := httpGet(t, page); code != 200 || strings.Contains(body, "unavailable") {
		t.Fatalf("GET %s: %d", page, code)
	}

	// Redeploying the same folder publishes nothing; flags may follow it.
	out, err = runBot(t, map[string]string{"PARLEY_CONFIG_DIR": cfgDir}, "deploy", dir, "--url", a.URL, "--token="+a.AdminToken)
	if err != nil || !strings.Contains(out, "unchanged") || strings.Contains(out, "deployed bot") || !strings.Contains(out, page) {
		t.Fatalf("unchanged redeploy: %v %s", err, out)
	}
	if vs := adminJSON(t, "GET", a.URL+"/v1/admin/bots/"+id+"/versions", a.AdminToken, ids.Bots[0].Workspace, "")["versions"].([]any); len(vs) != 1 {
		t.Fatalf("an unchanged redeploy made a version: %d versions", len(vs))
	}
	// A change goes to the same bot, as version 2.
	yml := filepath.Join(dir, "bot.yaml")
	src, _ := os.ReadFile(yml)
	if err := os.WriteFile(yml, bytes.Replace(src, []byte("time(s)."), []byte("times."), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runBot(t, env, "deploy", dir); err != nil || !strings.Contains(out, "deployed bot "+id+" version v2") {
		t.Fatalf("redeploy: %v %s", err, out)
	}

	// Pull into a new folder: the same document, in the same key order.
	pulled := filepath.Join(t.TempDir(), "pulled")
	if out, err := runBot(t, env, "pull", id, pulled); err != nil {
		t.Fatalf("pull: %v %s", err, out)
	}
	a1, _ := botdir.Build(dir)
	a2, err := botdir.Build(pulled)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(a1, a2) {
		t.Fatalf("pulled bot differs:\n%s\n%s", a1, a2)
	}
	if y, _ := os.ReadFile(filepath.Join(pulled, "bot.yaml")); strings.Index(string(y), "settings:") > strings.Index(string(y), "workflows:") {
		t.Fatalf("pulled bot.yaml lost the key order:\n%s", y)
	}

	// Pull into a folder that is not a bot folder: refused.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if out, err := runBot(t, env, "pull", id, other); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("pull into a non-empty folder: %v %s", err, out)
	}
	// Pull into the original folder, where a file changed locally: refused
	// without --force, then merged, keeping comments and tests/.
	hook := filepath.Join(dir, "hooks", "before_incoming_message.js")
	os.WriteFile(hook, []byte("// local edit\n"), 0o644)
	if out, err := runBot(t, env, "pull", id, dir); err == nil || !strings.Contains(err.Error(), "hooks/before_incoming_message.js") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("pull over a changed file: %v %s", err, out)
	}
	if b, _ := os.ReadFile(hook); string(b) != "// local edit\n" {
		t.Fatalf("refused pull wrote the hook: %q", b)
	}
	if out, err := runBot(t, env, "pull", "--force", id, dir); err != nil {
		t.Fatalf("pull --force: %v %s", err, out)
	}
	if b, _ := os.ReadFile(hook); strings.Contains(string(b), "local edit") {
		t.Fatalf("pull --force kept the hook: %q", b)
	}
	y, _ := os.ReadFile(yml)
	if !strings.Contains(string(y), "# A Parley workflow bot.") || !strings.Contains(string(y), "times.") {
		t.Fatalf("bot.yaml after pull:\n%s", y)
	}
	if after := listFiles(t, dir); !slices.Equal(before, after) {
		t.Fatalf("pull changed the folder's files: %v → %v", before, after)
	}
	if out, err := runBot(t, env, "pull", id, dir); err != nil || !strings.Contains(out, "nothing written") {
		t.Fatalf("pull of an unchanged bot: %v %s", err, out)
	}

	// Invalid bots are refused before anything is sent.
	if err := os.WriteFile(yml, []byte("workflows: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runBot(t, env, "deploy", dir); err == nil || !strings.Contains(err.Error(), "/workflows") {
		t.Fatalf("invalid deploy: %v %s", err, out)
	}
}

// TestBotPullCodeBot pulls a code bot (bot.js plus a bot.yaml naming it)
// and deploys it back: unchanged, then changed.
func TestBotPullCodeBot(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	env := map[string]string{"PARLEY_URL": a.URL, "PARLEY_TOKEN": a.AdminToken, "PARLEY_CONFIG_DIR": t.TempDir()}
	ws := adminJSON(t, "GET", a.URL+"/v1/admin/workspaces", a.AdminToken, "", "")["workspaces"].([]any)[0].(map[string]any)["id"].(string)
	code := "bot.on.message('text', async ({ message, client }) => {\n  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo' } })\n})"
	body, _ := json.Marshal(map[string]any{"name": "echo", "code": code})
	id := adminJSON(t, "POST", a.URL+"/v1/admin/bots", a.AdminToken, ws, string(body))["bot"].(map[string]any)["id"].(string)

	dir := filepath.Join(t.TempDir(), "echo")
	out, err := runBot(t, env, "pull", id, dir)
	if err != nil || !strings.Contains(out, "code bot") {
		t.Fatalf("pull: %v %s", err, out)
	}
	if js, _ := os.ReadFile(filepath.Join(dir, "bot.js")); string(js) != code+"\n" {
		t.Fatalf("bot.js = %q", js)
	}
	if y, _ := os.ReadFile(filepath.Join(dir, "bot.yaml")); !strings.Contains(string(y), "code: file:bot.js") || !strings.Contains(string(y), "name: echo") {
		t.Fatalf("bot.yaml:\n%s", y)
	}
	if out, err := runBot(t, env, "deploy", dir); err != nil || !strings.Contains(out, "unchanged") || !strings.Contains(out, "Chat API:") {
		t.Fatalf("deploy unchanged: %v %s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "bot.js"), []byte(strings.Replace(code, "'echo'", "'echo 2'", 1)), 0o644)
	if out, err := runBot(t, env, "deploy", dir); err != nil || !strings.Contains(out, "deployed bot "+id+" version v2") {
		t.Fatalf("deploy changed: %v %s", err, out)
	}
	if out, err := runBot(t, env, "test", dir); err == nil || !strings.Contains(err.Error(), "code bot") {
		t.Fatalf("test of a code bot: %v %s", err, out)
	}

	// A bot with no version has nothing to pull.
	empty := adminJSON(t, "POST", a.URL+"/v1/admin/bots", a.AdminToken, ws, `{"name":"empty"}`)["bot"].(map[string]any)["id"].(string)
	if out, err := runBot(t, env, "pull", empty, t.TempDir()); err == nil || !strings.Contains(err.Error(), "never been deployed") {
		t.Fatalf("pull of a bot never deployed: %v %s", err, out)
	}
}
