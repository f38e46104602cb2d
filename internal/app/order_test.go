package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// ackBot answers every text with "ack: <text>" after a few milliseconds of
// work, so that turns are still queued when the server stops.
const ackBot = `bot.on.message('text', async ({ message, client }) => {
  const until = Date.now() + 3
  while (Date.now() < until) {}
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'ack: ' + message.payload.text } })
})`

func chatCall(t *testing.T, method, url, key string, body any, out any) {
	t.Helper()
	var buf bytes.Buffer
	if body != nil {
		json.NewEncoder(&buf).Encode(body)
	}
	req, _ := http.NewRequest(method, url, &buf)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-user-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		t.Errorf("%s %s: status %d", method, url, res.StatusCode)
		return
	}
	if out != nil {
		json.NewDecoder(res.Body).Decode(out)
	}
}

// TestTurnOrderAcrossRestart sends 1,000 messages over 50 conversations,
// restarting the server halfway while turns are still queued, and checks
// that every message is answered, in order, with no turn lost.
func TestTurnOrderAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("long test")
	}
	engines(t, func(t *testing.T, cfg func() app.Config) {
		const convs, perConv = 50, 20
		ctx := context.Background()
		c := cfg()
		first, err := app.Start(ctx, c, testapp.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		token := first.AdminToken
		bot, chatURL, _ := codeBot(t, first, ackBot)
		// The test is about order across a restart, not the turn budget:
		// under -race on a loaded machine a turn can pass the default 5 s,
		// and its fallback message would then stand in the sequence.
		setMaxExecutionTime(t, first, bot.ID, 60)
		chatPath := strings.TrimPrefix(chatURL, first.URL)

		type conv struct{ id, key string }
		cs := make([]conv, convs)
		for i := range cs {
			var u struct{ Key string }
			chatCall(t, "POST", chatURL+"/users", "", map[string]any{}, &u)
			var cv struct{ Conversation struct{ ID string } }
			chatCall(t, "POST", chatURL+"/conversations", u.Key, map[string]any{}, &cv)
			cs[i] = conv{cv.Conversation.ID, u.Key}
		}
		send := func(base string, from, to int) {
			var wg sync.WaitGroup
			for _, cv := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := from; n < to; n++ {
						chatCall(t, "POST", base+chatPath+"/messages", cv.key,
							map[string]any{"conversationId": cv.id, "payload": map[string]any{"type": "text", "text": fmt.Sprint(n)}}, nil)
					}
				}()
			}
			wg.Wait()
		}
		send(first.URL, 0, perConv/2)
		pending, err := first.Store().Signals().PendingConversations(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("conversations with queued turns at shutdown: %d", len(pending))
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := first.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}

		second := testapp.Start(t, c)
		send(second.URL, perConv/2, perConv)
		if t.Failed() {
			return
		}

		// Wait until every message has its reply.
		chatStore := second.Store().Chat()
		replies := func(convID string) []string {
			var out []string
			var msgs []*struct {
				at   time.Time
				text string
			}
			token := ""
			for {
				ms, next, err := chatStore.ListMessages(ctx, bot.ID, convID, store.Page{Token: token, Size: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range ms {
					if m.UserID != bot.ID {
						continue
					}
					var p struct{ Text string }
					json.Unmarshal(m.Payload, &p)
					msgs = append(msgs, &struct {
						at   time.Time
						text string
					}{m.CreatedAt, p.Text})
				}
				if next == "" {
					break
				}
				token = next
			}
			sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].at.Before(msgs[j].at) })
			for _, m := range msgs {
				out = append(out, m.text)
			}
			return out
		}
		deadline := time.Now().Add(90 * time.Second)
		for _, cv := range cs {
			for len(dedupe(replies(cv.id))) < perConv && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
		}
		duplicates := 0
		for _, cv := range cs {
			got := replies(cv.id)
			unique := dedupe(got)
			duplicates += len(got) - len(unique)
			want := make([]string, perConv)
			for n := range want {
				want[n] = fmt.Sprintf("ack: %d", n)
			}
			if strings.Join(unique, ",") != strings.Join(want, ",") {
				t.Fatalf("conversation %s replies out of order or missing:\n got %v\nwant %v", cv.id, got, want)
			}
		}
		// A clean stop lets the turn in flight finish: nothing runs twice.
		if duplicates > 0 {
			t.Fatalf("%d duplicate replies after a clean restart", duplicates)
		}
		t.Logf("1000 messages answered in order, none twice")
		_ = token
	})
}

// dedupe drops consecutive duplicates (a turn that ran again after a stop).
func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
