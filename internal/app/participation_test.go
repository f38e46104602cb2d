package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
)

// TestRemovedParticipantRefusedInTheCommit: a user's participation cached
// by this node and expired is checked in the message's own transaction
// (conversations.Chat.participation). A participation removed where this
// node's cache did not hear of it (straight through the store, as another
// node's removal) refuses the user's next message once the cache entry
// expired: 403, nothing stored, no answer from the folding JavaScript bot
// whose turn ran on it; the next one is refused by the read. A participant
// whose entry expired still posts.
//
// SQLite only: a node on PostgreSQL hears the other nodes' changes (the
// broker) and keeps answers for a minute, so an entry expires there only
// after a minute (TestChangesReachTheOtherNode has the removal made by
// another node; httpapi/chat's TestExpiredParticipationCheckedInTheCommit
// the check in the transaction on both engines, without a broker).
func TestRemovedParticipantRefusedInTheCommit(t *testing.T) {
	sqliteOnly(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a, _ := foldingApp(t, cfg)
		bot, url, _ := codeBot(t, a, `bot.on.message('text', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo ' + message.payload.text } })
})`)
		chat, conv, user := chatSession(t, url)
		chat.say(t, conv, "a")
		chat.botTexts(t, conv, user, 1)
		time.Sleep(1100 * time.Millisecond) // past the participation's cache TTL
		chat.say(t, conv, "b")
		chat.botTexts(t, conv, user, 2)

		if err := a.Store().Chat().RemoveParticipant(ctx, bot.ID, conv, user); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		for _, text := range []string{"c", "d"} {
			if st := postStatus(t, chat, conv, text); st != http.StatusForbidden {
				t.Fatalf("message %q of a removed participant: %d, want 403", text, st)
			}
		}
		time.Sleep(300 * time.Millisecond) // an answer that was to come
		msgs, _, err := a.Store().Chat().ListMessages(ctx, bot.ID, conv, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 4 {
			var texts []string
			for _, m := range msgs {
				texts = append(texts, string(m.Payload))
			}
			t.Fatalf("%d messages stored, want the 4 from before the removal: %s", len(msgs), strings.Join(texts, ", "))
		}
	})
}

// postStatus posts a text message and returns the status.
func postStatus(t *testing.T, c *chatHTTP, conv, text string) int {
	t.Helper()
	return postJSON(t, c.url+"/messages", `{"conversationId":"`+conv+`","payload":{"type":"text","text":"`+text+`"}}`,
		map[string]string{"x-user-key": c.key}).status
}
