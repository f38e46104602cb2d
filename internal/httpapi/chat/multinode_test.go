package chat_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/model"
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

// TestTwoNodesForgetChanges: what one node changes reaches the other's
// caches when the broker's notification arrives, though a node that hears
// them keeps its answers for a minute: a participant removed through A is
// refused on B, a conversation deleted through A ends its streams on B and
// is gone there, and an encryption key rotated through A refuses the old
// keys on B and ends the streams opened with them. Without the
// notifications, B would answer from its caches for a minute.
func TestTwoNodesForgetChanges(t *testing.T) {
	url := testdb.PostgresURL(t)
	channel := "t" + model.NewNodeID()[5:13] // this test's nodes only
	var brokers []*realtime.PGBroker
	open := func() *env {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		br := realtime.NewPGBroker(url, channel)
		brokers = append(brokers, br)
		return newEnv(t, db, envOpts{noBot: true, leases: true, broker: br})
	}
	a, b := open(), open()
	a.bot = makeBot(t, a.db)
	b.bot = a.bot
	a.base = a.srv.URL + "/chat/" + a.bot.WebhookID
	b.base = b.srv.URL + "/chat/" + a.bot.WebhookID
	for _, br := range brokers {
		waitUntil(t, "both brokers hear", br.Hearing)
	}

	_, ownerKey := a.user("")
	u2, key2 := a.user("")
	conv := a.conversation(ownerKey)
	a.must(a.call("POST", "/conversations/"+conv+"/participants", ownerKey, map[string]any{"userId": u2}), 200)

	// B caches user2's participation (and the scope and the user keys).
	b.must(b.call("GET", "/conversations/"+conv+"/messages", key2, nil), 200)
	a.must(a.call("DELETE", "/conversations/"+conv+"/participants/"+u2, ownerKey, "{}"), 200)
	statusSoon(t, b, "GET", "/conversations/"+conv+"/messages", key2, 403)

	// A conversation deleted through A: its stream on B ends, and B
	// finds it gone.
	gone := a.conversation(ownerKey)
	b.must(b.call("GET", "/conversations/"+gone+"/messages", ownerKey, nil), 200)
	s := b.listen(ownerKey, gone, -1)
	time.Sleep(100 * time.Millisecond)
	a.must(a.call("DELETE", "/conversations/"+gone, ownerKey, nil), 200)
	if _, ended := s.ended(5 * time.Second); !ended {
		t.Fatal("the deleted conversation's stream on the other node is still open")
	}
	statusSoon(t, b, "GET", "/conversations/"+gone+"/messages", ownerKey, 404)

	// The encryption key rotated through A (the Admin API's path): B
	// refuses the old keys and ends the streams opened with them.
	onB := b.listen(ownerKey, conv, -1)
	time.Sleep(100 * time.Millisecond)
	b.must(b.call("GET", "/users/me", ownerKey, nil), 200)
	ctx := context.Background()
	bot, err := a.db.Bots().GetByID(ctx, a.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	admin := &administration.Caller{Principal: administration.Principal{Account: &model.Account{ID: "admin"}},
		Workspace: &model.Workspace{ID: bot.WorkspaceID}, Member: &model.Member{Role: model.RoleAdministrator}}
	if _, err := a.bots.Update(ctx, admin, a.bot.ID, administration.BotWrite{
		Integrations: map[string]*administration.IntegrationWrite{model.IntegrationChat: {
			Configuration: map[string]any{model.ChatEncryptionKey: "rotated-secret"}}}}); err != nil {
		t.Fatal(err)
	}
	statusSoon(t, b, "GET", "/users/me", ownerKey, 401)
	if _, ended := onB.ended(5 * time.Second); !ended {
		t.Fatal("a stream opened with a rotated-out key on the other node is still open")
	}
}

// statusSoon waits until e answers the request with want, within 2 s
// (a notification's way, on a loaded machine).
func statusSoon(t *testing.T, e *env, method, path, key string, want int) {
	t.Helper()
	var got int
	start := time.Now()
	for end := start.Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if got = e.call(method, path, key, nil).Status; got == want {
			t.Logf("%s %s on the other node: %d after %v", method, path, want, time.Since(start).Round(time.Millisecond))
			return
		}
	}
	t.Fatalf("%s %s on the other node: %d, want %d", method, path, got, want)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
