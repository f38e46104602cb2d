package chat_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testbots"
)

// TestOverloadShedAtTheDoor fills the turn queue's bound (one worker, busy
// with a turn that blocks; another conversation waiting longer than the
// bound) and checks that createMessage waits the bound, then answers 429
// with Retry-After and the standard error body and stores nothing; that a
// message waiting when the worker is freed is accepted; and that
// messages are accepted again at once after. The official @botpress/chat
// client is refused with its RateLimitedError (tests/compat/ratelimited.mjs).
func TestOverloadShedAtTheDoor(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		bot := testbots.NewGate(testbots.Echo{})
		const bound = 200 * time.Millisecond
		e := newEnv(t, db, envOpts{bot: bot, workers: 1, maxTurnDelay: bound})
		_, k1 := e.user("")
		c1 := e.conversation(k1)
		_, k2 := e.user("")
		c2 := e.conversation(k2)

		e.sendText(k1, c1, "block")
		select { // the only worker is busy with c1
		case <-bot.Started:
		case <-time.After(10 * time.Second):
			t.Fatal("the blocking turn did not start")
		}
		e.sendText(k2, c2, "waiting") // accepted: nothing has waited yet
		time.Sleep(2 * bound)         // c2 has now waited past the bound

		send := func(key, conv, text string) (*http.Response, map[string]any, error) {
			body := `{"conversationId":"` + conv + `","payload":{"type":"text","text":"` + text + `"}}`
			req, _ := http.NewRequest("POST", e.base+"/messages", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-user-key", key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, nil, err
			}
			defer res.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(res.Body).Decode(&out)
			return res, out, nil
		}
		post := func(key, conv, text string) (*http.Response, map[string]any) {
			t.Helper()
			res, out, err := send(key, conv, text)
			if err != nil {
				t.Fatal(err)
			}
			return res, out
		}
		// Both conversations are refused, after a wait: the bound is the
		// node's.
		for _, c := range []struct{ key, conv string }{{k1, c1}, {k2, c2}} {
			start := time.Now()
			res, body := post(c.key, c.conv, "shed")
			if waited := time.Since(start); waited < bound {
				t.Fatalf("refused after %v, want a wait of the bound (%v) first", waited, bound)
			}
			if res.StatusCode != 429 || res.Header.Get("Retry-After") != "1" {
				t.Fatalf("overloaded: status %d, Retry-After %q, want 429 and 1", res.StatusCode, res.Header.Get("Retry-After"))
			}
			if body["type"] != "RateLimited" || body["code"] != float64(429) || body["id"] == "" || body["message"] == "" {
				t.Fatalf("error body = %v", body)
			}
		}
		// The official client sees the refusal as its own RateLimitedError.
		if !testing.Short() {
			out := testapp.RunNode(t, "ratelimited.mjs", map[string]string{
				"API_URL": e.base, "USER_KEY": k1, "CONVERSATION_ID": c1})
			t.Log("@botpress/chat: " + lastLine(out))
		}
		// Shed before the body is read: a body that would be a 400 is a
		// 429 while overloaded (the handler never decoded it).
		req, _ := http.NewRequest("POST", e.base+"/messages", strings.NewReader(`{not json`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-user-key", k1)
		if res, err := http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		} else if res.Body.Close(); res.StatusCode != 429 {
			t.Fatalf("overloaded, malformed body: status %d, want 429 before the body is read", res.StatusCode)
		}
		for _, c := range []struct{ key, conv string }{{k1, c1}, {k2, c2}} {
			for _, m := range e.must(e.call("GET", "/conversations/"+c.conv+"/messages", c.key, nil), 200).Body["messages"].([]any) {
				if strings.Contains(string(mustJSON(m)), "shed") {
					t.Fatalf("a refused message was stored: %v", m)
				}
			}
		}

		// A message waiting when the worker is freed is let in.
		waited := make(chan int, 1)
		go func() { // no t.Fatal off the test's goroutine
			res, _, err := send(k1, c1, "waited")
			if err != nil {
				t.Error(err)
				waited <- 0
				return
			}
			waited <- res.StatusCode
		}()
		time.Sleep(bound / 4)
		close(bot.Release)
		freed := time.Now()
		if st := <-waited; st != 201 {
			t.Fatalf("a message in line when the worker was freed: status %d, want 201", st)
		}

		// Recovery: the queue drains, messages are accepted again within
		// a second.
		for {
			res, _ := post(k2, c2, "again")
			if res.StatusCode == 201 {
				break
			}
			if res.StatusCode != 429 || time.Since(freed) > time.Second {
				t.Fatalf("after release: status %d after %v", res.StatusCode, time.Since(freed))
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("accepted again %v after the worker was freed", time.Since(freed).Round(time.Millisecond))
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
