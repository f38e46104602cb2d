package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
)

// newChatConversation creates a Chat API user and a conversation of
// theirs on the bot behind chatURL; it returns the user's key and the
// conversation's id.
func newChatConversation(t *testing.T, chatURL string) (key, convID string) {
	t.Helper()
	var u struct{ Key string }
	chatCall(t, "POST", chatURL+"/users", "", map[string]any{}, &u)
	var cv struct{ Conversation struct{ ID string } }
	chatCall(t, "POST", chatURL+"/conversations", u.Key, map[string]any{}, &cv)
	return u.Key, cv.Conversation.ID
}

// sendChatText sends a text message as the user with key.
func sendChatText(t *testing.T, chatURL, key, convID, text string) {
	t.Helper()
	chatCall(t, "POST", chatURL+"/messages", key, map[string]any{"conversationId": convID,
		"payload": map[string]any{"type": "text", "text": text}}, nil)
}

// botTexts returns the texts of the bot's messages in a conversation, as
// stored (at most 100).
func botTexts(t *testing.T, a *app.App, botID, convID string) []string {
	t.Helper()
	ms, _, err := a.Store().Chat().ListMessages(context.Background(), botID, convID, store.Page{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if m.UserID == botID {
			var p struct{ Text string }
			_ = json.Unmarshal(m.Payload, &p)
			out = append(out, p.Text)
		}
	}
	return out
}

// waitForBotText waits until one of the bot's messages satisfies match
// and returns it.
func waitForBotText(t *testing.T, a *app.App, botID, convID string, match func(string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, s := range botTexts(t, a, botID, convID) {
			if match(s) {
				return s
			}
		}
	}
	t.Fatalf("no bot message matched in %s", convID)
	return ""
}
