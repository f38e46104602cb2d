package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/workflow/botdir"
)

func runBot(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"bot"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return out.String() + errOut.String(), err
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

// TestBotInitDeployPull scaffolds a bot, tests it, deploys it to a running
// server and pulls it back.
func TestBotInitDeployPull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mybot")
	if out, err := runBot(t, nil, "init", dir); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	if out, err := runBot(t, nil, "test", dir); err != nil {
		t.Fatalf("test: %v %s", err, out)
	}
	a := testapp.Start(t, testapp.Config(t, ""))
	env := map[string]string{"PARLEY_URL": a.URL, "PARLEY_TOKEN": a.AdminToken}
	out, err := runBot(t, env, "deploy", dir)
	if err != nil || !strings.Contains(out, "deployed bot") {
		t.Fatalf("deploy: %v %s", err, out)
	}
	id, _ := os.ReadFile(filepath.Join(dir, ".parley-bot"))
	// A second deploy goes to the same bot, as version 2.
	if out, err := runBot(t, env, "deploy", dir); err != nil || !strings.Contains(out, "version v2") {
		t.Fatalf("redeploy: %v %s", err, out)
	}
	pulled := filepath.Join(t.TempDir(), "pulled")
	if out, err := runBot(t, env, "pull", strings.TrimSpace(string(id)), pulled); err != nil {
		t.Fatalf("pull: %v %s", err, out)
	}
	a1, err := botdir.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := botdir.Build(pulled)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(a1, a2) {
		t.Fatalf("pulled bot differs:\n%s\n%s", a1, a2)
	}
	// Invalid bots are refused before anything is sent.
	if err := os.WriteFile(filepath.Join(dir, "bot.yaml"), []byte("workflows: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runBot(t, env, "deploy", dir); err == nil || !strings.Contains(err.Error(), "/workflows") {
		t.Fatalf("invalid deploy: %v %s", err, out)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
