package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestAdminConversationSearch: the dashboard's conversation list
// (GET /v1/admin/bots/{id}/conversations) finds conversations by message
// text (the user's or the bot's) and by user id, and gives each its
// message count; a too-long search is the Admin API's 400.
func TestAdminConversationSearch(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		ws := defaultWorkspace(t, a)
		bot, chatURL, _ := codeBot(t, a, `bot.on.message('*', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'Echo ' + message.payload.text } })
})`)
		parcel, convParcel, userParcel := chatSession(t, chatURL)
		parcel.say(t, convParcel, "Where is my PARCEL?")
		parcel.say(t, convParcel, "thanks")
		hello, convHello, _ := chatSession(t, chatURL)
		hello.say(t, convHello, "hello")

		list := func(search string) (int, map[string]float64) {
			t.Helper()
			r := adminCall(t, a, ws, "GET", fmt.Sprintf("/v1/admin/bots/%s/conversations?search=%s", bot.ID, url.QueryEscape(search)), "")
			counts := map[string]float64{}
			if r.status != 200 {
				return r.status, counts
			}
			for _, c := range r.body["conversations"].([]any) {
				m := c.(map[string]any)
				counts[m["id"].(string)] = m["messageCount"].(float64)
			}
			return r.status, counts
		}
		// The echoes arrive asynchronously: wait for all five messages.
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, all := list("")
			if all[convParcel] == 4 && all[convHello] == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message counts: %v (want %s: 4, %s: 2)", all, convParcel, convHello)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, c := range []struct {
			search string
			want   []string
		}{
			{"parcel", []string{convParcel}},
			{"echo hello", []string{convHello}}, // the bot's message
			{userParcel, []string{convParcel}},
			{"  HELLO ", []string{convHello}},
			{"nowhere", nil},
		} {
			status, got := list(c.search)
			if status != 200 || len(got) != len(c.want) {
				t.Fatalf("search %q: %d %v, want %v", c.search, status, got, c.want)
			}
			for _, id := range c.want {
				if _, ok := got[id]; !ok {
					t.Fatalf("search %q: %v, want %v", c.search, got, c.want)
				}
			}
		}
		r := adminCall(t, a, ws, "GET", "/v1/admin/bots/"+bot.ID+"/conversations?search="+strings.Repeat("x", 201), "")
		if r.status != 400 || r.body["type"] != "InvalidQuery" {
			t.Fatalf("long search: %d %v", r.status, r.body)
		}
	})
}
