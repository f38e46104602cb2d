package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/turns"
	"github.com/parley-bots/parley/internal/workflow/botdir"
)

// workflowBot creates an empty bot, publishes botJSON through the Admin API
// and returns the bot id and its chat URL.
func workflowBot(t *testing.T, a *app.App, botJSON json.RawMessage) (id, chatURL string) {
	t.Helper()
	ctx := context.Background()
	c := adminCaller(t, a)
	v, err := a.Bots().Create(ctx, c, administration.BotWrite{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"botJson": botJSON})
	res := adminCall(t, a, defaultWorkspace(t, a), "POST", "/v1/admin/bots/"+v.Bot.ID+"/publish-from-bot-json", string(body))
	if res.status != 200 {
		t.Fatalf("publish: %d %v", res.status, res.body)
	}
	for _, in := range v.Integrations {
		if in.Name == model.IntegrationChat {
			return v.Bot.ID, a.URL + "/chat/" + in.WebhookID
		}
	}
	t.Fatal("no chat integration")
	return "", ""
}

// e2eBot covers what the example bots do not: schedule trigger, wait and
// timeout cards, the timeout and error workflows, log cards and the fields
// of event.trigger.
const e2eBot = `{
  "settings": {"inactivityTimeout": 30},
  "workflows": {
    "main": {"nodes": {
      "start": {"type": "start", "cards": [
        {"type": "log", "message": "started with {{ event.preview }}"},
        {"type": "message", "payload": "ticks {{ bot.ticks > 0 ? 'yes' : 'no' }}"},
        {"type": "expression", "condition": "event.preview === 'fail'", "to": "boom"},
        {"type": "expression", "condition": "event.preview === 'slow'", "to": "slow"},
        {"type": "message", "payload": "say anything"},
        {"type": "wait"},
        {"type": "message", "payload": "you said {{ event.preview }}"}
      ]},
      "boom": {"type": "standard", "cards": [{"type": "code", "code": "throw new Error('kaboom')"}]},
      "slow": {"type": "standard", "cards": [
        {"type": "timeout", "minutes": 0.02},
        {"type": "capture", "kind": "raw", "variable": "workflow.x", "prompt": "waiting for you"}
      ]}
    }},
    "timeout": {"nodes": {"t": {"type": "start", "cards": [{"type": "message", "payload": "Timed out"}]}}},
    "error": {"nodes": {"e": {"type": "start", "cards": [{"type": "message", "payload": "Error in {{ workflow.error.nodeId }}: {{ workflow.error.message }}"}]}}},
    "tick": {"nodes": {"t": {"type": "start", "cards": [{"type": "code", "code": "bot.ticks = (bot.ticks || 0) + 1"}]}}},
    "hello": {"nodes": {"h": {"type": "start", "cards": [
      {"type": "message", "payload": "trigger {{ event.trigger.flowId }}/{{ event.trigger.nodeId }} {{ event.trigger.eventName }} {{ event.trigger.conversationId === event.conversationId ? 'conv' : '' }} {{ event.trigger.userId === event.userId ? 'user' : '' }} {{ event.trigger.integration }}"}
    ]}}}
  },
  "triggers": [
    {"type": "schedule", "cron": "* * * * * *", "workflow": "tick"},
    {"type": "event", "eventName": "hello", "workflow": "hello"}
  ]
}`

const e2eScripts = `[
  {"name": "schedule trigger, log and wait cards", "conversation": [
    {"sleep": 2500},
    {"user": "hi"}, {"bot": "ticks yes"}, {"bot": "say anything"},
    {"user": "blue"}, {"bot": "you said blue"}]},
  {"name": "a code error leads to the error workflow", "conversation": [
    {"user": "fail"}, {"bot": "/ticks .*/"}, {"bot": "Error in boom: kaboom"}]},
  {"name": "inactivity leads to the timeout workflow", "conversation": [
    {"user": "slow"}, {"bot": "/ticks .*/"}, {"bot": "waiting for you"},
    {"sleep": 4000}, {"bot": "Timed out"}]},
  {"name": "custom event trigger fills event.trigger", "conversation": [
    {"event": {"name": "hello"}}, {"bot": "trigger hello/h hello conv user chat"}]}
]`

type compatBot struct {
	Name    string `json:"name"`
	URL     string `json:"url"`
	Scripts any    `json:"scripts"`
}

// TestWorkflowBotsThroughChatClient publishes the example bots and an
// end-to-end bot, then runs their scripted conversations with the real
// @botpress/chat client: every card and trigger kind.
func TestWorkflowBotsThroughChatClient(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	var bots []compatBot
	for _, name := range []string{"faq", "order-lookup", "survey"} {
		dir := filepath.Join(testapp.RepoRoot(), "examples", name)
		raw, err := botdir.Build(dir)
		if err != nil {
			t.Fatal(err)
		}
		scripts, err := botdir.LoadScripts(dir)
		if err != nil || len(scripts) == 0 {
			t.Fatalf("%s scripts: %v", name, err)
		}
		_, url := workflowBot(t, a, raw)
		bots = append(bots, compatBot{Name: name, URL: url, Scripts: scripts})
	}
	e2eID, url := workflowBot(t, a, json.RawMessage(e2eBot))
	var scripts any
	if err := json.Unmarshal([]byte(e2eScripts), &scripts); err != nil {
		t.Fatal(err)
	}
	bots = append(bots, compatBot{Name: "e2e", URL: url, Scripts: scripts})
	file := filepath.Join(t.TempDir(), "bots.json")
	data, _ := json.Marshal(bots)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := testapp.RunNode(t, "workflow.mjs", map[string]string{"WORKFLOW_BOTS": file})
	t.Log(out[max(0, len(out)-400):])

	// The code error is a bot issue; the log card wrote a log line.
	ws := defaultWorkspace(t, a)
	issues := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+e2eID+"/issues", "")
	found := false
	for _, is := range issues.body["issues"].([]any) {
		if m := is.(map[string]any); m["code"] == "workflow_error" {
			found = true
		}
	}
	if !found {
		t.Fatalf("issues = %v", issues.body)
	}
	logs := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+e2eID+"/logs", "")
	if !strings.Contains(strings.ToLower(toJSON(logs.body)), "started with hi") {
		t.Fatalf("logs = %v", logs.body)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestPublishFromBotJSON checks publish and read-back, and that every
// invalid fixture is refused with a 400 naming its JSON pointers while
// the deployed version stays.
func TestPublishFromBotJSON(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	good := json.RawMessage(`{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[{"type":"message","payload":"hi"}]}}}}}`)
	id, _ := workflowBot(t, a, good)
	var goodDoc any
	_ = json.Unmarshal(good, &goodDoc)
	got := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+id+"/bot-json", "")
	if got.status != 200 || toJSON(got.body["botJson"]) != toJSON(goodDoc) {
		t.Fatalf("getBotJson = %d %v", got.status, got.body)
	}
	files, _ := filepath.Glob(filepath.Join(testapp.RepoRoot(), "internal", "workflow", "testdata", "invalid", "*.json"))
	if len(files) < 10 {
		t.Fatalf("fixtures: %d", len(files))
	}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		var fx struct {
			Expect  []string        `json:"expect"`
			BotJSON json.RawMessage `json:"botJson"`
		}
		_ = json.Unmarshal(raw, &fx)
		body, _ := json.Marshal(map[string]any{"botJson": fx.BotJSON})
		res := adminCall(t, a, ws, "POST", "/v1/admin/bots/"+id+"/publish-from-bot-json", string(body))
		if res.status != 400 || res.body["type"] != "InvalidPayload" {
			t.Fatalf("%s: %d %v", f, res.status, res.body)
		}
		var ptrs []string
		for _, e := range res.body["metadata"].(map[string]any)["errors"].([]any) {
			ptrs = append(ptrs, e.(map[string]any)["pointer"].(string))
		}
		if ptrs = slices.Compact(ptrs); !slices.Equal(ptrs, fx.Expect) {
			t.Fatalf("%s: pointers %q, want %q", filepath.Base(f), ptrs, fx.Expect)
		}
		for _, p := range fx.Expect {
			if !strings.Contains(res.body["message"].(string), p) {
				t.Fatalf("%s: message %q does not name %s", filepath.Base(f), res.body["message"], p)
			}
		}
	}
	versions := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+id+"/versions", "")
	if n := len(versions.body["versions"].([]any)); n != 1 {
		t.Fatalf("versions after refused publishes = %d", n)
	}
	if got := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+id+"/bot-json", ""); toJSON(got.body["botJson"]) != toJSON(goodDoc) {
		t.Fatalf("bot JSON changed: %v", got.body)
	}
}

// chatHTTP is a minimal Chat API client for the restart test.
type chatHTTP struct {
	url, key string
}

func (c *chatHTTP) call(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, c.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("x-user-key", c.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %v", method, path, res.StatusCode, out)
	}
	return out
}

// botTexts waits until the conversation holds n bot messages and returns
// their texts, oldest first.
func (c *chatHTTP) botTexts(t *testing.T, conv, userID string, n int) []string {
	t.Helper()
	// Generous: on a loaded CI machine (every package's tests at once,
	// with -race) a dialog timeout due in 3 s was once not seen within 10 s
	// (TestTimeoutFiresOnceAcrossNodes, which then logs why).
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := c.call(t, "GET", "/conversations/"+conv+"/messages", nil)
		var texts []string
		msgs := out["messages"].([]any)
		for i := len(msgs) - 1; i >= 0; i-- {
			m := msgs[i].(map[string]any)
			if m["userId"] != userID {
				p := m["payload"].(map[string]any)
				texts = append(texts, p["text"].(string))
			}
		}
		if len(texts) >= n || time.Now().After(deadline) {
			return texts
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRestartInTheMiddleOfACapture stops the server while a capture waits
// (after a failed answer), starts a new one on the same data, and checks
// the capture resumes with its retry count.
func TestRestartInTheMiddleOfACapture(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a1 := testapp.Start(t, cfg())
		_, url := workflowBot(t, a1, json.RawMessage(`{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[
			{"type":"capture","kind":"number","variable":"workflow.n","prompt":"Number?","retries":1,"retryMessage":"A number please","onFailure":"fail"},
			{"type":"capture","kind":"email","variable":"user.email","prompt":"Email?"},
			{"type":"message","payload":"n={{ workflow.n }} email={{ user.email }}"}]},
			"fail":{"type":"end","cards":[{"type":"message","payload":"giving up"}]}}}}}`))
		c, conv, userID := chatSession(t, url)
		say := func(text string) {
			c.call(t, "POST", "/messages", map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": text}})
		}
		say("hi")
		c.botTexts(t, conv, userID, 1)
		say("x")
		if got := c.botTexts(t, conv, userID, 2); len(got) != 2 || got[1] != "A number please" {
			t.Fatalf("before restart: %q", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		a2 := testapp.Start(t, cfg())
		c.url = strings.Replace(c.url, a1.URL, a2.URL, 1)
		say("41")
		if got := c.botTexts(t, conv, userID, 3); len(got) != 3 || got[2] != "Email?" {
			t.Fatalf("after restart: %q", got)
		}
		say("ada@example.org")
		if got := c.botTexts(t, conv, userID, 4); len(got) != 4 || got[3] != "n=41 email=ada@example.org" {
			t.Fatalf("after restart: %q", got)
		}
	})
}

// TestWorkflowBotAnswersWithTheMessage: a workflow bot's turn folds as a
// JavaScript bot's does: createMessage returns once the bot's answer is
// stored with the message, in one commit, and the dialog goes on from
// turn to turn (a capture, its retry, the next capture), on both engines.
func TestWorkflowBotAnswersWithTheMessage(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a, _, url := foldedWorkflowBot(t, cfg, `{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[
			{"type":"capture","kind":"number","variable":"workflow.n","prompt":"Number?","retries":1,"retryMessage":"A number please","onFailure":"fail"},
			{"type":"capture","kind":"raw","variable":"workflow.name","prompt":"Name?"},
			{"type":"message","payload":"n={{ workflow.n }} name={{ workflow.name }}"}]},
			"fail":{"type":"end","cards":[{"type":"message","payload":"giving up"}]}}}}}`)
		c, conv, userID := chatSession(t, url)
		before := foldedMessages(t, a)
		for i, step := range []struct{ say, answer string }{
			{"hi", "Number?"}, {"x", "A number please"}, {"41", "Name?"}, {"Ada", "n=41 name=Ada"},
		} {
			// Listed at once: stored with the message, not after it.
			last := c.sayNewest(t, conv, step.say)
			if last["userId"] == userID || last["payload"].(map[string]any)["text"] != step.answer {
				t.Fatalf("message %d (%q): newest message once createMessage returned is %v, want the bot's %q", i, step.say, last, step.answer)
			}
		}
		if n := foldedMessages(t, a) - before; n != 4 {
			t.Fatalf("%v of 4 messages folded with their answer", n)
		}
	})
}

// foldedWorkflowBot starts a server on which a message folds with its
// workflow bot's answer even on a loaded machine (foldingApp), publishes
// botJSON there, and returns the server, the bot's id and its Chat API
// URL.
func foldedWorkflowBot(t *testing.T, cfg func() app.Config, botJSON string) (a *app.App, botID, url string) {
	t.Helper()
	a, _ = foldingApp(t, cfg)
	botID, url = workflowBot(t, a, json.RawMessage(botJSON))
	return a, botID, url
}

// sayNewest says text in conv and returns the conversation's newest
// message as soon as createMessage returned (a folded turn's answer is
// stored by then).
func (c *chatHTTP) sayNewest(t *testing.T, conv, text string) map[string]any {
	t.Helper()
	c.say(t, conv, text)
	msgs := c.call(t, "GET", "/conversations/"+conv+"/messages", nil)["messages"].([]any)
	return msgs[0].(map[string]any) // newest first
}

// foldedMessages reads parley_user_messages_total{commit="folded"} off
// the server's /metrics.
func foldedMessages(t *testing.T, a *app.App) float64 {
	t.Helper()
	return counter(scrape(t, a.URL+"/metrics"), "parley_user_messages_total", map[string]string{"commit": "folded"})
}

// TestWorkflowBotKeepsItsStates: a workflow bot's folded turns leave the
// states they set to the conversation's next message (a kept start, as a
// code bot's): a user variable counted up from message to message reads
// what the last turn left, whether or not that turn changed it, on both
// engines.
func TestWorkflowBotKeepsItsStates(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		_, _, url := foldedWorkflowBot(t, cfg, `{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[
			{"type":"expression","condition":"event.preview === 'same'","to":"same"},
			{"type":"code","code":"user.n = (user.n || 0) + 1"},
			{"type":"message","payload":"n={{ user.n }}"}]},
			"same":{"type":"standard","cards":[{"type":"message","payload":"still {{ user.n }}"}]}}}}}`)
		c, conv, _ := chatSession(t, url)
		for i, step := range []struct{ say, answer string }{
			{"a", "n=1"}, {"b", "n=2"}, {"same", "still 2"}, {"c", "n=3"}, {"same", "still 3"}, {"same", "still 3"}, {"d", "n=4"},
		} {
			if got := c.sayNewest(t, conv, step.say)["payload"].(map[string]any)["text"]; got != step.answer {
				t.Fatalf("message %d (%q): answered %q, want %q", i, step.say, got, step.answer)
			}
		}
	})
}

// TestIdleWorkflowDialogStoresNothing: a turn that leaves an idle dialog
// as it found it writes neither the dialog nor its inactivity timeout
// (stored idle, it has none); a dialog that waits is stored with its
// timeout, and cleared when it ends, on both engines. A timeout row put
// under an idle dialog (which no turn would leave) tells the writes: a
// turn that stored its dialog would have cleared it.
func TestIdleWorkflowDialogStoresNothing(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a, botID, url := foldedWorkflowBot(t, cfg, `{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[
			{"type":"expression","condition":"event.preview === 'ask'","to":"ask"},
			{"type":"message","payload":"echo {{ event.preview }}"}]},
			"ask":{"type":"standard","cards":[{"type":"capture","kind":"number","variable":"workflow.n","prompt":"Number?"},
			{"type":"message","payload":"n={{ workflow.n }}"}]}}}}}`)
		c, conv, _ := chatSession(t, url)
		ctx := context.Background()
		db := a.Store()
		answer := func(say, want string) {
			t.Helper()
			if got := c.sayNewest(t, conv, say)["payload"].(map[string]any)["text"]; got != want {
				t.Fatalf("%q: answered %q, want %q", say, got, want)
			}
		}
		dialog := func() string {
			t.Helper()
			raw, err := db.States().Get(ctx, botID, turns.ScopeDialog, conv)
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
		timeout := func() *store.DialogTimeout {
			t.Helper()
			due, err := db.DialogTimeouts().Due(ctx, time.Now().Add(48*time.Hour), 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range due {
				if d.ConversationID == conv {
					return d
				}
			}
			return nil
		}
		answer("a", "echo a")
		if d := dialog(); d != `{"turns":1}` {
			t.Fatalf("idle dialog after the first turn: %s", d)
		}
		probe := time.Now().Add(24 * time.Hour).Truncate(time.Millisecond)
		if err := db.DialogTimeouts().Set(ctx, &store.DialogTimeout{BotID: botID, ConversationID: conv, UserID: "probe", DueAt: probe}); err != nil {
			t.Fatal(err)
		}
		answer("b", "echo b")
		answer("c", "echo c")
		if d := timeout(); d == nil || !d.DueAt.Equal(probe) {
			t.Fatalf("the idle turns wrote their dialog: the probe is %+v", d)
		}
		answer("ask", "Number?")
		if d := dialog(); !strings.Contains(d, `"waiting":"capture"`) || !strings.Contains(d, `"lastActivity":`) {
			t.Fatalf("waiting dialog: %s", d)
		}
		if d := timeout(); d == nil || d.DueAt.Equal(probe) || d.UserID == "probe" {
			t.Fatalf("the waiting dialog's timeout: %+v", d)
		}
		answer("7", "n=7")
		if d := dialog(); d != `{"turns":1}` {
			t.Fatalf("idle dialog after the capture: %s", d)
		}
		if d := timeout(); d != nil {
			t.Fatalf("the ended dialog's timeout is still stored: %+v", d)
		}
	})
}
