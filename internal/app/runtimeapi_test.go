package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtimeapi"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// echoActions is the action runtime of the compatibility test: action
// "echo" returns its input, any other is unknown.
type echoActions struct{}

func (echoActions) CallAction(_ context.Context, botID, typ string, input json.RawMessage) (json.RawMessage, error) {
	if typ != "echo" {
		return nil, model.Errorf(model.ErrNotFound, "action %q not found", typ)
	}
	return json.RawMessage(fmt.Sprintf(`{"botId":%q,"input":%s}`, botID, input)), nil
}

// adminJSON calls the Admin API with the owner's token.
func adminJSON(t *testing.T, a *app.App, ws, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, a.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.AdminToken)
	req.Header.Set("x-workspace-id", ws)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("%s %s: %s", method, path, res.Status)
	}
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRuntimeAPICompatibility drives every Runtime operation with
// @botpress/client 1.45.0 (tests/compat/runtime-api.mjs): each asserted on
// its result, and each refused with the client's error class for another
// bot's credential, no credential, an unknown id, a malformed body and an
// oversized body, with nothing stored.
func TestRuntimeAPICompatibility(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg(), app.WithActions(echoActions{}))
		env, botID := apiSuiteEnv(t, a, "runtime")
		out := testapp.RunNode(t, "runtime-api.mjs", env)
		t.Log(summary("runtime-api.mjs", out))
		// trackAnalytics counters are readable back.
		counts, err := a.RuntimeAPI().Actions.Analytics(ctx, runtimeapi.BotCaller(botID), "2000-01-01", "2999-12-31")
		if err != nil || len(counts) != 1 || counts[0].Name != "compat.tracked" || counts[0].Count != 5 {
			t.Fatalf("analytics = %+v, %v", counts, err)
		}
	})
}

// summary is the script's pass/fail count line.
func summary(script, out string) string {
	var s struct{ Passed, Failed int }
	if i := strings.Index(out, "{"); i >= 0 {
		_ = json.Unmarshal([]byte(out[i:]), &s)
	}
	return fmt.Sprintf("%s: %d scenarios passed, %d failed", script, s.Passed, s.Failed)
}

// TestSandboxClientUsesRuntimeAPI runs a sandbox JavaScript bot whose
// `client` uses states and tags (the Runtime API's use cases) and whose
// event carries the real tags and integration; the user's message is
// created through the Runtime API, which gives the bot its turn.
func TestSandboxClientUsesRuntimeAPI(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		bot, _, _ := codeBot(t, a, `
bot.on.message('*', async ({ event, client }) => {
  const id = event.conversationId
  const got = await client.getOrSetState({ type: 'conversation', id, name: 'count', payload: { n: 0 } })
  const n = got.state.payload.n + 1
  await client.setState({ type: 'conversation', id, name: 'count', payload: { n } })
  await client.updateConversation({ id, tags: { seen: String(n) } })
  await client.updateUser({ id: event.userId, tags: { greeted: 'yes' } })
  let missing = 'no error'
  try { await client.getState({ type: 'conversation', id, name: 'nope' }) } catch (e) { missing = e.message }
  await client.createMessage({ conversationId: id, payload: { type: 'text',
    text: JSON.stringify({ n, integration: event.integration, tags: event.tags, missing }) } })
})`)
		token, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		call := botCaller(t, a, token, bot.ID)
		var u struct{ User struct{ ID string } }
		call("POST", "/v1/chat/users", `{"tags":{"ext":"42"}}`, &u)
		var c struct{ Conversation struct{ ID string } }
		call("POST", "/v1/chat/conversations", `{"channel":"dm","tags":{"thread":"t"},"integrationName":"telegram"}`, &c)
		call("POST", "/v1/chat/messages", `{"conversationId":"`+c.Conversation.ID+`","userId":"`+u.User.ID+`","type":"text","payload":{"text":"hi"},"tags":{"mid":"m1"}}`, nil)
		var reply struct {
			N           int
			Integration string
			Tags        struct{ User, Conversation, Message map[string]string }
			Missing     string
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var ms struct {
				Messages []struct {
					Direction string
					Payload   struct{ Text string }
				}
			}
			call("GET", "/v1/chat/messages?conversationId="+c.Conversation.ID, "", &ms)
			if len(ms.Messages) > 0 && ms.Messages[0].Direction == "outgoing" {
				if err := json.Unmarshal([]byte(ms.Messages[0].Payload.Text), &reply); err != nil {
					t.Fatal(err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no reply: %+v", ms)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if reply.N != 1 || reply.Integration != "telegram" || reply.Tags.User["ext"] != "42" ||
			reply.Tags.Conversation["thread"] != "t" || reply.Tags.Message["mid"] != "m1" || !strings.Contains(reply.Missing, "not found") {
			t.Fatalf("reply = %+v", reply)
		}
		var conv struct {
			Conversation struct{ Tags map[string]string }
		}
		call("GET", "/v1/chat/conversations/"+c.Conversation.ID, "", &conv)
		if conv.Conversation.Tags["seen"] != "1" {
			t.Fatalf("conversation tags = %v", conv.Conversation.Tags)
		}
		var st struct {
			State struct{ Payload map[string]int }
		}
		call("GET", "/v1/chat/states/conversation/"+c.Conversation.ID+"/count", "", &st)
		if st.State.Payload["n"] != 1 {
			t.Fatalf("state = %+v", st)
		}
	})
}

// apiSuiteEnv prepares the callers of an API suite run with the official
// client (tests/compat/*-api.mjs, tables.mjs): two bots of the default
// workspace (prefix-a and prefix-b) with an API key each, a bot token of
// the first, the owner's token, and a viewer member's token. It returns
// the script's environment and the first bot's id.
func apiSuiteEnv(t *testing.T, a *app.App, prefix string) (env map[string]string, botID string) {
	t.Helper()
	ctx := context.Background()
	ws := defaultWorkspace(t, a)
	var botA, botB struct{ Bot struct{ ID string } }
	adminJSON(t, a, ws, "POST", "/v1/admin/bots", `{"name":"`+prefix+`-a"}`, &botA)
	adminJSON(t, a, ws, "POST", "/v1/admin/bots", `{"name":"`+prefix+`-b"}`, &botB)
	var keyA, keyB struct{ Value string }
	adminJSON(t, a, ws, "POST", "/v1/admin/bots/baks", `{"botId":"`+botA.Bot.ID+`","note":"a"}`, &keyA)
	adminJSON(t, a, ws, "POST", "/v1/admin/bots/baks", `{"botId":"`+botB.Bot.ID+`","note":"b"}`, &keyB)
	tokenA, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, botA.Bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	viewerEmail := prefix + "-viewer@example.com"
	_, viewerToken, err := a.Accounts().IssueTokenForEmail(ctx, viewerEmail, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	adminJSON(t, a, ws, "POST", "/v1/admin/workspace-members", `{"email":"`+viewerEmail+`","role":"viewer"}`, nil)
	return map[string]string{
		"API_URL": a.URL, "BOT_ID": botA.Bot.ID, "OTHER_BOT_ID": botB.Bot.ID,
		"BOT_KEY": keyA.Value, "OTHER_BOT_KEY": keyB.Value, "BOT_TOKEN": tokenA,
		"OWNER_TOKEN": a.AdminToken, "VIEWER_TOKEN": viewerToken,
	}, botA.Bot.ID
}
