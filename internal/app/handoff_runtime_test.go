package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// rawCall is one Runtime API request as c's bot, whatever its status.
func (c *runtimeClient) rawCall(method, path, body string) (int, map[string]any) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("x-bot-id", c.bot)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s %s: %s %s", method, path, res.Status, b)
	}
	return res.StatusCode, out
}

// TestRequestHandoffOverRuntimeAPI: a bot asks for a human over HTTP with
// its bot token (POST /v1/chat/conversations/{id}/handoff, Parley's
// extension); the conversation joins the Waiting list and the bot's turns
// in it are skipped until an operator hands it back. Bad requests get the
// standard error body and store nothing.
func TestRequestHandoffOverRuntimeAPI(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		ws := defaultWorkspace(t, a)
		bot, _, _ := codeBot(t, a, handoffBotCode)
		other, _, _ := codeBot(t, a, handoffBotCode)
		rt, rtOther := newRuntimeClient(t, a, bot.ID), newRuntimeClient(t, a, other.ID)
		user, conv, conv2 := rt.user(), rt.conversation(), rt.conversation()
		path := "/v1/chat/conversations/" + conv + "/handoff"
		waiting := func() []any {
			r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/handoffs?status=waiting", "")
			hs, _ := r.body["handoffs"].([]any)
			return hs
		}

		rt.say(conv, user, "hello")
		rt.waitFor(conv, "echo: hello")

		// Refused requests: the standard error body, nothing stored.
		for _, c := range []struct {
			name   string
			rc     *runtimeClient
			path   string
			body   string
			status int
			typ    string
		}{
			{"unknown conversation", rt, "/v1/chat/conversations/nope/handoff", `{}`, 404, "ResourceNotFound"},
			{"another bot's conversation", rtOther, path, `{}`, 404, "ResourceNotFound"},
			{"reason too long", rt, path, `{"reason":"` + strings.Repeat("x", 1001) + `"}`, 400, "InvalidPayload"},
			{"reason not a string", rt, path, `{"reason":5}`, 400, "InvalidPayload"},
			{"malformed body", rt, path, `not json`, 400, "InvalidPayload"},
		} {
			status, body := c.rc.rawCall("POST", c.path, c.body)
			if status != c.status || body["type"] != c.typ || body["id"] == nil || body["message"] == nil || body["code"] != float64(c.status) {
				t.Errorf("%s: %d %v, want %d %s", c.name, status, body, c.status, c.typ)
			}
		}
		if hs := waiting(); len(hs) != 0 {
			t.Fatalf("a refused request stored a handoff: %v", hs)
		}

		// The bot asks; asking again changes nothing.
		status, body := rt.rawCall("POST", path, `{"reason":"the user is upset"}`)
		h, _ := body["handoff"].(map[string]any)
		if status != 200 || h["conversationId"] != conv || h["status"] != "waiting" || h["reason"] != "the user is upset" ||
			h["requestedBy"] != "bot" || h["requestedAt"] == nil {
			t.Fatalf("request handoff: %d %v", status, body)
		}
		status, body = rt.rawCall("POST", path, `{"reason":"again"}`)
		if again, _ := body["handoff"].(map[string]any); status != 200 || again["reason"] != "the user is upset" || again["requestedAt"] != h["requestedAt"] {
			t.Fatalf("asking again: %d %v", status, body)
		}
		hs := waiting()
		if len(hs) != 1 || hs[0].(map[string]any)["conversationId"] != conv || hs[0].(map[string]any)["reason"] != "the user is upset" {
			t.Fatalf("waiting list: %v", hs)
		}

		// The bot's turns in it are skipped; other conversations go on.
		rt.say(conv, user, "are you there?")
		waitIdle(t, a, bot.ID, conv)
		if ms := rt.messages(conv); ms[len(ms)-1].Payload.Text != "are you there?" {
			t.Fatalf("the bot answered in handoff: %+v", ms[len(ms)-1])
		}
		rt.say(conv2, user, "elsewhere")
		rt.waitFor(conv2, "echo: elsewhere")

		// Handed back by an operator, the bot answers again.
		if r := adminCall(t, a, ws, "DELETE", "/v1/admin/bots/"+bot.ID+"/conversations/"+conv+"/handoff", ""); r.status != 200 {
			t.Fatalf("hand back: %d %v", r.status, r.body)
		}
		rt.say(conv, user, "back")
		rt.waitFor(conv, "echo: back")
	})
}
