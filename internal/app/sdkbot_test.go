package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// devBot creates a development bot (dev: true) called at url and returns
// it with its chat webhook URL.
func devBot(t *testing.T, a *app.App, url string) (*model.Bot, string) {
	t.Helper()
	ctx := context.Background()
	c := adminCaller(t, a)
	dev := true
	v, err := a.Bots().Create(ctx, c, administration.BotWrite{Dev: &dev, URL: &url})
	if err != nil {
		t.Fatalf("create bot: %v", err)
	}
	for _, in := range v.Integrations {
		if in.Name == model.IntegrationChat {
			return v.Bot, a.URL + "/chat/" + in.WebhookID
		}
	}
	t.Fatal("bot has no chat integration")
	return nil, ""
}

// sdkCall is one call Parley made to a bot.
type sdkCall struct {
	header http.Header
	body   map[string]any
}

// fakeSDKBot is an HTTP server standing for an SDK bot: it records the
// calls and answers with status(call).
type fakeSDKBot struct {
	mu     sync.Mutex
	calls  []sdkCall
	status func(n int, c sdkCall) (int, string)
}

func (f *fakeSDKBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := sdkCall{header: r.Header.Clone()}
	_ = json.Unmarshal(raw, &c.body)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n := len(f.calls)
	f.mu.Unlock()
	if r.Header.Get("x-bp-operation") != "event_received" {
		w.Write([]byte("{}"))
		return
	}
	status, body := f.status(n, c)
	w.WriteHeader(status)
	w.Write([]byte(body))
}

func (f *fakeSDKBot) events() []sdkCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sdkCall
	for _, c := range f.calls {
		if c.header.Get("x-bp-operation") == "event_received" {
			out = append(out, c)
		}
	}
	return out
}

func pendingTurns(t *testing.T, a *app.App, botID, convID string) int {
	t.Helper()
	ts, err := a.Store().Signals().PendingTurns(context.Background(), botID, convID, 100)
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSDKBotCallContract checks the call Parley makes to an SDK bot
// (headers and body the SDK's handler parses) and how its status is read:
// a bot error (400 Runtime) is one issue and no retry; a bot that is down
// is retried with backoff and its turn completes when it comes back.
func TestSDKBotCallContract(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ctx := context.Background()

	// A port nothing listens on yet: the bot is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fake := &fakeSDKBot{status: func(n int, c sdkCall) (int, string) {
		ev := c.body["event"].(map[string]any)
		msg := ev["payload"].(map[string]any)["message"].(map[string]any)
		if msg["payload"].(map[string]any)["text"] == "throw" {
			return 400, `{"id":"err_1","code":400,"type":"Runtime","message":"An unexpected error occurred in the bot."}`
		}
		return 200, "{}"
	}}
	bot, chatURL := devBot(t, a, "http://"+addr+"/")
	c := &chatHTTP{url: chatURL}
	u := c.call(t, "POST", "/users", map[string]any{})
	c.key = u["key"].(string)
	userID := u["user"].(map[string]any)["id"].(string)
	conv := c.call(t, "POST", "/conversations", map[string]any{})["conversation"].(map[string]any)["id"].(string)

	// Down: the turn stays pending and an issue says so, once.
	c.call(t, "POST", "/messages", map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": "hello"}})
	time.Sleep(1500 * time.Millisecond)
	if n := pendingTurns(t, a, bot.ID, conv); n != 1 {
		t.Fatalf("pending turns while the bot is down = %d, want 1", n)
	}
	issues, _, err := a.Store().Issues().List(ctx, bot.ID, store.Page{})
	if err != nil || len(issues) != 1 || issues[0].Code != "bot_unreachable" || issues[0].EventsCount != 1 {
		t.Fatalf("issues while down = %+v, %v", issues, err)
	}

	// Back: the turn completes.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: fake}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	waitFor(t, "the turn to complete", 20*time.Second, func() bool { return pendingTurns(t, a, bot.ID, conv) == 0 })
	evs := fake.events()
	if len(evs) != 1 {
		t.Fatalf("calls = %d, want 1", len(evs))
	}
	h := evs[0].header
	for k, want := range map[string]string{"x-bot-id": bot.ID, "x-bp-operation": "event_received",
		"x-bp-type": "message_created", "x-bp-configuration": "e30="} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	// The turn's idempotency key: the same on every delivery of the turn.
	if got := h.Get("x-bp-idempotency-key"); !strings.HasPrefix(got, conv+":") || len(got) == len(conv)+1 {
		t.Errorf("x-bp-idempotency-key = %q, want %q", got, conv+":<seq>")
	}
	ev := evs[0].body["event"].(map[string]any)
	pl := ev["payload"].(map[string]any)
	msg := pl["message"].(map[string]any)
	if ev["type"] != "message_created" || ev["conversationId"] != conv || ev["userId"] != userID ||
		msg["type"] != "text" || msg["payload"].(map[string]any)["text"] != "hello" || msg["direction"] != "incoming" ||
		pl["user"].(map[string]any)["id"] != userID || pl["conversation"].(map[string]any)["id"] != conv {
		t.Fatalf("event = %v", ev)
	}

	// A bot error: one issue occurrence, no retry.
	c.call(t, "POST", "/messages", map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": "throw"}})
	waitFor(t, "the failing turn to complete", 10*time.Second, func() bool { return pendingTurns(t, a, bot.ID, conv) == 0 })
	time.Sleep(700 * time.Millisecond)
	if n := len(fake.events()); n != 2 {
		t.Fatalf("calls after a bot error = %d, want 2 (no retry)", n)
	}
	issues, _, _ = a.Store().Issues().List(ctx, bot.ID, store.Page{})
	var botErrors int
	for _, is := range issues {
		if is.Code == "bot_error" {
			botErrors = is.EventsCount
		}
	}
	if botErrors != 1 {
		t.Fatalf("bot_error occurrences = %d, want 1 (issues %+v)", botErrors, issues)
	}
}

// sdkBotBundle builds tests/compat/sdkbot with esbuild, as the Botpress CLI
// would, and returns the bundle.
func sdkBotBundle(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bot.cjs")
	testapp.RunNode(t, "sdkbot/build.mjs", map[string]string{"OUT": out})
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startDevSDKBot starts tests/compat/sdkbot as a development bot server
// (bot.start on a free port) pointed at a, and returns its URL.
func startDevSDKBot(t *testing.T, a *app.App) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required: %v", err)
	}
	cmd := exec.Command(node, "sdkbot/dev.cjs")
	cmd.Dir = testapp.CompatDir()
	cmd.Env = append(os.Environ(), "BP_API_URL="+a.URL, "BP_TOKEN="+a.AdminToken, "PORT=0")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = testWriterFor(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var hello struct{ Port int }
		if json.Unmarshal(sc.Bytes(), &hello) == nil && hello.Port != 0 {
			go io.Copy(io.Discard, stdout)
			return fmt.Sprintf("http://127.0.0.1:%d/", hello.Port)
		}
	}
	t.Fatal("the development bot did not start")
	return ""
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testWriterFor(t *testing.T) io.Writer { return logWriter{t} }

// updateBot applies an Admin API update to a bot as the admin.
func updateBot(t *testing.T, a *app.App, botID string, in administration.BotWrite) {
	t.Helper()
	ctx := context.Background()
	c := adminCaller(t, a)
	if _, err := a.Bots().Update(ctx, c, botID, in); err != nil {
		t.Fatalf("update bot: %v", err)
	}
}

// deployedSDKBot creates a bot and deploys the bundle as its code.
func deployedSDKBot(t *testing.T, a *app.App, bundle string) (*model.Bot, string) {
	t.Helper()
	bot, chatURL := codeBotNoCode(t, a)
	updateBot(t, a, bot.ID, administration.BotWrite{Code: &bundle})
	return bot, chatURL
}

func codeBotNoCode(t *testing.T, a *app.App) (*model.Bot, string) {
	t.Helper()
	ctx := context.Background()
	c := adminCaller(t, a)
	v, err := a.Bots().Create(ctx, c, administration.BotWrite{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range v.Integrations {
		if in.Name == model.IntegrationChat {
			return v.Bot, a.URL + "/chat/" + in.WebhookID
		}
	}
	t.Fatal("no chat integration")
	return nil, ""
}

// TestSDKBotThroughChatClient runs the unchanged-SDK bot in both forms, on
// both engines, against the real @botpress/chat client.
func TestSDKBotThroughChatClient(t *testing.T) {
	if testing.Short() {
		t.Skip("compat suite skipped in -short mode")
	}
	bundle := sdkBotBundle(t)
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		t.Run("development bot", func(t *testing.T) {
			bot, chatURL := devBot(t, a, startDevSDKBot(t, a))
			out := testapp.RunNode(t, "sdkbot.mjs", map[string]string{"API_URL": chatURL, "ADMIN_URL": a.URL,
				"TOKEN": a.AdminToken, "BOT_ID": bot.ID})
			t.Log(lastLines(out, 300))
		})
		t.Run("deployed bundle", func(t *testing.T) {
			bot, chatURL := deployedSDKBot(t, a, bundle)
			out := testapp.RunNode(t, "sdkbot.mjs", map[string]string{"API_URL": chatURL, "ADMIN_URL": a.URL,
				"TOKEN": a.AdminToken, "BOT_ID": bot.ID})
			t.Log(lastLines(out, 300))
		})
	})
}

// TestSDKBotKilledUnderLoad sends 200 messages over 20 conversations to a
// deployed SDK bot whose process is killed (SIGKILL) in the middle, once
// from outside and once from inside right after a reply was stored: every
// message gets exactly one reply, in order.
func TestSDKBotKilledUnderLoad(t *testing.T) {
	// It tests processes (Parley's, the bot's, the client's) under load:
	// scripts/test runs it with the crash loop, without -race.
	if os.Getenv("PARLEY_CRASH_TEST") == "" {
		t.Skip("set PARLEY_CRASH_TEST=1 (scripts/test does, without -race)")
	}
	bundle := sdkBotBundle(t)
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		bot, chatURL := deployedSDKBot(t, a, bundle)
		marker := filepath.Join(t.TempDir(), "died")
		updateBot(t, a, bot.ID, administration.BotWrite{Configuration: &administration.BotConfiguration{
			Data: map[string]any{"dieMarker": marker}}})
		var pid int
		waitFor(t, "the bot process", 20*time.Second, func() bool { pid = a.BotProcesses().PID(bot.ID); return pid != 0 })
		out := testapp.RunNode(t, "sdkbot.mjs", map[string]string{"API_URL": chatURL, "ADMIN_URL": a.URL,
			"TOKEN": a.AdminToken, "BOT_ID": bot.ID, "LOAD": "1", "BOT_PID": strconv.Itoa(pid)})
		t.Log(lastLines(out, 300))
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the bot never killed itself after a stored reply: %v", err)
		}
		if now := a.BotProcesses().PID(bot.ID); now == pid || now == 0 {
			t.Fatalf("bot process %d was not replaced (now %d)", pid, now)
		}
	})
}

func lastLines(s string, n int) string { return s[max(0, len(s)-n):] }

// TestBundleRefusedWithoutNode: without Node.js, deploying a bundle is a
// 400 that says why; sandbox JavaScript still deploys.
func TestBundleRefusedWithoutNode(t *testing.T) {
	cfg := testapp.Config(t, "")
	cfg.Node = "parley-no-such-node"
	a := testapp.Start(t, cfg)
	ws := defaultWorkspace(t, a)
	created := adminCall(t, a, ws, "POST", "/v1/admin/bots", `{"name":"b"}`)
	id := created.body["bot"].(map[string]any)["id"].(string)
	res := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+id, `{"code":"\"use strict\";\nmodule.exports = { handler: async () => ({}) }"}`)
	if res.status != 400 || !strings.Contains(fmt.Sprint(res.body["message"]), "Node.js") {
		t.Fatalf("deploying a bundle without node: %d %v", res.status, res.body)
	}
	res = adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+id, `{"code":"bot.on.message('*', async () => {})"}`)
	if res.status != 200 {
		t.Fatalf("deploying sandbox code: %d %v", res.status, res.body)
	}
}

// sandboxEcho is the load mode of tests/compat/sdkbot/bot.cjs written in
// Parley's sandbox JavaScript, for the benchmark.
const sandboxEcho = `bot.on.message('text', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo ' + message.payload.text + ' ✓' } })
})`

// TestSDKBotBenchmark is a benchmark, not a test: message → reply on the
// SSE stream at a fixed rate, for the deployed SDK bot and the same bot in
// Parley's sandbox JavaScript, in one run. Run it with
//
//	PARLEY_BENCH=1 [PARLEY_BENCH_ENGINE=postgres] [PARLEY_BENCH_RATE=50] \
//	  go test -run TestSDKBotBenchmark -v -count=1 ./internal/app/
func TestSDKBotBenchmark(t *testing.T) {
	if os.Getenv("PARLEY_BENCH") == "" {
		t.Skip("set PARLEY_BENCH=1 to run the SDK bot benchmark")
	}
	url := ""
	if os.Getenv("PARLEY_BENCH_ENGINE") == "postgres" {
		url = testdb.PostgresURL(t)
	}
	a := testapp.Start(t, testapp.Config(t, url))
	_, sdkURL := deployedSDKBot(t, a, sdkBotBundle(t))
	_, jsURL, _ := codeBot(t, a, sandboxEcho)
	rate := os.Getenv("PARLEY_BENCH_RATE")
	if rate == "" {
		rate = "50"
	}
	out := testapp.RunNode(t, "sdkbench.mjs", map[string]string{"BOTS": "sdk-bundle=" + sdkURL + ",sandbox-js=" + jsURL,
		"RATE": rate, "SECONDS": "10"})
	t.Log(out)
}
