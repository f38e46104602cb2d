package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestCrashLoop (issue 12) runs a real `parley serve` under message load and
// kills it (SIGKILL) at random points, 10 times, on SQLite and on
// PostgreSQL; then checks that every acknowledged message is stored once,
// and every stored message has exactly one bot reply, in order.
//
// It tests processes, not memory accesses: scripts/test runs it in its own
// `go test` without -race (PARLEY_CRASH_TEST=1); the -race run skips it.
func TestCrashLoop(t *testing.T) {
	if os.Getenv("PARLEY_CRASH_TEST") == "" {
		t.Skip("set PARLEY_CRASH_TEST=1 (scripts/test does, without -race)")
	}
	cycles := 10
	if n, err := strconv.Atoi(os.Getenv("PARLEY_CRASH_CYCLES")); err == nil && n > 0 {
		cycles = n
	}
	bin := buildBinary(t)
	t.Run("sqlite", func(t *testing.T) {
		crashLoop(t, bin, cycles, "PARLEY_DATA_DIR="+t.TempDir())
	})
	t.Run("postgres", func(t *testing.T) {
		crashLoop(t, bin, cycles, "PARLEY_DATABASE_URL="+testdb.PostgresURL(t), "PARLEY_DATA_DIR="+t.TempDir())
	})
}

func crashLoop(t *testing.T, bin string, cycles int, env ...string) {
	const token = "crash-loop-admin-token"
	env = append(env, "PARLEY_ADMIN_TOKEN="+token,
		"PARLEY_RATE_PER_USER=-1", "PARLEY_RATE_PER_BOT=-1",
		"PARLEY_MAX_TURN_DELAY=-1ns", "PARLEY_MAX_MESSAGES_IN_FLIGHT=-1")
	p := startProcess(t, bin, env...)
	wsID := adminJSON(t, "GET", p.url+"/v1/admin/workspaces", token, "", "")["workspaces"].([]any)[0].(map[string]any)["id"].(string)
	// Two replies per message: a crash between them was the duplicate of
	// issue 12 (finding 9).
	code := `bot.on.message('text', async ({ message, client }) => {
  const until = Date.now() + 2
  while (Date.now() < until) {}
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'ack: ' + message.payload.text } })
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'done: ' + message.payload.text } })
})`
	body, _ := json.Marshal(map[string]any{"name": "crash", "code": code})
	bot := adminJSON(t, "POST", p.url+"/v1/admin/bots", token, wsID, string(body))["bot"].(map[string]any)
	botID := bot["id"].(string)
	path := "/chat/" + bot["integrations"].(map[string]any)["chat"].(map[string]any)["webhookId"].(string)

	const convs = 8
	type conv struct {
		id, key string
		next    int
		acked   []int
	}
	cs := make([]*conv, convs)
	for i := range cs {
		var u struct{ Key string }
		chatPost(t, p.url+path+"/users", "", map[string]any{}, &u)
		var c struct{ Conversation struct{ ID string } }
		chatPost(t, p.url+path+"/conversations", u.Key, map[string]any{}, &c)
		cs[i] = &conv{id: c.Conversation.ID, key: u.Key}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	totalAcked := 0
	for cycle := 0; cycle < cycles; cycle++ {
		if cycle > 0 {
			p = startProcess(t, bin, env...)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					n := c.next
					c.next++
					raw, _ := json.Marshal(map[string]any{"conversationId": c.id, "payload": map[string]any{"type": "text", "text": strconv.Itoa(n)}})
					req, _ := http.NewRequest("POST", p.url+path+"/messages", bytes.NewReader(raw))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("x-user-key", c.key)
					res, err := client.Do(req)
					if err != nil {
						return // killed: this message may or may not be stored
					}
					res.Body.Close()
					if res.StatusCode == 201 {
						c.acked = append(c.acked, n)
					} else {
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(200+rand.IntN(1000)) * time.Millisecond)
		p.cmd.Process.Kill() // SIGKILL, mid-load
		<-p.exited
		close(stop)
		wg.Wait()
	}
	q := startProcess(t, bin, env...)
	deadline := time.Now().Add(60 * time.Second)
	replies := 0
	for _, c := range cs {
		totalAcked += len(c.acked)
		var users, bots []string
		for {
			users, bots = transcript(t, q.url, token, wsID, botID, c.id)
			if len(bots) >= 2*len(users) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Every acknowledged message is stored once; stored messages are
		// in the order they were sent.
		seen := map[string]int{}
		last := -1
		for _, u := range users {
			seen[u]++
			n, _ := strconv.Atoi(u)
			if seen[u] > 1 || n <= last {
				t.Fatalf("conversation %s: user messages duplicated or out of order: %v", c.id, users)
			}
			last = n
		}
		for _, n := range c.acked {
			if seen[strconv.Itoa(n)] != 1 {
				t.Fatalf("conversation %s: acknowledged message %d stored %d times", c.id, n, seen[strconv.Itoa(n)])
			}
		}
		// Every stored message has exactly its two replies, in order.
		var want []string
		for _, u := range users {
			want = append(want, "ack: "+u, "done: "+u)
		}
		if fmt.Sprint(bots) != fmt.Sprint(want) {
			t.Fatalf("conversation %s: replies\n got %v\nwant %v", c.id, bots, want)
		}
		replies += len(bots)
	}
	t.Logf("%d kill -9 cycles: %d acknowledged messages, all stored once; %d replies, each exactly once and in order", cycles, totalAcked, replies)
	q.stop(t)
}

// transcript lists a conversation's user and bot texts, oldest first,
// through the dashboard's transcript endpoint.
func transcript(t *testing.T, base, token, ws, botID, convID string) (users, bots []string) {
	t.Helper()
	var all []map[string]any
	next := ""
	for {
		u := base + "/v1/admin/bots/" + botID + "/conversations/" + convID + "/messages?pageSize=100"
		if next != "" {
			u += "&nextToken=" + next
		}
		page := adminJSON(t, "GET", u, token, ws, "")
		for _, m := range page["messages"].([]any) {
			all = append(all, m.(map[string]any))
		}
		meta, _ := page["meta"].(map[string]any)
		if n, _ := meta["nextToken"].(string); n != "" {
			next = n
			continue
		}
		break
	}
	for i := len(all) - 1; i >= 0; i-- { // newest first → oldest first
		text, _ := all[i]["payload"].(map[string]any)["text"].(string)
		if all[i]["userId"] == botID {
			bots = append(bots, text)
		} else {
			users = append(users, text)
		}
	}
	return users, bots
}
