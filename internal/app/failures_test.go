package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/turns"
)

// chatSession opens a conversation on a bot's Chat API URL.
func chatSession(t *testing.T, url string) (c *chatHTTP, conv, userID string) {
	t.Helper()
	c = &chatHTTP{url: url}
	u := c.call(t, "POST", "/users", map[string]any{})
	c.key = u["key"].(string)
	userID = u["user"].(map[string]any)["id"].(string)
	conv = c.call(t, "POST", "/conversations", map[string]any{})["conversation"].(map[string]any)["id"].(string)
	return c, conv, userID
}

func (c *chatHTTP) say(t *testing.T, conv, text string) {
	t.Helper()
	c.call(t, "POST", "/messages", map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": text}})
}

// TestFailedTurnsSendTheFallbackMessage: a throwing handler and a turn
// whose only reply was refused answer with the bot's fallback message (the
// default for a new bot, the configured one after updateBot, none when set
// to ""); a turn that works gets no fallback.
func TestFailedTurnsSendTheFallbackMessage(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	bot, url, _ := codeBot(t, a, `bot.on.message('text', async ({ event, message, client }) => {
  const t = event.payload.text
  if (t === 'throw') throw new Error('boom')
  if (t === 'refused') { try { await client.createMessage({ conversationId: message.conversationId, payload: { type: 'nope' } }) } catch (e) {} ; return }
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'ok: ' + t } })
})`)
	c, conv, user := chatSession(t, url)
	c.say(t, conv, "throw")
	c.say(t, conv, "refused")
	c.say(t, conv, "fine")
	want := []string{model.DefaultFallbackMessage, model.DefaultFallbackMessage, "ok: fine"}
	if got := c.botTexts(t, conv, user, 3); !slices.Equal(got, want) {
		t.Fatalf("bot messages = %q, want %q", got, want)
	}

	res := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+bot.ID, `{"integrations":{"chat":{"enabled":true,"configuration":{"fallbackMessage":"Custom fallback"}}}}`)
	if res.status != 200 {
		t.Fatalf("updateBot: %d %v", res.status, res.body)
	}
	c.say(t, conv, "throw")
	if got := c.botTexts(t, conv, user, 4); len(got) != 4 || got[3] != "Custom fallback" {
		t.Fatalf("bot messages = %q, want the custom fallback last", got)
	}
	adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+bot.ID, `{"integrations":{"chat":{"enabled":true,"configuration":{"fallbackMessage":""}}}}`)
	c.say(t, conv, "throw")
	c.say(t, conv, "after")
	if got := c.botTexts(t, conv, user, 5); len(got) != 5 || got[4] != "ok: after" {
		t.Fatalf("bot messages = %q, want no fallback when it is empty", got)
	}
	issues := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/issues", "")
	if n := len(issues.body["issues"].([]any)); n == 0 {
		t.Fatal("the failures raised no issue")
	}
}

// TestBotWithoutCodeRaisesOneIssue: messages to a bot with nothing
// deployed become occurrences of one issue, and the bot stays silent.
func TestBotWithoutCodeRaisesOneIssue(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	ctx := context.Background()
	p, _ := a.Accounts().Authenticate(ctx, a.AdminToken)
	cc, _ := a.Accounts().InWorkspace(ctx, p, ws)
	v, err := a.Bots().Create(ctx, cc, administration.BotWrite{})
	if err != nil {
		t.Fatal(err)
	}
	var url string
	for _, in := range v.Integrations {
		if in.Name == model.IntegrationChat {
			url = a.URL + "/chat/" + in.WebhookID
			if in.Configuration[model.ChatFallbackMessage] != model.DefaultFallbackMessage {
				t.Fatalf("a new bot's chat configuration = %v, want the default fallbackMessage", in.Configuration)
			}
		}
	}
	c, conv, user := chatSession(t, url)
	for _, text := range []string{"one", "two", "three"} {
		c.say(t, conv, text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		issues := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+v.Bot.ID+"/issues", "").body["issues"].([]any)
		if len(issues) == 1 {
			is := issues[0].(map[string]any)
			if is["code"] != turns.IssueNoCode {
				t.Fatalf("issue = %v", is)
			}
			if is["eventsCount"] == float64(3) {
				break
			}
		} else if len(issues) > 1 {
			t.Fatalf("issues = %v, want one", issues)
		}
		if time.Now().After(deadline) {
			t.Fatalf("issues = %v, want one no_code_deployed issue with 3 occurrences", issues)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := c.botTexts(t, conv, user, 0); len(got) != 0 {
		t.Fatalf("a bot with no code answered %q", got)
	}
}
