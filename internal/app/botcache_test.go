package app_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestRedeployReachesTheNextTurn: the turns runtime caches bots and
// versions (turns/botcache.go); a deploy through the Admin API must still
// reach the very next message's turn, whichever way it is made (updateBot
// with code, then again with the first code back).
func TestRedeployReachesTheNextTurn(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		echo := func(tag string) string {
			return `bot.on.message('text', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: '` + tag + `: ' + message.payload.text } })
})`
		}
		bot, chatURL, _ := codeBot(t, a, echo("v1"))
		admin := map[string]string{"x-workspace-id": defaultWorkspace(t, a)}
		key, convID := newChatConversation(t, chatURL)
		for n, want := range []string{"v1", "v2", "v3", "v1"} {
			if n > 0 {
				code, _ := json.Marshal(echo(want))
				apiCall(t, a.URL, a.AdminToken, admin, "PUT", "/v1/admin/bots/"+bot.ID, `{"code":`+string(code)+`}`, nil)
			}
			sendChatText(t, chatURL, key, convID, fmt.Sprint(n+1))
			suffix := fmt.Sprintf(": %d", n+1)
			got := waitForBotText(t, a, bot.ID, convID, func(s string) bool { return strings.HasSuffix(s, suffix) })
			if got != want+suffix {
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
		key, convID := newChatConversation(t, chatURL)
		const n = 20
		for i := 1; i <= n; i++ {
			sendChatText(t, chatURL, key, convID, fmt.Sprint(i))
		}
		replies := map[string]string{}
		for deadline := time.Now().Add(30 * time.Second); len(replies) < n && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, s := range botTexts(t, a, bot.ID, convID) {
				k, rest, _ := strings.Cut(s, ":")
				replies[k] = rest
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

// TestBatchedTurnsSeeEachOthersCalls: a turn that changed no state starts
// the next turn of its batch from the batch's read only when it made no
// Runtime API call: here the first turn tags the user through the client
// (its state untouched), and the turns read in the same batch after it
// must see the tag.
func TestBatchedTurnsSeeEachOthersCalls(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		bot, chatURL, _ := codeBot(t, a, `bot.on.message('text', async ({ message, event, client }) => {
  if (message.payload.text === 'tag') await client.updateUser({ id: event.userId, tags: { seen: 'yes' } })
  const seen = (event.tags.user && event.tags.user.seen) || '-'
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text',
    text: message.payload.text + ':' + seen } })
})`)
		key, convID := newChatConversation(t, chatURL)
		const n = 12
		sends := []string{"tag"}
		for i := 1; i < n; i++ {
			sends = append(sends, fmt.Sprint(i))
		}
		for _, s := range sends {
			sendChatText(t, chatURL, key, convID, s)
		}
		replies := map[string]string{}
		for deadline := time.Now().Add(30 * time.Second); len(replies) < n && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, s := range botTexts(t, a, bot.ID, convID) {
				k, rest, _ := strings.Cut(s, ":")
				replies[k] = rest
			}
		}
		if replies["tag"] != "-" {
			t.Fatalf("the tagging turn saw %q before its own call", replies["tag"])
		}
		for _, s := range sends[1:] {
			if replies[s] != "yes" {
				t.Fatalf("message %s: saw %q, want the tag set by the turn before it (all: %v)", s, replies[s], replies)
			}
		}
	})
}

// TestUserStateTurnsOfManyConversations: turns that set their user's state
// and the bot's commit in batches on PostgreSQL, each batch locking the
// states it shares first (store.Write.SharedStates): six users, each in a
// conversation of their own, send eight messages each, interleaved; every
// turn sees the count its user's last turn stored, and none fails (a
// deadlock between two batches would fail one, and its turn would answer
// with the fallback or run again from a count gone by).
func TestUserStateTurnsOfManyConversations(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		bot, chatURL, _ := codeBot(t, a, `bot.on.message('text', async ({ message, client, state }) => {
  state.user.n = (state.user.n || 0) + 1
  state.bot.last = message.payload.text
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text',
    text: message.payload.text + '=' + state.user.n } })
})`)
		const users, each = 6, 8
		var keys, convs [users]string
		for u := range users {
			keys[u], convs[u] = newChatConversation(t, chatURL)
		}
		for i := 1; i <= each; i++ {
			for u := range users {
				sendChatText(t, chatURL, keys[u], convs[u], fmt.Sprint(i))
			}
		}
		for u := range users {
			want := fmt.Sprint(each) + "=" + fmt.Sprint(each)
			waitForBotText(t, a, bot.ID, convs[u], func(s string) bool { return s == want })
			got := botTexts(t, a, bot.ID, convs[u])
			slices.Reverse(got) // oldest first
			if len(got) != each {
				t.Fatalf("user %d: replies %v, want %d", u, got, each)
			}
			for i, s := range got {
				if want := fmt.Sprintf("%d=%d", i+1, i+1); s != want {
					t.Fatalf("user %d: reply %d is %q, want %q (all: %v)", u, i+1, s, want, got)
				}
			}
		}
	})
}
