package webchat_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testbots"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestWebchatOverloadShedBeforeTheBody: with every turn worker busy and a
// conversation waiting past the door's bound, the Webchat API's
// createMessage answers 429 with Retry-After before it reads the body (a
// malformed body is a 429, not a 400), stores nothing, and accepts again
// within a second once the workers are free.
func TestWebchatOverloadShedBeforeTheBody(t *testing.T) {
	run := func(t *testing.T, dbURL string) {
		g := testbots.NewGate(greeter{})
		cfg := testapp.Config(t, dbURL)
		cfg.MaxTurnDelay = 50 * time.Millisecond
		const workers = 4
		cfg.TurnWorkers = workers
		a := testapp.Start(t, cfg, app.WithBots(testbots.Resolver(g)))
		base := a.URL + "/webchat/" + newBot(t, a)
		type conv struct{ key, id string }
		var convs []conv
		// One more conversation than there are workers (--turn-workers).
		for range workers + 1 {
			ch, _, stop := stream(t, base+"/initialize", "")
			t.Cleanup(stop)
			var d initData
			if err := json.Unmarshal(next(t, ch, "init").Data, &d); err != nil {
				t.Fatal(err)
			}
			convs = append(convs, conv{d.User.UserKey, d.Conversation.ID})
		}
		post := func(c conv, body string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest("POST", base+"/messages", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-user-key", c.key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		text := func(c conv, s string) string {
			return `{"conversationId":"` + c.id + `","payload":{"type":"text","text":"` + s + `"}}`
		}
		for _, c := range convs {
			if res := post(c, text(c, "block")); res.StatusCode != 201 {
				t.Fatalf("block: status %d", res.StatusCode)
			}
		}
		for range workers {
			select {
			case <-g.Started:
			case <-time.After(10 * time.Second):
				t.Fatal("the workers did not all start a blocking turn")
			}
		}
		time.Sleep(150 * time.Millisecond) // the last conversation waited past the bound
		if res := post(convs[0], `{not json`); res.StatusCode != 429 || res.Header.Get("Retry-After") != "1" {
			t.Fatalf("overloaded, malformed body: status %d, Retry-After %q; want 429 before the body is read", res.StatusCode, res.Header.Get("Retry-After"))
		}
		if res := post(convs[0], text(convs[0], "shed")); res.StatusCode != 429 {
			t.Fatalf("overloaded: status %d, want 429", res.StatusCode)
		}
		close(g.Release)
		freed := time.Now()
		for {
			res := post(convs[0], text(convs[0], "again"))
			if res.StatusCode == 201 {
				break
			}
			if res.StatusCode != 429 || time.Since(freed) > time.Second {
				t.Fatalf("after release: status %d after %v", res.StatusCode, time.Since(freed))
			}
			time.Sleep(10 * time.Millisecond)
		}
		var list struct{ Messages []json.RawMessage }
		call(t, "GET", base+"/conversations/"+convs[0].id+"/messages", map[string]string{"x-user-key": convs[0].key}, nil, 200, &list)
		for _, m := range list.Messages {
			if strings.Contains(string(m), `"shed"`) {
				t.Fatalf("a refused message was stored: %s", m)
			}
		}
	}
	t.Run("sqlite", func(t *testing.T) { run(t, "") })
	t.Run("postgres", func(t *testing.T) { run(t, testdb.PostgresURL(t)) })
}
