package webchat_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// runtimeEngines runs fn against servers (SQLite, PostgreSQL) whose bots
// run on the real JavaScript runtime.
func runtimeEngines(t *testing.T, fn func(t *testing.T, a *app.App)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, testapp.Start(t, testapp.Config(t, ""))) })
	t.Run("postgres", func(t *testing.T) { fn(t, testapp.Start(t, testapp.Config(t, testdb.PostgresURL(t)))) })
}

// runtimeBot creates a bot (with code when not empty) and returns its id,
// its Webchat API base URL and its Chat API base URL.
func runtimeBot(t *testing.T, a *app.App, code string) (id, webchatURL, chatURL string) {
	t.Helper()
	var ws struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	admin := map[string]string{"Authorization": "Bearer " + a.AdminToken}
	call(t, "GET", a.URL+"/v1/admin/workspaces", admin, nil, 200, &ws)
	admin["x-workspace-id"] = ws.Workspaces[0].ID
	body := map[string]any{"name": "v"}
	if code != "" {
		body["code"] = code
	}
	var res struct {
		Bot struct {
			ID           string `json:"id"`
			Integrations map[string]struct {
				WebhookID string `json:"webhookId"`
			} `json:"integrations"`
		} `json:"bot"`
	}
	call(t, "POST", a.URL+"/v1/admin/bots", admin, body, 200, &res)
	b := res.Bot
	return b.ID, a.URL + "/webchat/" + b.Integrations["webchat"].WebhookID, a.URL + "/chat/" + b.Integrations["chat"].WebhookID
}

type webchatUser struct {
	t       *testing.T
	base    string
	id, key string
	conv    string
}

func newWebchatUser(t *testing.T, base string) *webchatUser {
	t.Helper()
	var created struct {
		User struct{ ID string }
		Key  string
	}
	call(t, "POST", base+"/users", map[string]string{"Content-Type": "application/json"}, map[string]any{}, 201, &created)
	u := &webchatUser{t: t, base: base, id: created.User.ID, key: created.Key}
	var conv struct{ Conversation struct{ ID string } }
	call(t, "POST", base+"/conversations", u.headers(), map[string]any{}, 201, &conv)
	u.conv = conv.Conversation.ID
	return u
}

func (u *webchatUser) headers() map[string]string {
	return map[string]string{"x-user-key": u.key, "Content-Type": "application/json"}
}

// send posts a message payload and returns the stored payload.
func (u *webchatUser) send(payload map[string]any) map[string]any {
	u.t.Helper()
	var res struct {
		Message struct{ Payload map[string]any }
	}
	call(u.t, "POST", u.base+"/messages", u.headers(), map[string]any{"conversationId": u.conv, "payload": payload}, 201, &res)
	return res.Message.Payload
}

// botTexts waits for n bot messages and returns their texts, oldest first.
func (u *webchatUser) botTexts(n int) []string {
	u.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var res struct {
			Messages []struct {
				UserID  string
				Payload map[string]any
			}
		}
		call(u.t, "GET", u.base+"/conversations/"+u.conv+"/messages", u.headers(), nil, 200, &res)
		var texts []string
		for i := len(res.Messages) - 1; i >= 0; i-- {
			if m := res.Messages[i]; m.UserID != u.id {
				s, _ := m.Payload["text"].(string)
				texts = append(texts, s)
			}
		}
		if len(texts) >= n || time.Now().After(deadline) {
			return texts
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebchatButtonValueReachesWorkflowChoice clicks, in the webchat, the
// second of two buttons that have the same label: only the value tells
// them apart, and the workflow takes the value's branch.
func TestWebchatButtonValueReachesWorkflowChoice(t *testing.T) {
	runtimeEngines(t, func(t *testing.T, a *app.App) {
		id, base, _ := runtimeBot(t, a, "")
		doc := json.RawMessage(`{"workflows":{"main":{"nodes":{
			"start":{"type":"start","cards":[{"type":"choice","prompt":"Which one?","options":[
				{"label":"Buy","value":"sku-1","to":"one"},{"label":"Buy","value":"sku-2","to":"two"}]}]},
			"one":{"type":"end","cards":[{"type":"message","payload":"first {{ event.payload.value }}"}]},
			"two":{"type":"end","cards":[{"type":"message","payload":"second {{ event.payload.value }}"}]}}}}}`)
		var ws struct {
			Workspaces []struct{ ID string } `json:"workspaces"`
		}
		admin := map[string]string{"Authorization": "Bearer " + a.AdminToken}
		call(t, "GET", a.URL+"/v1/admin/workspaces", admin, nil, 200, &ws)
		admin["x-workspace-id"] = ws.Workspaces[0].ID
		call(t, "POST", a.URL+"/v1/admin/bots/"+id+"/publish-from-bot-json", admin, map[string]any{"botJson": doc}, 200, nil)

		u := newWebchatUser(t, base)
		u.send(map[string]any{"type": "text", "text": "hi"})
		if got := u.botTexts(1); !slices.Equal(got, []string{"Which one?"}) {
			t.Fatalf("prompt: %q", got)
		}
		// The component's body for a choice button click (as @botpress/webchat 4.5.2 sends it).
		stored := u.send(map[string]any{"type": "text", "text": "Buy", "value": "sku-2"})
		if stored["value"] != "sku-2" || stored["text"] != "Buy" || len(stored) != 3 {
			t.Fatalf("stored payload: %v", stored)
		}
		if got := u.botTexts(2); !slices.Equal(got, []string{"Which one?", "second sku-2"}) {
			var logs any
			call(t, "GET", a.URL+"/v1/admin/bots/"+id+"/logs", admin, nil, 200, &logs)
			var issues any
			call(t, "GET", a.URL+"/v1/admin/bots/"+id+"/issues", admin, nil, 200, &issues)
			t.Fatalf("after the click: %q\nlogs %v\nissues %v", got, logs, issues)
		}

		// Without a value, the label matches (the first "Buy").
		u.send(map[string]any{"type": "text", "text": "hi"})
		u.botTexts(3)
		u.send(map[string]any{"type": "text", "text": "buy"})
		if got := u.botTexts(4); len(got) != 4 || got[3] != "first " {
			t.Fatalf("typed label: %q", got)
		}

		// value must be a non-empty string, on text payloads only.
		for _, p := range []map[string]any{
			{"type": "text", "text": "Buy", "value": ""},
			{"type": "text", "text": "Buy", "value": 2},
		} {
			var e struct{ Type, Message string }
			call(t, "POST", base+"/messages", u.headers(), map[string]any{"conversationId": u.conv, "payload": p}, 400, &e)
			if e.Type != "InvalidPayload" {
				t.Fatalf("%v: %+v", p, e)
			}
		}
		stored = u.send(map[string]any{"type": "markdown", "markdown": "**x**", "value": "v"})
		if _, ok := stored["value"]; ok {
			t.Fatalf("a markdown payload kept value: %v", stored)
		}
	})
}

// TestWebchatButtonValueReachesCodeBots checks event.payload.value in a
// code bot, and that the Chat API still keeps a text payload's text only.
func TestWebchatButtonValueReachesCodeBots(t *testing.T) {
	runtimeEngines(t, func(t *testing.T, a *app.App) {
		_, base, chatURL := runtimeBot(t, a, `bot.on.message('text', async ({ event, client }) => {
			await client.createMessage({ conversationId: event.conversationId,
				payload: { type: 'text', text: 'value=' + (event.payload.value ?? 'none') + ' keys=' + Object.keys(event.payload).sort().join(',') } })
		})`)
		u := newWebchatUser(t, base)
		u.send(map[string]any{"type": "text", "text": "PB label", "value": "pb_value"})
		if got := u.botTexts(1); !slices.Equal(got, []string{"value=pb_value keys=text,type,value"}) {
			t.Fatalf("webchat click: %q", got)
		}
		u.send(map[string]any{"type": "text", "text": "typed"})
		if got := u.botTexts(2); len(got) != 2 || got[1] != "value=none keys=text,type" {
			t.Fatalf("webchat text: %q", got)
		}
		// The same user through the Chat API (a webchat key is a Chat API
		// key): the payload is stored with exactly its listed fields.
		var res struct {
			Message struct{ Payload map[string]any }
		}
		call(t, "POST", chatURL+"/messages", u.headers(), map[string]any{"conversationId": u.conv,
			"payload": map[string]any{"type": "text", "text": "chat", "value": "ignored"}}, 201, &res)
		if len(res.Message.Payload) != 2 {
			t.Fatalf("Chat API payload: %v", res.Message.Payload)
		}
		if got := u.botTexts(3); len(got) != 3 || got[2] != "value=none keys=text,type" {
			t.Fatalf("Chat API text: %q", got)
		}
	})
}
