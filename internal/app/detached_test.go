package app_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestRuntimeAPIWriteOutlivesItsCaller: a Runtime API write sent whole is
// carried out even when the caller closes its connection at once (an
// integration killed right after sending its ack): 20 createMessage
// requests written to a socket closed without reading the answer are all
// stored.
func TestRuntimeAPIWriteOutlivesItsCaller(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		a := testapp.Start(t, cfg())
		bot, _ := codeBotNoCode(t, a)
		token, err := a.RuntimeAPI().Credentials.MintBotToken(ctx, bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		call := botCaller(t, a, token, bot.ID)
		var u struct{ User struct{ ID string } }
		call("POST", "/v1/chat/users", `{"tags":{}}`, &u)
		var c struct{ Conversation struct{ ID string } }
		call("POST", "/v1/chat/conversations", `{"channel":"dm","tags":{}}`, &c)

		const n = 20
		host := strings.TrimPrefix(a.URL, "http://")
		for i := range n {
			body := fmt.Sprintf(`{"conversationId":%q,"userId":%q,"type":"text","payload":{"text":"gone %d"},"tags":{}}`, c.Conversation.ID, u.User.ID, i)
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST /v1/chat/messages HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nx-bot-id: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				host, token, bot.ID, len(body), body)
			conn.Close() // gone before the answer
		}
		stored := func() int {
			ms, _, err := a.Store().Chat().ListMessages(ctx, bot.ID, c.Conversation.ID, store.Page{Size: 100})
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, m := range ms {
				if strings.Contains(string(m.Payload), "gone ") {
					k++
				}
			}
			return k
		}
		deadline := time.Now().Add(10 * time.Second)
		for stored() < n && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		if got := stored(); got != n {
			t.Fatalf("%d of %d writes whose caller went away were stored", got, n)
		}
	})
}
