package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// runtimeClient calls the Runtime API as one bot, with a bot token.
type runtimeClient struct {
	t     *testing.T
	url   string
	bot   string
	token string
}

func newRuntimeClient(t *testing.T, a *app.App, botID string) *runtimeClient {
	t.Helper()
	token, err := a.RuntimeAPI().Credentials.MintBotToken(context.Background(), botID)
	if err != nil {
		t.Fatal(err)
	}
	return &runtimeClient{t, a.URL, botID, token}
}

func (c *runtimeClient) call(method, path, body string, out any) {
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
	if res.StatusCode >= 300 {
		c.t.Fatalf("%s %s: %s %s", method, path, res.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *runtimeClient) user() string {
	var u struct{ User struct{ ID string } }
	c.call("POST", "/v1/chat/users", `{"tags":{}}`, &u)
	return u.User.ID
}

func (c *runtimeClient) conversation() string {
	var v struct{ Conversation struct{ ID string } }
	c.call("POST", "/v1/chat/conversations", `{"channel":"dm","tags":{}}`, &v)
	return v.Conversation.ID
}

func (c *runtimeClient) say(conv, user, text string) {
	c.t.Helper()
	b, _ := json.Marshal(text)
	c.call("POST", "/v1/chat/messages", `{"conversationId":"`+conv+`","userId":"`+user+`","type":"text","payload":{"text":`+string(b)+`},"tags":{}}`, nil)
}

type rtMessage struct {
	ID        string
	UserID    string
	Direction string
	Payload   struct{ Text string }
}

// messages lists a conversation's messages, oldest first.
func (c *runtimeClient) messages(conv string) []rtMessage {
	c.t.Helper()
	var ms struct{ Messages []rtMessage }
	c.call("GET", "/v1/chat/messages?conversationId="+conv, "", &ms)
	for i, j := 0, len(ms.Messages)-1; i < j; i, j = i+1, j-1 {
		ms.Messages[i], ms.Messages[j] = ms.Messages[j], ms.Messages[i]
	}
	return ms.Messages
}

// waitFor polls the conversation until its last message is the bot's with
// text want.
func (c *runtimeClient) waitFor(conv, want string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ms := c.messages(conv)
		if n := len(ms); n > 0 && ms[n-1].Direction == model.DirectionOutgoing && ms[n-1].UserID == c.bot && ms[n-1].Payload.Text == want {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no bot reply %q; messages: %+v", want, ms)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitIdle waits until the conversation has no pending turn: the bot ran
// or skipped every turn.
func waitIdle(t *testing.T, a *app.App, botID, conv string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ts, err := a.Store().Signals().PendingTurns(context.Background(), botID, conv, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("conversation %s still has pending turns", conv)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

const handoffBotCode = `
bot.on.message('*', async ({ event, client }) => {
  const text = event.payload.text
  if (text === 'human') {
    await client.requestHandoff({ reason: 'asked for a human' })
    await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text', text: 'A person will answer you.' } })
    return
  }
  if (text === 'fail') throw new Error('boom')
  await client.trackAnalytics({ name: 'echoed', count: 1 })
  await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text', text: 'echo: ' + text } })
})`

// TestHandoffThroughAdminAPI: a bot asks for a human from its code; the
// conversation is listed as waiting with how long it waited; the bot's
// turns are skipped while in handoff (the user's messages are stored); an
// operator takes it over, replies as an agent user, and hands it back,
// after which the bot answers again; bad input gets the standard error
// body with nothing stored; each step is in the audit trail.
func TestHandoffThroughAdminAPI(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		ws := defaultWorkspace(t, a)
		bot, _, _ := codeBot(t, a, handoffBotCode)
		rt := newRuntimeClient(t, a, bot.ID)
		user, conv, other := rt.user(), rt.conversation(), rt.conversation()
		base := "/v1/admin/bots/" + bot.ID + "/conversations/" + conv + "/handoff"

		rt.say(conv, user, "hello")
		rt.waitFor(conv, "echo: hello")
		if r := adminCall(t, a, ws, "GET", base, ""); r.status != 200 || r.body["handoff"] != nil {
			t.Fatalf("handoff before any: %d %v", r.status, r.body)
		}
		if r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/conversations/nope/handoff", ""); r.status != 404 {
			t.Fatalf("handoff of an unknown conversation: %d %v", r.status, r.body)
		}

		// The bot asks for a human.
		rt.say(conv, user, "human")
		rt.waitFor(conv, "A person will answer you.")
		time.Sleep(30 * time.Millisecond)
		r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/handoffs?status=waiting", "")
		hs, _ := r.body["handoffs"].([]any)
		if r.status != 200 || len(hs) != 1 {
			t.Fatalf("waiting list: %d %v", r.status, r.body)
		}
		h := hs[0].(map[string]any)
		if h["conversationId"] != conv || h["status"] != "waiting" || h["reason"] != "asked for a human" || h["requestedBy"] != "bot" ||
			h["waitingMs"].(float64) < 30 || h["agent"] != nil {
			t.Fatalf("waiting handoff: %v", h)
		}

		// While waiting, the bot does not answer; the message is stored.
		rt.say(conv, user, "anyone there?")
		waitIdle(t, a, bot.ID, conv)
		ms := rt.messages(conv)
		if last := ms[len(ms)-1]; last.Payload.Text != "anyone there?" || last.Direction != model.DirectionIncoming {
			t.Fatalf("the bot answered during the handoff: %+v", ms)
		}

		// A viewer may list, not take over.
		_, viewerToken, err := a.Accounts().IssueTokenForEmail(ctx, "support-viewer@example.com", "viewer")
		if err != nil {
			t.Fatal(err)
		}
		adminJSON(t, a, ws, "POST", "/v1/admin/workspace-members", `{"email":"support-viewer@example.com","role":"viewer"}`, nil)
		req, _ := http.NewRequest("POST", a.URL+base, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+viewerToken)
		req.Header.Set("x-workspace-id", ws)
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 403 {
			t.Fatalf("viewer take over: %v %v", res.Status, err)
		}

		// Replying before taking over is refused.
		if r := adminCall(t, a, ws, "POST", base+"/messages", `{"payload":{"type":"text","text":"too early"}}`); r.status != 409 || r.body["id"] == nil || r.body["code"] != float64(409) {
			t.Fatalf("reply before take over: %d %v", r.status, r.body)
		}

		// Take over.
		r = adminCall(t, a, ws, "POST", base, `{}`)
		if r.status != 200 {
			t.Fatalf("take over: %d %v", r.status, r.body)
		}
		h = r.body["handoff"].(map[string]any)
		agent, _ := h["agent"].(map[string]any)
		if h["status"] != "active" || h["reason"] != "asked for a human" || agent == nil || !strings.HasPrefix(agent["userId"].(string), "agent_") ||
			!strings.HasPrefix(agent["name"].(string), "Agent ") || h["takenAt"] == nil {
			t.Fatalf("taken over: %v", h)
		}
		agentUser := agent["userId"].(string)
		if r := adminCall(t, a, ws, "GET", base, ""); r.status != 200 || r.body["handoff"].(map[string]any)["status"] != "active" {
			t.Fatalf("get handoff: %d %v", r.status, r.body)
		}
		if r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/handoffs?status=waiting", ""); len(r.body["handoffs"].([]any)) != 0 {
			t.Fatalf("still waiting after the take over: %v", r.body)
		}
		if r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/handoffs?status=active", ""); len(r.body["handoffs"].([]any)) != 1 {
			t.Fatalf("active list: %v", r.body)
		}

		// Bad replies: the standard error body, nothing stored.
		before := len(rt.messages(conv))
		for _, c := range []struct {
			body   string
			status int
		}{
			{`{"payload":{"type":"text"}}`, 400},
			{`{"payload":{"type":"nope","text":"x"}}`, 400},
			{`{}`, 400},
			{`not json`, 400},
		} {
			r := adminCall(t, a, ws, "POST", base+"/messages", c.body)
			if r.status != c.status || r.body["id"] == nil || r.body["type"] == nil || r.body["message"] == nil {
				t.Errorf("reply %s: %d %v, want %d with the error body", c.body, r.status, r.body, c.status)
			}
		}
		if r := adminCall(t, a, ws, "POST", "/v1/admin/bots/"+bot.ID+"/conversations/"+other+"/handoff/messages", `{"payload":{"type":"text","text":"x"}}`); r.status != 409 {
			t.Errorf("reply in a conversation not in handoff: %d %v", r.status, r.body)
		}
		if r := adminCall(t, a, ws, "POST", "/v1/admin/bots/"+bot.ID+"/conversations/nope/handoff", `{}`); r.status != 404 {
			t.Errorf("take over an unknown conversation: %d %v", r.status, r.body)
		}
		if n := len(rt.messages(conv)); n != before {
			t.Fatalf("a refused reply stored something: %d messages, had %d", n, before)
		}

		// Reply as an agent: the user sees it from the agent user.
		r = adminCall(t, a, ws, "POST", base+"/messages", `{"payload":{"type":"text","text":"Hi, a human here."}}`)
		if r.status != 201 {
			t.Fatalf("reply: %d %v", r.status, r.body)
		}
		ms = rt.messages(conv)
		last := ms[len(ms)-1]
		if last.Payload.Text != "Hi, a human here." || last.UserID != agentUser || last.Direction != model.DirectionOutgoing {
			t.Fatalf("agent reply: %+v", last)
		}
		var au struct{ User struct{ ID, Name string } }
		rt.call("GET", "/v1/chat/users/"+agentUser, "", &au)
		if !strings.HasPrefix(au.User.Name, "Agent ") {
			t.Fatalf("agent user: %+v", au)
		}
		// The agent's reply is not a turn, and the user's answer is not the bot's.
		rt.say(conv, user, "thanks")
		waitIdle(t, a, bot.ID, conv)
		if ms := rt.messages(conv); ms[len(ms)-1].Payload.Text != "thanks" {
			t.Fatalf("the bot answered while taken over: %+v", ms[len(ms)-1])
		}

		// Hand back: the bot answers what comes next.
		if r := adminCall(t, a, ws, "DELETE", base, ""); r.status != 200 {
			t.Fatalf("hand back: %d %v", r.status, r.body)
		}
		if r := adminCall(t, a, ws, "DELETE", base, ""); r.status != 404 || r.body["type"] != "ResourceNotFound" {
			t.Fatalf("hand back twice: %d %v", r.status, r.body)
		}
		rt.say(conv, user, "back")
		rt.waitFor(conv, "echo: back")
		texts := []string{}
		for _, m := range rt.messages(conv) {
			texts = append(texts, m.Payload.Text)
		}
		want := []string{"hello", "echo: hello", "human", "A person will answer you.", "anyone there?", "Hi, a human here.", "thanks", "back", "echo: back"}
		if strings.Join(texts, "|") != strings.Join(want, "|") {
			t.Fatalf("transcript:\n got %q\nwant %q", texts, want)
		}

		// The audit trail: take over, reply, hand back (newest first).
		var audit struct {
			Records []struct {
				Action, ResourceID, ResourceName, UserEmail, Value string
			}
		}
		adminJSON(t, a, ws, "GET", "/v1/admin/workspaces/"+ws+"/audit-records", "", &audit)
		var got []string
		for _, rec := range audit.Records {
			if strings.HasPrefix(rec.Action, "HANDOFF_") {
				if rec.ResourceID != conv || rec.ResourceName != bot.Name || rec.UserEmail == "" || !strings.Contains(rec.Value, bot.ID) {
					t.Errorf("audit record: %+v", rec)
				}
				got = append(got, rec.Action)
			}
		}
		if strings.Join(got, ",") != "HANDOFF_HAND_BACK,HANDOFF_REPLY,HANDOFF_TAKE_OVER" {
			t.Fatalf("audit trail: %v", got)
		}

		// Taking over without a request: the operator's own handoff.
		base2 := "/v1/admin/bots/" + bot.ID + "/conversations/" + other + "/handoff"
		if r := adminCall(t, a, ws, "POST", base2, `{"reason":"checking"}`); r.status != 200 || r.body["handoff"].(map[string]any)["requestedBy"] == "bot" {
			t.Fatalf("take over without request: %d %v", r.status, r.body)
		}
		if r := adminCall(t, a, ws, "POST", base2, `{}`); r.status != 200 {
			t.Fatalf("take over again (same operator): %d %v", r.status, r.body)
		}
	})
}

// TestWorkflowHandoffCard: a workflow's handoff card puts the conversation
// on the waiting list with its rendered reason, and pauses the bot.
func TestWorkflowHandoffCard(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	var b struct{ Bot struct{ ID string } }
	adminJSON(t, a, ws, "POST", "/v1/admin/bots", `{"name":"wf-handoff"}`, &b)
	doc := `{"workflows":{"main":{"nodes":{
		"start":{"type":"start","cards":[
			{"type":"expression","condition":"event.payload.text === 'agent'","to":"human"},
			{"type":"message","payload":"You said {{event.payload.text}}"}]},
		"human":{"type":"end","cards":[
			{"type":"message","payload":"Transferring you."},
			{"type":"handoff","reason":"user typed {{event.payload.text}}"}]}}}}}`
	if r := adminCall(t, a, ws, "POST", "/v1/admin/bots/"+b.Bot.ID+"/publish-from-bot-json", `{"botJson":`+doc+`}`); r.status != 200 {
		t.Fatalf("publish: %d %v", r.status, r.body)
	}
	rt := newRuntimeClient(t, a, b.Bot.ID)
	user, conv := rt.user(), rt.conversation()
	rt.say(conv, user, "hi")
	rt.waitFor(conv, "You said hi")
	rt.say(conv, user, "agent")
	rt.waitFor(conv, "Transferring you.")
	waitIdle(t, a, b.Bot.ID, conv)
	r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+b.Bot.ID+"/handoffs?status=waiting", "")
	hs, _ := r.body["handoffs"].([]any)
	if len(hs) != 1 || hs[0].(map[string]any)["reason"] != "user typed agent" {
		t.Fatalf("waiting list: %v", r.body)
	}
	rt.say(conv, user, "hello?")
	waitIdle(t, a, b.Bot.ID, conv)
	if ms := rt.messages(conv); ms[len(ms)-1].Payload.Text != "hello?" {
		t.Fatalf("the workflow answered while waiting: %+v", ms[len(ms)-1])
	}
}

// TestGetBotAnalyticsWithClient sends known traffic (two users, two
// conversations, five messages, one failing turn) and checks the figures
// of getBotAnalytics through @botpress/client 1.45.0 and of Parley's hourly
// series (tests/compat/analytics.mjs) against it.
func TestGetBotAnalyticsWithClient(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		ws := defaultWorkspace(t, a)
		bot, _, _ := codeBot(t, a, handoffBotCode)
		other, _, _ := codeBot(t, a, handoffBotCode)
		rt := newRuntimeClient(t, a, bot.ID)
		u1, u2 := rt.user(), rt.user()
		c1, c2 := rt.conversation(), rt.conversation()
		texts := map[string][]string{c1: {"a", "b", "c"}, c2: {"d", "fail"}}
		users := map[string]string{c1: u1, c2: u2}
		sent := 0
		for _, conv := range []string{c1, c2} {
			for _, text := range texts[conv] {
				rt.say(conv, users[conv], text)
				sent++
				if text == "fail" {
					waitIdle(t, a, bot.ID, conv)
				} else {
					rt.waitFor(conv, "echo: "+text)
				}
			}
		}
		// Every user message got one answer (an echo, or the fallback
		// message of the failed turn).
		replies := 0
		for _, conv := range []string{c1, c2} {
			for _, m := range rt.messages(conv) {
				if m.Direction == model.DirectionOutgoing {
					replies++
				}
			}
		}
		if replies != sent {
			t.Fatalf("%d replies to %d messages", replies, sent)
		}
		// Traffic on another bot is not counted.
		ort := newRuntimeClient(t, a, other.ID)
		ou, oc := ort.user(), ort.conversation()
		ort.say(oc, ou, "x")
		ort.waitFor(oc, "echo: x")

		expect, _ := json.Marshal(map[string]any{"userMessages": sent, "botMessages": replies, "newUsers": 2, "returningUsers": 0,
			"sessions": 2, "customEvents": map[string]int{"echoed": 4}, "turns": sent, "turnFailures": 1, "users": 2})
		_, viewerToken, err := a.Accounts().IssueTokenForEmail(context.Background(), "analytics-viewer@example.com", "viewer")
		if err != nil {
			t.Fatal(err)
		}
		adminJSON(t, a, ws, "POST", "/v1/admin/workspace-members", `{"email":"analytics-viewer@example.com","role":"viewer"}`, nil)
		out := testapp.RunNode(t, "analytics.mjs", map[string]string{
			"API_URL": a.URL, "TOKEN": a.AdminToken, "VIEWER_TOKEN": viewerToken, "WORKSPACE_ID": ws, "BOT_ID": bot.ID,
			"EXPECT": string(expect), "NOW": strconv.FormatInt(time.Now().UnixMilli(), 10),
		})
		t.Log(summary("analytics.mjs", out))
	})
}
