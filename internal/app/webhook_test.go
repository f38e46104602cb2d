package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtimeapi"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// webhookBot is a workflow bot whose webhook trigger answers in the
// event's conversation.
const webhookBot = `{
  "workflows": {
    "main": {"nodes": {"s": {"type": "start", "cards": [{"type": "message", "payload": "hello"}]}}},
    "hook": {"nodes": {"h": {"type": "start", "cards": [
      {"type": "message", "payload": "webhook says {{ event.payload.body.text }} via {{ event.integration }}, flow {{ event.trigger.flowId }}"}
    ]}}}
  },
  "triggers": [{"type": "webhook", "workflow": "hook"}]
}`

// webhookCodeBot is a sandbox bot: a bot-level webhook event (no
// conversationId in the JSON) runs in the webhook conversation and
// messages the conversation the JSON names.
const webhookCodeBot = `
bot.on.event('webhook:event', async ({ event, client }) => {
  const p = event.payload
  const target = p.body.notify || event.conversationId
  const q = Array.isArray(p.query.q) ? p.query.q.join(',') : (p.query.q || '')
  const text = [event.type, event.integration, p.body.text, p.method, p.path, q, p.query.r || '',
    target === event.conversationId ? 'same-conversation' : 'webhook-conversation'].join(' ')
  await client.createMessage({ conversationId: target, payload: { type: 'text', text } })
})
`

// enableWebhook turns on the bot's webhook integration with a secret and
// returns its URL; an invalid configuration is refused first.
func enableWebhook(t *testing.T, a *app.App, botID, secret string) (webhookURL string) {
	t.Helper()
	ws := defaultWorkspace(t, a)
	bad := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+botID, `{"integrations":{"webhook":{"enabled":true,"configuration":{"secret":42}}}}`)
	if bad.status != 400 || !strings.Contains(toJSON(bad.body), "integrations.webhook.configuration.secret") {
		t.Fatalf("invalid configuration: %d %v", bad.status, bad.body)
	}
	if got := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+botID, ""); got.body["bot"].(map[string]any)["integrations"].(map[string]any)["webhook"] != nil {
		t.Fatalf("a refused configuration installed the integration: %v", got.body)
	}
	res := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+botID,
		`{"integrations":{"webhook":{"enabled":true,"configuration":{"secret":"`+secret+`"}}}}`)
	if res.status != 200 {
		t.Fatalf("enable webhook: %d %v", res.status, res.body)
	}
	in := res.body["bot"].(map[string]any)["integrations"].(map[string]any)["webhook"].(map[string]any)
	url, _ := in["webhookUrl"].(string)
	if in["enabled"] != true || url != a.URL+"/"+in["webhookId"].(string) {
		t.Fatalf("webhook integration = %v", in)
	}
	return url
}

// webhookEvents lists the bot's stored webhook events.
func webhookEvents(t *testing.T, a *app.App, botID string) []*model.Event {
	t.Helper()
	evs, _, err := a.RuntimeAPI().Events.List(context.Background(), runtimeapi.BotCaller(botID),
		runtimeapi.ListEventsQuery{EventFilter: store.EventFilter{Type: model.WebhookEventType}})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func chatIntegration(t *testing.T, a *app.App, botID string) (url, key string) {
	t.Helper()
	ins, err := a.Store().Bots().Integrations(context.Background(), botID)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if in.Name == model.IntegrationChat {
			key, _ = in.Configuration[model.ChatEncryptionKey].(string)
			return a.URL + "/chat/" + in.WebhookID, key
		}
	}
	t.Fatal("no chat integration")
	return "", ""
}

// TestWebhookIntegration: on both engines, a POST to the built-in webhook
// integration starts a workflow bot's webhook trigger, whose flow messages
// a @botpress/chat user, and a sandbox bot gets the event as an event turn
// that messages the conversation its JSON names. A wrong or missing
// secret, non-JSON, unknown targets and oversized bodies are refused and
// store no event.
func TestWebhookIntegration(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		const secret = "s3cret-for-tests"

		flowBot, _ := workflowBot(t, a, json.RawMessage(webhookBot))
		flowURL := enableWebhook(t, a, flowBot, secret)
		chatURL, key := chatIntegration(t, a, flowBot)
		out := testapp.RunNode(t, "webhook.mjs", map[string]string{"CHAT_URL": chatURL, "ENCRYPTION_KEY": key,
			"WEBHOOK_URL": flowURL, "SECRET": secret, "MODE": "workflow"})
		if !strings.Contains(out, `{"accepted":1}`) {
			t.Fatalf("accepted requests: %s", out)
		}
		evs := webhookEvents(t, a, flowBot)
		if len(evs) != 1 {
			t.Fatalf("stored webhook events = %d, want 1 (refused requests store none)", len(evs))
		}
		var payload struct {
			Body    map[string]any `json:"body"`
			Method  string         `json:"method"`
			Headers map[string]any `json:"headers"`
		}
		_ = json.Unmarshal(evs[0].Payload, &payload)
		if payload.Body["text"] != "order 42 shipped" || payload.Method != "POST" || payload.Headers["content-type"] != "application/json" {
			t.Fatalf("event payload = %s", evs[0].Payload)
		}
		if _, leaked := payload.Headers[model.WebhookSecretHeader]; leaked {
			t.Fatalf("the secret header reached the bot: %s", evs[0].Payload)
		}

		// GET (no body) is a bot-level event with the query.
		req, _ := http.NewRequest("GET", flowURL+"/ping?x=1", nil)
		req.Header.Set(model.WebhookSecretHeader, secret)
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
			t.Fatalf("GET: %v %v", res, err)
		}
		evs = webhookEvents(t, a, flowBot)
		if len(evs) != 2 || !strings.Contains(string(evs[0].Payload), `"method":"GET"`) ||
			!strings.Contains(string(evs[0].Payload), `"path":"/ping"`) || !strings.Contains(string(evs[0].Payload), `"query":{"x":"1"}`) {
			t.Fatalf("after GET: %d events, newest %s", len(evs), evs[0].Payload)
		}

		// Concurrent bot-level events: all stored, in one webhook
		// conversation, each run once by the workflow (one message each,
		// the GET's included).
		const burst = 12
		var wg sync.WaitGroup
		statuses := make([]int, burst)
		for i := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = postJSON(t, flowURL, fmt.Sprintf(`{"text":"burst %d"}`, i), map[string]string{model.WebhookSecretHeader: secret}).status
			}()
		}
		wg.Wait()
		for i, st := range statuses {
			if st != 200 {
				t.Fatalf("concurrent POST %d: %d", i, st)
			}
		}
		flowHook := ""
		ins, _ := a.Store().Bots().Integrations(context.Background(), flowBot)
		for _, in := range ins {
			if in.Name == model.IntegrationWebhook {
				flowHook = conversations.WebhookConversationID(flowBot, in.WebhookID)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			n, err := a.Store().Chat().CountMessages(context.Background(), flowBot, flowHook)
			if err != nil {
				t.Fatal(err)
			}
			if n == burst+1 {
				break
			}
			if n > burst+1 || time.Now().After(deadline) {
				t.Fatalf("messages in the webhook conversation = %d, want %d", n, burst+1)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if evs := webhookEvents(t, a, flowBot); len(evs) != burst+2 {
			t.Fatalf("webhook events = %d, want %d", len(evs), burst+2)
		}

		code, _, codeKey := codeBot(t, a, webhookCodeBot)
		codeURL := enableWebhook(t, a, code.ID, secret)
		codeChat, _ := chatIntegration(t, a, code.ID)
		out = testapp.RunNode(t, "webhook.mjs", map[string]string{"CHAT_URL": codeChat, "ENCRYPTION_KEY": codeKey,
			"WEBHOOK_URL": codeURL, "SECRET": secret, "MODE": "code"})
		if !strings.Contains(out, `{"accepted":2}`) {
			t.Fatalf("accepted requests: %s", out)
		}
		if evs := webhookEvents(t, a, code.ID); len(evs) != 2 {
			t.Fatalf("stored webhook events = %d, want 2", len(evs))
		}
		// Any JSON is an event; a conversationId that is not a string is not.
		for _, c := range []struct {
			body   string
			status int
		}{
			{`[1, 2, 3]`, 200},
			{`"just a string"`, 200},
			{``, 200},
			{`{"conversationId": 5}`, 400},
			{`{"userId": ["x"]}`, 400},
			{`{"a": `, 400},
		} {
			res := postJSON(t, codeURL, c.body, map[string]string{model.WebhookSecretHeader: secret})
			if res.status != c.status || (c.status == 400 && res.body["type"] != "InvalidPayload") {
				t.Fatalf("POST %q: %d %v, want %d", c.body, res.status, res.body, c.status)
			}
		}
		if evs := webhookEvents(t, a, code.ID); len(evs) != 5 || string(evs[0].Payload[:9]) != `{"body":{` {
			t.Fatalf("stored webhook events = %d (newest %s), want 5", len(evs), evs[0].Payload)
		}
		// The bot-level event's conversation is the webhook integration's.
		ins, _ = a.Store().Bots().Integrations(context.Background(), code.ID)
		for _, in := range ins {
			if in.Name != model.IntegrationWebhook {
				continue
			}
			conv, err := a.Store().Chat().GetConversation(context.Background(), code.ID, conversations.WebhookConversationID(code.ID, in.WebhookID))
			if err != nil || conv.Integration != model.IntegrationWebhook {
				t.Fatalf("webhook conversation = %+v, %v", conv, err)
			}
		}

		// Disabled: the URL is unknown.
		ws := defaultWorkspace(t, a)
		if res := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+flowBot, `{"integrations":{"webhook":{"enabled":false}}}`); res.status != 200 {
			t.Fatalf("disable: %d %v", res.status, res.body)
		}
		res := postJSON(t, flowURL, `{}`, map[string]string{model.WebhookSecretHeader: secret})
		if res.status != 404 || res.body["type"] != "ResourceNotFound" {
			t.Fatalf("disabled webhook: %d %v", res.status, res.body)
		}
	})
}

func postJSON(t *testing.T, url, body string, headers map[string]string) adminResult {
	t.Helper()
	return sendJSON(t, "POST", url, body, headers)
}

// sendJSON sends a request with a JSON body (empty: none) and returns its
// status and decoded answer.
func sendJSON(t *testing.T, method, url, body string, headers map[string]string) adminResult {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return adminResult{res.StatusCode, out}
}

// TestWebhookRateLimit: requests to a bot's webhook count in the bot's
// request rate; above it they are refused with 429 and store nothing.
func TestWebhookRateLimit(t *testing.T) {
	cfg := testapp.Config(t, "")
	cfg.RatePerBot = 1 // bursts of 2
	a := testapp.Start(t, cfg)
	bot, _, _ := codeBot(t, a, `bot.on.event('*', async () => {})`)
	url := enableWebhook(t, a, bot.ID, "s")
	var got []int
	for range 4 {
		res := postJSON(t, url, `{}`, map[string]string{model.WebhookSecretHeader: "s"})
		got = append(got, res.status)
		if res.status == 429 && res.body["type"] != "RateLimited" {
			t.Fatalf("429 body = %v", res.body)
		}
	}
	accepted := 0
	for _, st := range got {
		if st == 200 {
			accepted++
		}
	}
	if got[len(got)-1] != 429 || accepted < 2 {
		t.Fatalf("statuses = %v, want 200s then 429", got)
	}
	if evs := webhookEvents(t, a, bot.ID); len(evs) != accepted {
		t.Fatalf("stored events = %d, accepted %d", len(evs), accepted)
	}
}
