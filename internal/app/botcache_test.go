package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestRedeployReachesTheNextTurn: the turns runtime caches bots and
// versions (turns/botcache.go); a deploy through the Admin API must still
// reach the very next message's turn, whichever way it is made (updateBot
// with code, then again with the first code back).
func TestRedeployReachesTheNextTurn(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		echo := func(tag string) string {
			return `bot.on.message('text', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: '` + tag + `: ' + message.payload.text } })
})`
		}
		bot, chatURL, _ := codeBot(t, a, echo("v1"))
		admin := map[string]string{"x-workspace-id": defaultWorkspace(t, a)}
		var u struct{ Key string }
		chatCall(t, "POST", chatURL+"/users", "", map[string]any{}, &u)
		var cv struct{ Conversation struct{ ID string } }
		chatCall(t, "POST", chatURL+"/conversations", u.Key, map[string]any{}, &cv)
		lastReply := func(n int) string {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				ms, _, err := a.Store().Chat().ListMessages(ctx, bot.ID, cv.Conversation.ID, store.Page{Size: 100})
				if err != nil {
					t.Fatal(err)
				}
				var replies []string
				for _, m := range ms {
					if m.UserID == bot.ID {
						var p struct{ Text string }
						json.Unmarshal(m.Payload, &p)
						replies = append(replies, p.Text)
					}
				}
				if len(replies) >= n {
					// Newest first or last: find the one for message n.
					for _, r := range replies {
						if len(r) > 4 && r[4:] == fmt.Sprint(n) {
							return r
						}
					}
				}
			}
			t.Fatalf("no reply to message %d", n)
			return ""
		}
		for n, want := range []string{"v1", "v2", "v3", "v1"} {
			if n > 0 {
				code, _ := json.Marshal(echo(want))
				apiCall(t, a.URL, a.AdminToken, admin, "PUT", "/v1/admin/bots/"+bot.ID, `{"code":`+string(code)+`}`, nil)
			}
			chatCall(t, "POST", chatURL+"/messages", u.Key,
				map[string]any{"conversationId": cv.Conversation.ID, "payload": map[string]any{"type": "text", "text": fmt.Sprint(n + 1)}}, nil)
			if got := lastReply(n + 1); got != fmt.Sprintf("%s: %d", want, n+1) {
				t.Fatalf("message %d answered %q, want the code deployed just before (%s)", n+1, got, want)
			}
		}
	})
}

// TestBatchedTurnsSeeEachOthersState: the first turn of a batch starts
// with the user, conversation and states read with the batch; the next
// turns must see what the turns before them stored. Twenty messages sent
// at once (so that the dispatcher reads them in batches) each see the
// counters the previous one left, and the user's tags set by the first.
func TestBatchedTurnsSeeEachOthersState(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		bot, chatURL, _ := codeBot(t, a, `bot.on.message('text', async ({ message, event, client, state }) => {
  state.user.n = (state.user.n || 0) + 1
  state.conversation.n = (state.conversation.n || 0) + 1
  state.bot.n = (state.bot.n || 0) + 1
  if (state.user.n === 1) await client.updateUser({ id: event.userId, tags: { seen: 'yes' } })
  const seen = (event.tags.user && event.tags.user.seen) || '-'
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text',
    text: message.payload.text + ':' + state.user.n + '/' + state.conversation.n + '/' + state.bot.n + ':' + seen } })
})`)
		var u struct{ Key string }
		chatCall(t, "POST", chatURL+"/users", "", map[string]any{}, &u)
		var cv struct{ Conversation struct{ ID string } }
		chatCall(t, "POST", chatURL+"/conversations", u.Key, map[string]any{}, &cv)
		const n = 20
		for i := 1; i <= n; i++ {
			chatCall(t, "POST", chatURL+"/messages", u.Key, map[string]any{"conversationId": cv.Conversation.ID,
				"payload": map[string]any{"type": "text", "text": fmt.Sprint(i)}}, nil)
		}
		var replies map[string]string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			ms, _, err := a.Store().Chat().ListMessages(ctx, bot.ID, cv.Conversation.ID, store.Page{Size: 100})
			if err != nil {
				t.Fatal(err)
			}
			replies = map[string]string{}
			for _, m := range ms {
				var p struct{ Text string }
				json.Unmarshal(m.Payload, &p)
				if m.UserID == bot.ID {
					k, rest, _ := strings.Cut(p.Text, ":")
					replies[k] = rest
				}
			}
			if len(replies) == n {
				break
			}
		}
		for i := 1; i <= n; i++ {
			seen := "yes"
			if i == 1 {
				seen = "-"
			}
			if want := fmt.Sprintf("%d/%d/%d:%s", i, i, i, seen); replies[fmt.Sprint(i)] != want {
				t.Fatalf("message %d: got %q, want %q (all: %v)", i, replies[fmt.Sprint(i)], want, replies)
			}
		}
	})
}
