package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// fakeIntegration is an HTTP server standing for a development
// integration (its `url`): it records the calls Parley makes and answers
// message_created with 503 until healthy.
type fakeIntegration struct {
	mu      sync.Mutex
	healthy bool
	calls   []integrationCall
	url     string
}

type integrationCall struct {
	op, alias, botID, key string
	body                  map[string]any
}

func startFakeIntegration(t *testing.T) *fakeIntegration {
	t.Helper()
	f := &fakeIntegration{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	f.url = "http://" + l.Addr().String() + "/"
	return f
}

func (f *fakeIntegration) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	c := integrationCall{op: r.Header.Get("x-bp-operation"), alias: r.Header.Get("x-integration-alias"),
		botID: r.Header.Get("x-bot-id"), key: r.Header.Get("x-bp-idempotency-key")}
	_ = json.Unmarshal(raw, &c.body)
	f.mu.Lock()
	healthy := f.healthy
	if c.op != "message_created" || healthy {
		f.calls = append(f.calls, c)
	}
	f.mu.Unlock()
	if c.op == "message_created" && !healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("{}"))
}

func (f *fakeIntegration) setHealthy(h bool) {
	f.mu.Lock()
	f.healthy = h
	f.mu.Unlock()
}

// delivered returns the texts of the message_created calls, in order.
func (f *fakeIntegration) delivered() (texts, keys []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.op == "message_created" {
			p, _ := c.body["payload"].(map[string]any)
			s, _ := p["text"].(string)
			texts = append(texts, s)
			keys = append(keys, c.key)
		}
	}
	return texts, keys
}

// apiCall calls Parley's HTTP API with a bearer token and headers.
func apiCall(t *testing.T, base, token string, headers map[string]string, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%s %s: %s %s", method, path, res.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIntegrationOutboxRetriesAndSurvivesRestart: the bot's replies in a
// conversation an integration owns are delivered to it in order; while it
// answers 503 they wait (retried with backoff, the failure in the
// integration's logs and the bot's issues), across a restart of Parley,
// and are delivered once each when it comes back.
func TestIntegrationOutboxRetriesAndSurvivesRestart(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		c := cfg()
		first := testapp.Start(t, c)
		token, ws := first.AdminToken, defaultWorkspace(t, first)
		fake := startFakeIntegration(t)
		admin := map[string]string{"x-workspace-id": ws}

		var created struct{ Integration struct{ ID string } }
		apiCall(t, first.URL, token, admin, "POST", "/v1/admin/integrations", `{"name":"relay","version":"0.1.0","dev":true,"url":"`+fake.url+`",
			"channels":{"chat":{"messages":{"text":{"schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}}}}`, &created)
		integrationID := created.Integration.ID
		code := `bot.on.message('*', async ({ message, client }) => {
			await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 're: ' + message.payload.text } })
		})`
		codeJSON, _ := json.Marshal(code)
		var bot struct{ Bot struct{ ID string } }
		apiCall(t, first.URL, token, admin, "POST", "/v1/admin/bots", `{"name":"relay-bot","code":`+string(codeJSON)+`}`, &bot)
		botID := bot.Bot.ID
		var up struct {
			Bot struct {
				Integrations map[string]struct{ Status, WebhookURL string }
			}
		}
		apiCall(t, first.URL, token, admin, "PUT", "/v1/admin/bots/"+botID,
			`{"integrations":{"relay":{"enabled":true,"integrationId":"`+integrationID+`","configuration":{}}}}`, &up)
		if st := up.Bot.Integrations["relay"].Status; st != model.IntegrationRegistered {
			t.Fatalf("status after install: %q", st)
		}
		var key struct{ Value string }
		apiCall(t, first.URL, token, admin, "POST", "/v1/admin/integrations/iaks", `{"integrationId":"`+integrationID+`"}`, &key)

		// The integration brings three user messages.
		as := map[string]string{"x-bot-id": botID, "x-integration-id": integrationID}
		var user struct{ User struct{ ID string } }
		apiCall(t, first.URL, key.Value, as, "POST", "/v1/chat/users/get-or-create", `{"tags":{"id":"u1"},"discriminateByTags":["id"]}`, &user)
		var conv struct {
			Conversation struct {
				ID          string
				Integration string
				Tags        map[string]string
			}
		}
		apiCall(t, first.URL, key.Value, as, "POST", "/v1/chat/conversations/get-or-create", `{"channel":"chat","tags":{"chat":"c1"},"discriminateByTags":["chat"]}`, &conv)
		if conv.Conversation.Integration != "relay" || conv.Conversation.Tags["chat"] != "c1" {
			t.Fatalf("the integration's conversation: %+v", conv.Conversation)
		}
		for _, text := range []string{"m1", "m2", "m3"} {
			apiCall(t, first.URL, key.Value, as, "POST", "/v1/chat/messages",
				`{"conversationId":"`+conv.Conversation.ID+`","userId":"`+user.User.ID+`","type":"text","payload":{"text":"`+text+`"}}`, nil)
		}
		// The bot answers all three; the integration refuses them (503).
		waitFor(t, "the bot's replies", 30*time.Second, func() bool {
			ms, _, err := first.Store().Chat().ListMessages(ctx, botID, conv.Conversation.ID, store.Page{Size: 20})
			n := 0
			for _, m := range ms {
				if m.Direction == model.DirectionOutgoing {
					n++
				}
			}
			return err == nil && n == 3
		})
		waitFor(t, "the failure in the integration's logs and the bot's issues", 10*time.Second, func() bool {
			logs, _, _ := first.Store().Integrations().Logs(ctx, model.IntegrationLogFilter{IntegrationID: integrationID}, store.Page{})
			issues, _, _ := first.Store().Issues().List(ctx, botID, store.Page{})
			logged, reported := false, false
			for _, l := range logs {
				logged = logged || strings.Contains(l.Message, "could not be reached")
			}
			for _, is := range issues {
				reported = reported || is.Code == "integration_unreachable"
			}
			return logged && reported
		})
		if texts, _ := fake.delivered(); len(texts) != 0 {
			t.Fatalf("delivered while refusing: %v", texts)
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := first.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}

		fake.setHealthy(true)
		second := testapp.Start(t, c)
		waitFor(t, "the deliveries after the restart", 30*time.Second, func() bool {
			texts, _ := fake.delivered()
			return len(texts) >= 3
		})
		time.Sleep(300 * time.Millisecond) // nothing more comes
		texts, keys := fake.delivered()
		if strings.Join(texts, ",") != "re: m1,re: m2,re: m3" {
			t.Fatalf("delivered %v, want the three replies once each, in order", texts)
		}
		for i, k := range keys {
			if k == "" || (i > 0 && k == keys[i-1]) {
				t.Fatalf("idempotency keys %v: one message id per delivery", keys)
			}
		}
		_ = second
	})
}

// TestIntegrationOutboxSkipsAckedMessage: the integration acknowledges
// the bot's message (its ack: updateMessage with tags) and then fails to
// answer (503, as when its process dies after the ack); the outbox retries
// the conversation, finds the message acknowledged and does not deliver it
// a second time; the next message goes.
func TestIntegrationOutboxSkipsAckedMessage(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		token, ws := a.AdminToken, defaultWorkspace(t, a)
		admin := map[string]string{"x-workspace-id": ws}
		var mu sync.Mutex
		var deliveries []string
		var ackAs map[string]string
		var ackKey string
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("x-bp-operation") != "message_created" {
				w.Write([]byte("{}"))
				return
			}
			raw, _ := io.ReadAll(r.Body)
			var m struct {
				Message struct {
					ID      string
					Payload map[string]any
				}
			}
			_ = json.Unmarshal(raw, &m)
			text, _ := m.Message.Payload["text"].(string)
			mu.Lock()
			deliveries = append(deliveries, text)
			first := len(deliveries) == 1
			as, key := ackAs, ackKey
			mu.Unlock()
			apiCall(t, a.URL, key, as, "PUT", "/v1/chat/messages/"+m.Message.ID, `{"tags":{"id":"sent-`+text+`"}}`, nil)
			if first {
				w.WriteHeader(http.StatusServiceUnavailable) // acked, then "died" before answering
				return
			}
			w.Write([]byte("{}"))
		})}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })

		var created struct{ Integration struct{ ID string } }
		apiCall(t, a.URL, token, admin, "POST", "/v1/admin/integrations", `{"name":"acker","version":"0.1.0","dev":true,"url":"http://`+l.Addr().String()+`/",
			"channels":{"chat":{"messages":{"text":{"schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}}}}`, &created)
		integrationID := created.Integration.ID
		code, _ := json.Marshal(`bot.on.message('*', async ({ message, client }) => {
			await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 're: ' + message.payload.text } })
		})`)
		var bot struct{ Bot struct{ ID string } }
		apiCall(t, a.URL, token, admin, "POST", "/v1/admin/bots", `{"name":"acker-bot","code":`+string(code)+`}`, &bot)
		apiCall(t, a.URL, token, admin, "PUT", "/v1/admin/bots/"+bot.Bot.ID,
			`{"integrations":{"acker":{"enabled":true,"integrationId":"`+integrationID+`","configuration":{}}}}`, nil)
		var key struct{ Value string }
		apiCall(t, a.URL, token, admin, "POST", "/v1/admin/integrations/iaks", `{"integrationId":"`+integrationID+`"}`, &key)
		as := map[string]string{"x-bot-id": bot.Bot.ID, "x-integration-id": integrationID}
		mu.Lock()
		ackAs, ackKey = as, key.Value
		mu.Unlock()
		var user struct{ User struct{ ID string } }
		apiCall(t, a.URL, key.Value, as, "POST", "/v1/chat/users/get-or-create", `{"tags":{"id":"u1"},"discriminateByTags":["id"]}`, &user)
		var conv struct{ Conversation struct{ ID string } }
		apiCall(t, a.URL, key.Value, as, "POST", "/v1/chat/conversations/get-or-create", `{"channel":"chat","tags":{"chat":"c1"},"discriminateByTags":["chat"]}`, &conv)
		for _, text := range []string{"m1", "m2"} {
			apiCall(t, a.URL, key.Value, as, "POST", "/v1/chat/messages",
				`{"conversationId":"`+conv.Conversation.ID+`","userId":"`+user.User.ID+`","type":"text","payload":{"text":"`+text+`"}}`, nil)
		}
		waitFor(t, "the second reply's delivery", 30*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(deliveries) >= 2
		})
		time.Sleep(2500 * time.Millisecond) // a sweep passes; nothing more comes
		mu.Lock()
		got := strings.Join(deliveries, ",")
		mu.Unlock()
		if got != "re: m1,re: m2" {
			t.Fatalf("delivered %q, want each reply once (the acked one not again)", got)
		}
	})
}

// TestIntegrationOutboxLeavesChatConversationsAlone: the bot's replies in
// a Chat API conversation (no installed integration owns it) cost the
// outbox no write: no delivery record, no lease. It used to take a lease
// and record each reply's delivery, a third of the server's CPU per
// message in parley-bench.
func TestIntegrationOutboxLeavesChatConversationsAlone(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		bot, chatURL, _ := codeBot(t, a, ackBot)
		key, convID := newChatConversation(t, chatURL)
		for n := range 3 {
			sendChatText(t, chatURL, key, convID, fmt.Sprint(n))
		}
		waitForBotText(t, a, bot.ID, convID, func(s string) bool { return s == "ack: 2" })
		// The outbox hears of each reply after its commit: give it time.
		time.Sleep(300 * time.Millisecond)
		seq, err := a.Store().Integrations().DeliveredSeq(ctx, bot.ID, convID)
		if err != nil {
			t.Fatal(err)
		}
		if seq != 0 {
			t.Fatalf("the outbox recorded a delivery up to seq %d in a chat conversation", seq)
		}
		// Released leases stay as rows until pruned: pruning them all
		// counts those ever taken.
		leases, err := a.Store().Leases().Prune(ctx, "integration-outbox:", time.Now().Add(time.Hour), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if leases != 0 {
			t.Fatalf("%d outbox leases taken for a chat conversation", leases)
		}
	})
}
