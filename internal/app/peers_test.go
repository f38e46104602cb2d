package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestChangesReachTheOtherNode: two nodes on one PostgreSQL database, as
// app.start wires the broker's changes into their caches, which keep
// answers for a minute while they hear the other nodes. A participant
// removed through node A's Runtime API is refused on node B at once (403,
// nothing stored); the bot's Chat API disabled through A's administration
// answers 404 on B.
func TestChangesReachTheOtherNode(t *testing.T) {
	url := testdb.PostgresURL(t)
	cfg := func() app.Config { c := testapp.Config(t, url); c.DataDir = t.TempDir(); return c }
	a := testapp.Start(t, cfg())
	b := testapp.Start(t, cfg())
	bot, chatA, _ := codeBot(t, a, `bot.on.message('text', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo ' + message.payload.text } })
})`)
	chatB := b.URL + strings.TrimPrefix(chatA, a.URL)

	owner, conv, _ := chatSession(t, chatA)
	guest := &chatHTTP{url: chatB}
	u := guest.call(t, "POST", "/users", map[string]any{})
	guest.key = u["key"].(string)
	guestID := u["user"].(map[string]any)["id"].(string)
	owner.call(t, "POST", "/conversations/"+conv+"/participants", map[string]any{"userId": guestID})
	// B caches the guest's participation.
	guest.say(t, conv, "hello")
	guest.botTexts(t, conv, guestID, 1)

	newRuntimeClient(t, a, bot.ID).call("DELETE", "/v1/chat/conversations/"+conv+"/participants/"+guestID, "", nil)
	waitFor(t, "the guest refused on node B", notified, func() bool {
		return getStatus(t, guest, "/conversations/"+conv+"/messages") == http.StatusForbidden
	})
	if st := postStatus(t, guest, conv, "after"); st != http.StatusForbidden {
		t.Fatalf("a removed participant's message on the other node: %d, want 403", st)
	}
	msgs, _, err := b.Store().Chat().ListMessages(context.Background(), bot.ID, conv, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages stored, want the guest's first and its answer", len(msgs))
	}

	// The bot's Chat API disabled through A's administration.
	ctx := context.Background()
	admin := adminCaller(t, a)
	if getStatus(t, owner, "/users/me") != http.StatusOK {
		t.Fatal("the owner's key before the change")
	}
	ownerOnB := &chatHTTP{url: chatB, key: owner.key}
	if getStatus(t, ownerOnB, "/users/me") != http.StatusOK { // B caches the scope
		t.Fatal("the owner's key on node B before the change")
	}
	off := false
	if _, err := a.Bots().Update(ctx, admin, bot.ID, administration.BotWrite{
		Integrations: map[string]*administration.IntegrationWrite{model.IntegrationChat: {Enabled: &off}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the disabled Chat API refused on node B", notified, func() bool {
		return getStatus(t, ownerOnB, "/users/me") == http.StatusNotFound
	})
}

// getStatus sends a GET with c's user key and returns the status.
func getStatus(t *testing.T, c *chatHTTP, path string) int {
	t.Helper()
	return sendJSON(t, "GET", c.url+path, "", map[string]string{"x-user-key": c.key}).status
}

// notified bounds a notification's way to the other node, on a loaded
// machine.
const notified = 2 * time.Second
