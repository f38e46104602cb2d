package chat_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestTwoNodesPostgres: two nodes (each its own store pool, hub, PostgreSQL
// broker, dispatcher and HTTP server) on one database serve the same bot: a
// signal published through one reaches listeners on the other, replay
// works across them, a removal on one ends streams on the other, and the
// bot answers each message exactly once.
func TestTwoNodesPostgres(t *testing.T) {
	url := testdb.PostgresURL(t)
	open := func() *env {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return newEnv(t, db, envOpts{noBot: true, leases: true, broker: realtime.NewPGBroker(url, "")})
	}
	a, b := open(), open()
	a.bot = makeBot(t, a.db)
	b.bot = a.bot
	a.base = a.srv.URL + "/chat/" + a.bot.WebhookID
	b.base = b.srv.URL + "/chat/" + a.bot.WebhookID
	time.Sleep(200 * time.Millisecond) // let both brokers LISTEN

	_, key := a.user("")
	u2, key2 := b.user("")
	conv := a.conversation(key)
	a.must(b.call("POST", "/conversations/"+conv+"/participants", key, map[string]any{"userId": u2}), 200)

	onB := b.listen(key, conv, -1)
	onA := a.listen(key, conv, -1)
	time.Sleep(100 * time.Millisecond)
	m := a.sendText(key, conv, "across")
	f := onB.waitFor(5*time.Second, func(f frame) bool { return f.Type == "message_created" })
	if f.Sig["id"] != m["id"] {
		t.Fatalf("node B got %v", f.Sig)
	}
	replyB := onB.waitFor(5*time.Second, func(f frame) bool { return f.Sig["isBot"] == true })
	replyA := onA.waitFor(5*time.Second, func(f frame) bool { return f.Sig["isBot"] == true })
	if replyA.ID != replyB.ID {
		t.Fatalf("reply ids differ: %d vs %d", replyA.ID, replyB.ID)
	}
	last := replyB.ID
	onB.close()

	// Posted on B while nobody listens there; replayed from A.
	for i := range 4 {
		b.sendText(key2, conv, fmt.Sprint("b", i))
	}
	re := a.listen(key, conv, last)
	seen := map[int64]bool{}
	users := 0
	for len(seen) < 8 { // 4 messages + 4 replies
		f := re.next(10 * time.Second)
		if f.ID != last+1 {
			t.Fatalf("replay across nodes: id %d after %d", f.ID, last)
		}
		last = f.ID
		seen[f.ID] = true
		if f.Sig["isBot"] == false {
			users++
		}
	}
	if users != 4 {
		t.Fatalf("%d user messages in replay", users)
	}
	if extra, _ := re.ended(500 * time.Millisecond); len(extra) != 0 {
		t.Fatalf("extra signals (a turn ran twice?): %v", extra)
	}

	// A removal through A ends user2's stream on B.
	s2 := b.listen(key2, conv, -1)
	time.Sleep(100 * time.Millisecond)
	a.must(a.call("DELETE", "/conversations/"+conv+"/participants/"+u2, key, "{}"), 200)
	a.sendText(key, conv, "after removal")
	got, ended := s2.ended(5 * time.Second)
	if !ended {
		t.Fatal("removed user's stream on the other node still open")
	}
	for _, f := range got {
		if f.Type == "message_created" && f.Sig["payload"].(map[string]any)["text"] == "after removal" {
			t.Fatal("removed user received a later message")
		}
	}
}
