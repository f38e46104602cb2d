package chat_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/turns"
)

func TestProbeAndRouting(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		for _, p := range []string{"/hello/", "/hello", "//hello/"} {
			e.must(e.call("GET", p, "", nil), 200)
		}
		r := e.callURL("GET", e.srv.URL+"/chat/no-such-webhook/hello/", "", nil)
		if r.Status != 404 || r.errType() != "ResourceNotFound" {
			t.Fatalf("unknown webhook: %d %s", r.Status, r.Raw)
		}
		// The error body has the four keys the client requires.
		for _, k := range []string{"id", "code", "type", "message"} {
			if _, ok := r.Body[k]; !ok {
				t.Fatalf("error body lacks %q: %s", k, r.Raw)
			}
		}
		r = e.callURL("POST", e.srv.URL+"/chat/no-such-webhook/users", "", map[string]any{})
		if r.Status != 404 {
			t.Fatalf("createUser on unknown webhook: %d", r.Status)
		}
		if r := e.call("PATCH", "/users/me", "", nil); r.Status != 405 || r.errType() != "MethodNotFound" {
			t.Fatalf("unknown route: %d %s", r.Status, r.Raw)
		}
	})
}

func TestUsers(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		// createUser: generated id, a key that authenticates it.
		id, key := e.user("")
		me := e.must(e.call("GET", "/users/me", key, nil), 200).obj("user")
		if me["id"] != id {
			t.Fatalf("getUser id %v, want %s", me["id"], id)
		}
		// get-or-create is stable for that key.
		for range 2 {
			if got := e.must(e.call("POST", "/users/get-or-create", key, map[string]any{}), 201).obj("user")["id"]; got != id {
				t.Fatalf("getOrCreateUser id %v, want %s", got, id)
			}
		}
		// Foreign ids.
		fid := "test-user-" + strings.ReplaceAll(model.NewID(), "-", "")[:18]
		fidID, _ := e.user(fid)
		if fidID != fid {
			t.Fatalf("fid user id %s", fidID)
		}
		if r := e.call("POST", "/users", "", map[string]any{"id": fid}); r.Status != 409 || r.errType() != "AlreadyExists" {
			t.Fatalf("duplicate fid: %d %s", r.Status, r.Raw)
		}
		self := signKey(e.bot.Key, fid)
		if got := e.must(e.call("GET", "/users/me", self, nil), 200).obj("user")["id"]; got != fid {
			t.Fatalf("self-signed getUser %v", got)
		}
		for _, bad := range []string{"invalid+" + fid, strings.Repeat("a", 123), ""} {
			if r := e.call("POST", "/users", "", map[string]any{"id": bad}); r.Status != 400 || r.errType() != "InvalidPayload" {
				t.Fatalf("createUser(%q): %d %s", bad, r.Status, r.Raw)
			}
			if bad == "" {
				continue
			}
			if r := e.call("POST", "/users/get-or-create", signKey(e.bot.Key, bad), map[string]any{}); r.Status != 400 || r.errType() != "InvalidPayload" {
				t.Fatalf("getOrCreateUser(%q): %d %s", bad, r.Status, r.Raw)
			}
		}
		// A key minted by the integrator for a user never seen.
		fresh := "minted-" + model.NewID()[:8]
		if got := e.must(e.call("POST", "/users/get-or-create", signKey(e.bot.Key, fresh), map[string]any{"name": "Ann"}), 201).obj("user"); got["id"] != fresh || got["name"] != "Ann" {
			t.Fatalf("minted user: %v", got)
		}
		// The bot's own id is reserved.
		if r := e.call("POST", "/users", "", map[string]any{"id": e.bot.ID}); r.Status != 409 {
			t.Fatalf("bot id as user id: %d", r.Status)
		}
		// updateUser (PUT /users/me).
		u := e.must(e.call("PUT", "/users/me", key, map[string]any{"name": "Bob", "pictureUrl": "https://x/p.png", "profile": "p"}), 200).obj("user")
		if u["name"] != "Bob" || u["pictureUrl"] != "https://x/p.png" || u["profile"] != "p" || u["id"] != id {
			t.Fatalf("updateUser: %v", u)
		}
		if got := e.must(e.call("GET", "/users/me", key, nil), 200).obj("user"); !reflect.DeepEqual(got, u) {
			t.Fatalf("getUser after update %v, want %v", got, u)
		}
		if r := e.call("PUT", "/users/me", key, map[string]any{"profile": strings.Repeat("x", 1001)}); r.Status != 400 {
			t.Fatalf("long profile: %d", r.Status)
		}
		// deleteUser frees the id.
		e.must(e.call("DELETE", "/users/me", self, "{}"), 200)
		if r := e.call("GET", "/users/me", self, nil); r.Status != 404 {
			t.Fatalf("deleted user: %d", r.Status)
		}
		e.user(fid)
	})
}

func TestUserKeys(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		_, key := e.user("alice")
		parts := strings.Split(key, ".")
		b64 := func(s string) string {
			return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(base64Std(s)), "=")
		}
		bad := map[string]string{
			"missing":   "",
			"malformed": "not.a.jwt",
			"garbage":   "abc",
			"wrong key": signKey("another-secret", "alice"),
			"alg none":  b64(`{"alg":"none","typ":"JWT"}`) + "." + b64(`{"id":"alice"}`) + ".",
			"forged":    parts[0] + "." + b64(`{"id":"mallory"}`) + "." + parts[2],
			"HS512":     hs512(e.bot.Key, "alice"),
		}
		for name, k := range bad {
			for _, op := range []struct{ method, path string }{{"GET", "/users/me"}, {"POST", "/conversations"}, {"POST", "/users/get-or-create"}} {
				r := e.call(op.method, op.path, k, map[string]any{})
				if r.Status != 401 || r.errType() != "Unauthorized" {
					t.Fatalf("%s key on %s %s: %d %s", name, op.method, op.path, r.Status, r.Raw)
				}
			}
		}
		// Rotating the encryption key through the service (the Admin
		// API's path) invalidates old keys at once, cached scope and
		// verified keys included.
		ctx := context.Background()
		e.must(e.call("GET", "/users/me", key, nil), 200) // warm the caches
		b, err := db.Bots().GetByID(ctx, e.bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		admin := &administration.Caller{Principal: administration.Principal{Account: &model.Account{ID: "admin"}},
			Workspace: &model.Workspace{ID: b.WorkspaceID}, Member: &model.Member{Role: model.RoleAdministrator}}
		setChat := func(w administration.IntegrationWrite) {
			t.Helper()
			if _, err := e.bots.Update(ctx, admin, e.bot.ID, administration.BotWrite{
				Integrations: map[string]*administration.IntegrationWrite{model.IntegrationChat: &w}}); err != nil {
				t.Fatal(err)
			}
		}
		setChat(administration.IntegrationWrite{Configuration: map[string]any{model.ChatEncryptionKey: "rotated-secret"}})
		if r := e.call("GET", "/users/me", key, nil); r.Status != 401 {
			t.Fatalf("old key after rotation: %d", r.Status)
		}
		e.must(e.call("GET", "/users/me", signKey("rotated-secret", "alice"), nil), 200)
		// A disabled integration answers like an unknown webhook.
		off := false
		setChat(administration.IntegrationWrite{Enabled: &off})
		if r := e.call("GET", "/hello/", "", nil); r.Status != 404 || r.errType() != "ResourceNotFound" {
			t.Fatalf("disabled hello: %d", r.Status)
		}
		if r := e.call("GET", "/users/me", signKey("rotated-secret", "alice"), nil); r.Status != 404 {
			t.Fatalf("disabled getUser: %d", r.Status)
		}
	})
}

func TestConversationsAndParticipants(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		owner, ownerKey := e.user("")
		user2, key2 := e.user("")
		_, key3 := e.user("")

		conv := e.conversation(ownerKey)
		for range 2 {
			if got := e.must(e.call("GET", "/conversations/"+conv, ownerKey, nil), 200).obj("conversation"); got["id"] != conv || len(got) != 3 {
				t.Fatalf("getConversation: %v", got)
			}
		}
		fid := "test-conversation-0f3c2a1b-9d4e-4c1a"
		if got := e.must(e.call("POST", "/conversations", ownerKey, map[string]any{"id": fid}), 201).obj("conversation")["id"]; got != fid {
			t.Fatalf("fid conversation %v", got)
		}
		if r := e.call("POST", "/conversations", ownerKey, map[string]any{"id": fid}); r.Status != 409 || r.errType() != "AlreadyExists" {
			t.Fatalf("duplicate conversation: %d", r.Status)
		}
		for _, bad := range []string{"invalid+x", strings.Repeat("c", 118)} {
			for _, p := range []string{"/conversations", "/conversations/get-or-create"} {
				if r := e.call("POST", p, ownerKey, map[string]any{"id": bad}); r.Status != 400 || r.errType() != "InvalidPayload" {
					t.Fatalf("%s %q: %d", p, bad, r.Status)
				}
			}
		}
		// get-or-create: required id, owner only, same conversation.
		if r := e.call("POST", "/conversations/get-or-create", ownerKey, map[string]any{}); r.Status != 400 {
			t.Fatalf("get-or-create without id: %d", r.Status)
		}
		if got := e.must(e.call("POST", "/conversations/get-or-create", ownerKey, map[string]any{"id": fid}), 201).obj("conversation")["id"]; got != fid {
			t.Fatalf("get-or-create existing: %v", got)
		}
		if r := e.call("POST", "/conversations/get-or-create", key2, map[string]any{"id": fid}); r.Status != 403 {
			t.Fatalf("get-or-create of another's: %d", r.Status)
		}
		if r := e.call("GET", "/conversations/nope", ownerKey, nil); r.Status != 404 {
			t.Fatalf("unknown conversation: %d", r.Status)
		}

		// Participants.
		if r := e.call("GET", "/conversations/"+conv, key2, nil); r.Status != 403 || r.errType() != "Forbidden" {
			t.Fatalf("non-participant getConversation: %d", r.Status)
		}
		if r := e.call("POST", "/messages", key2, map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": "x"}}); r.Status != 403 {
			t.Fatalf("non-participant createMessage: %d", r.Status)
		}
		if r := e.call("POST", "/conversations/"+conv+"/participants", key2, map[string]any{"userId": user2}); r.Status != 403 {
			t.Fatalf("non-owner addParticipant: %d", r.Status)
		}
		if r := e.call("POST", "/conversations/"+conv+"/participants", ownerKey, map[string]any{"userId": "ghost"}); r.Status != 404 {
			t.Fatalf("add unknown user: %d", r.Status)
		}
		p := e.must(e.call("POST", "/conversations/"+conv+"/participants", ownerKey, map[string]any{"userId": user2}), 200).obj("participant")
		if p["id"] != user2 {
			t.Fatalf("participant %v", p)
		}
		e.must(e.call("GET", "/conversations/"+conv, key2, nil), 200)
		e.sendText(key2, conv, "hi")
		if got := e.must(e.call("GET", "/conversations/"+conv+"/participants/"+user2, ownerKey, nil), 200).obj("participant")["id"]; got != user2 {
			t.Fatalf("getParticipant %v", got)
		}
		if r := e.call("GET", "/conversations/"+conv+"/participants/"+owner, key2, nil); r.Status != 403 {
			t.Fatalf("getParticipant by non-owner: %d", r.Status)
		}
		lp := e.must(e.call("GET", "/conversations/"+conv+"/participants", key2, nil), 200)
		if ps, _ := lp.Body["participants"].([]any); len(ps) != 2 || lp.Body["meta"] == nil {
			t.Fatalf("listParticipants: %s", lp.Raw)
		}
		if r := e.call("GET", "/conversations/"+conv+"/participants", key3, nil); r.Status != 403 {
			t.Fatalf("listParticipants by a third user: %d", r.Status)
		}
		if r := e.call("DELETE", "/conversations/"+conv+"/participants/"+owner, ownerKey, "{}"); r.Status != 400 || r.errType() != "InvalidPayload" {
			t.Fatalf("remove owner: %d %s", r.Status, r.Raw)
		}
		e.must(e.call("DELETE", "/conversations/"+conv+"/participants/"+user2, ownerKey, "{}"), 200)
		if r := e.call("POST", "/messages", key2, map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": "x"}}); r.Status != 403 {
			t.Fatalf("removed participant createMessage: %d", r.Status)
		}
		if r := e.call("GET", "/conversations/"+conv+"/participants/"+user2, ownerKey, nil); r.Status != 404 {
			t.Fatalf("getParticipant of removed: %d", r.Status)
		}

		// listConversations: the caller's own, meta always present.
		lc := e.must(e.call("GET", "/conversations", ownerKey, nil), 200)
		if cs, _ := lc.Body["conversations"].([]any); len(cs) != 2 || lc.Body["meta"] == nil {
			t.Fatalf("listConversations: %s", lc.Raw)
		}
		if cs := e.must(e.call("GET", "/conversations", key2, nil), 200).Body["conversations"].([]any); len(cs) != 0 {
			t.Fatalf("listConversations of user2: %v", cs)
		}
		// Pagination.
		for range 25 {
			e.conversation(key3)
		}
		seen := map[string]bool{}
		token := ""
		for {
			path := "/conversations"
			if token != "" {
				path += "?nextToken=" + token
			}
			r := e.must(e.call("GET", path, key3, nil), 200)
			for _, c := range r.Body["conversations"].([]any) {
				seen[c.(map[string]any)["id"].(string)] = true
			}
			token, _ = r.obj("meta")["nextToken"].(string)
			if token == "" {
				break
			}
		}
		if len(seen) != 25 {
			t.Fatalf("paginated %d conversations, want 25", len(seen))
		}
		if r := e.call("GET", "/conversations?nextToken=garbage", key3, nil); r.Status != 400 {
			t.Fatalf("bad token: %d", r.Status)
		}

		// deleteConversation: owner only.
		if r := e.call("DELETE", "/conversations/"+fid, key2, "{}"); r.Status != 403 && r.Status != 404 {
			t.Fatalf("delete by non-owner: %d", r.Status)
		}
		e.must(e.call("DELETE", "/conversations/"+fid, ownerKey, "{}"), 200)
		if r := e.call("GET", "/conversations/"+fid, ownerKey, nil); r.Status != 404 {
			t.Fatalf("deleted conversation: %d", r.Status)
		}
	})
}

// TestMessagesRoundTrip follows the e2e round trip (of the upstream client's e2e suite): the
// sender's signal, the bot's reply, listMessages, getMessage all agree.
func TestMessagesRoundTrip(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		uid, key := e.user("")
		conv := e.conversation(key)
		s := e.listen(key, conv, -1)

		r := e.must(e.call("POST", "/messages", key, map[string]any{"conversationId": conv,
			"payload": map[string]any{"type": "text", "text": "metadata", "extra": "dropped"}, "metadata": map[string]any{"foo": "bar", "n": nil}}), 201)
		msg := r.obj("message")
		if _, ok := msg["payload"].(map[string]any)["extra"]; ok {
			t.Fatalf("unlisted payload field stored: %v", msg)
		}
		own := s.next(5 * time.Second)
		if own.Type != "message_created" || own.Sig["isBot"] != false {
			t.Fatalf("own signal %+v", own)
		}
		delete(own.Sig, "isBot")
		if !reflect.DeepEqual(own.Sig, msg) {
			t.Fatalf("signal %v != response %v", own.Sig, msg)
		}
		bot := s.next(5 * time.Second)
		if bot.Type != "message_created" || bot.Sig["isBot"] != true || bot.Sig["userId"] != e.bot.ID {
			t.Fatalf("bot signal %+v", bot)
		}
		if !reflect.DeepEqual(bot.Sig["metadata"], msg["metadata"]) {
			t.Fatalf("bot reply metadata %v", bot.Sig["metadata"])
		}
		if bot.ID != own.ID+1 {
			t.Fatalf("seq %d then %d", own.ID, bot.ID)
		}
		if !(bot.Sig["createdAt"].(string) > msg["createdAt"].(string)) {
			t.Fatalf("reply not after message: %v %v", bot.Sig["createdAt"], msg["createdAt"])
		}
		delete(bot.Sig, "isBot")
		list := e.must(e.call("GET", "/conversations/"+conv+"/messages", key, nil), 200)
		msgs := list.Body["messages"].([]any)
		if len(msgs) != 2 || list.Body["meta"] == nil {
			t.Fatalf("listMessages: %s", list.Raw)
		}
		byID := map[string]any{}
		for _, m := range msgs {
			byID[m.(map[string]any)["id"].(string)] = m
		}
		if !reflect.DeepEqual(byID[msg["id"].(string)], msg) || !reflect.DeepEqual(byID[bot.Sig["id"].(string)], bot.Sig) {
			t.Fatalf("listMessages disagrees: %v", msgs)
		}
		got := e.must(e.call("GET", "/messages/"+msg["id"].(string), key, nil), 200).obj("message")
		if !reflect.DeepEqual(got, msg) {
			t.Fatalf("getMessage %v != %v", got, msg)
		}
		if msg["userId"] != uid {
			t.Fatalf("userId %v", msg["userId"])
		}

		// Echo replies.
		e.sendText(key, conv, "Hello THERE")
		reply := s.waitFor(5*time.Second, func(f frame) bool { return f.Sig["isBot"] == true })
		if p := reply.Sig["payload"].(map[string]any); p["text"] != `Hi! You said: "hello there"` {
			t.Fatalf("echo %v", p)
		}
		e.sendText(key, conv, "bloc")
		reply = s.waitFor(5*time.Second, func(f frame) bool { return f.Sig["isBot"] == true })
		if p := reply.Sig["payload"].(map[string]any); p["type"] != "bloc" || len(p["items"].([]any)) != 3 {
			t.Fatalf("bloc reply %v", p)
		}
		e.must(e.call("POST", "/messages", key, map[string]any{"conversationId": conv,
			"payload": map[string]any{"type": "image", "imageUrl": "https://x/i.png"}}), 201)
		reply = s.waitFor(5*time.Second, func(f frame) bool { return f.Sig["isBot"] == true })
		if p := reply.Sig["payload"].(map[string]any); p["text"] != "I only understand text messages" {
			t.Fatalf("non-text reply %v", p)
		}

		// Delete: only the author; message_deleted; then 404.
		_, other := e.user("")
		if r := e.call("DELETE", "/messages/"+msg["id"].(string), other, "{}"); r.Status != 403 {
			t.Fatalf("delete by another: %d", r.Status)
		}
		e.must(e.call("DELETE", "/messages/"+msg["id"].(string), key, "{}"), 200)
		del := s.waitFor(5*time.Second, func(f frame) bool { return f.Type == "message_deleted" })
		if del.Sig["id"] != msg["id"] || del.Sig["userId"] != uid || del.Sig["conversationId"] != conv {
			t.Fatalf("message_deleted %v", del.Sig)
		}
		if r := e.call("GET", "/messages/"+msg["id"].(string), key, nil); r.Status != 404 || r.errType() != "ResourceNotFound" {
			t.Fatalf("deleted message: %d", r.Status)
		}
		if r := e.call("GET", "/messages/"+bot.Sig["id"].(string), other, nil); r.Status != 403 {
			t.Fatalf("getMessage by non-participant: %d", r.Status)
		}

		// Custom events and their echo.
		ev := e.must(e.call("POST", "/events", key, map[string]any{"conversationId": conv, "payload": map[string]any{"foo": "bar", "n": []any{1.0, 2.0}}}), 201).obj("event")
		mine := s.waitFor(5*time.Second, func(f frame) bool { return f.Type == "event_created" })
		if mine.Sig["isBot"] != false || mine.Sig["id"] != ev["id"] {
			t.Fatalf("own event signal %v", mine.Sig)
		}
		echo := s.waitFor(5*time.Second, func(f frame) bool { return f.Type == "event_created" })
		if echo.Sig["isBot"] != true || echo.Sig["userId"] != e.bot.ID || !reflect.DeepEqual(echo.Sig["payload"], ev["payload"]) {
			t.Fatalf("echo event %v", echo.Sig)
		}
		if id, ok := echo.Sig["id"]; !ok || id != nil {
			t.Fatalf("bot event id must be present and null: %v", echo.Sig)
		}
		if got := e.must(e.call("GET", "/events/"+ev["id"].(string), key, nil), 200).obj("event"); !reflect.DeepEqual(got, ev) {
			t.Fatalf("getEvent %v != %v", got, ev)
		}
		if r := e.call("GET", "/events/"+ev["id"].(string), other, nil); r.Status != 403 {
			t.Fatalf("getEvent by non-participant: %d", r.Status)
		}
		if r := e.call("GET", "/events/nope", key, nil); r.Status != 404 {
			t.Fatalf("unknown event: %d", r.Status)
		}

		// Nothing is posted when a conversation is created.
		c2 := e.conversation(key)
		time.Sleep(200 * time.Millisecond)
		if msgs := e.must(e.call("GET", "/conversations/"+c2+"/messages", key, nil), 200).Body["messages"].([]any); len(msgs) != 0 {
			t.Fatalf("messages in a new conversation: %v", msgs)
		}
	})
}

// TestBotIsolation: one bot's data is never visible through another's
// webhook id.
func TestBotIsolation(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		_, key := e.user("shared-id")
		conv := e.conversation(key)
		m := e.sendText(key, conv, "secret")

		other := makeBot(t, e.db)
		base := e.srv.URL + "/chat/" + other.WebhookID
		// The first bot's key does not open the second bot's API.
		if r := e.callURL("GET", base+"/users/me", key, nil); r.Status != 401 {
			t.Fatalf("foreign key: %d", r.Status)
		}
		k2 := signKey(other.Key, "shared-id")
		if r := e.callURL("GET", base+"/users/me", k2, nil); r.Status != 404 {
			t.Fatalf("same user id on another bot: %d", r.Status)
		}
		e.must(e.callURL("POST", base+"/users/get-or-create", k2, map[string]any{}), 201)
		for _, p := range []string{"/conversations/" + conv, "/messages/" + m["id"].(string), "/conversations/" + conv + "/messages"} {
			if r := e.callURL("GET", base+p, k2, nil); r.Status != 404 {
				t.Fatalf("%s through another bot: %d %s", p, r.Status, r.Raw)
			}
		}
		if cs := e.must(e.callURL("GET", base+"/conversations", k2, nil), 200).Body["conversations"].([]any); len(cs) != 0 {
			t.Fatalf("conversations through another bot: %v", cs)
		}
		// And the same fid can be used on the other bot independently.
		e.must(e.callURL("POST", base+"/conversations", k2, map[string]any{"id": conv}), 201)
	})
}

func TestCORS(t *testing.T) {
	e := newEnv(t, testdbSQLite(t), envOpts{})
	req := func(method, path string, hdr map[string]string) http.Header {
		t.Helper()
		r, _ := newRequest(method, e.base+path, hdr)
		res, err := e.client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("%s %s: %d", method, path, res.StatusCode)
		}
		return res.Header
	}
	h := req("OPTIONS", "/messages", map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "content-type,x-user-key,x-custom"})
	if h["Access-Control-Allow-Origin"][0] != "https://app.example" || h["Access-Control-Allow-Credentials"][0] != "true" ||
		!strings.Contains(h["Access-Control-Allow-Headers"][0], "x-user-key") || !strings.Contains(h["Access-Control-Allow-Methods"][0], "PUT") {
		t.Fatalf("preflight headers %v", h)
	}
	h = req("GET", "/hello/", map[string]string{"Origin": "https://app.example"})
	if h.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Fatalf("hello CORS headers %v", h)
	}
}

func TestPayloadVariantsStored(t *testing.T) {
	e := newEnv(t, testdbSQLite(t), envOpts{bot: nopBot{}})
	_, key := e.user("")
	conv := e.conversation(key)
	for name, p := range validPayloads {
		var v any
		_ = json.Unmarshal([]byte(p), &v)
		r := e.call("POST", "/messages", key, map[string]any{"conversationId": conv, "payload": v})
		if r.Status != 201 {
			t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
		}
		got := e.must(e.call("GET", "/messages/"+r.obj("message")["id"].(string), key, nil), 200).obj("message")
		if !reflect.DeepEqual(got["payload"], v) {
			t.Fatalf("%s: stored %v, sent %v", name, got["payload"], v)
		}
	}
}

// nopBot never replies.
type nopBot struct{}

func (nopBot) HandleTurn(context.Context, *turns.TurnInput, turns.BotOutput) error { return nil }

// TestCachedParticipationsInvalidated: participations are cached on the
// hot path; deleting a conversation or a user takes effect at once.
func TestCachedParticipationsInvalidated(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{})
		_, keyA := e.user("")
		_, keyB := e.user("")
		msg := func(key, conv string) int {
			return e.call("POST", "/messages", key, map[string]any{"conversationId": conv,
				"payload": map[string]any{"type": "text", "text": "x"}}).Status
		}
		// A's conversation, deleted and created again with the same id by B.
		fid := "cached-conv-1"
		e.must(e.call("POST", "/conversations", keyA, map[string]any{"id": fid}), 201)
		if st := msg(keyA, fid); st != 201 {
			t.Fatalf("createMessage: %d", st)
		}
		e.must(e.call("DELETE", "/conversations/"+fid, keyA, nil), 200)
		if st := msg(keyA, fid); st != 404 {
			t.Fatalf("createMessage in a deleted conversation: %d", st)
		}
		e.must(e.call("POST", "/conversations", keyB, map[string]any{"id": fid}), 201)
		if st := msg(keyA, fid); st != 403 {
			t.Fatalf("createMessage in a re-created conversation of another: %d", st)
		}
		// A deleted user loses its participations (its key stays valid).
		conv := e.conversation(keyA)
		if st := msg(keyA, conv); st != 201 {
			t.Fatalf("createMessage: %d", st)
		}
		e.must(e.call("DELETE", "/users/me", keyA, nil), 200)
		if st := msg(keyA, conv); st != 403 {
			t.Fatalf("createMessage by a deleted user: %d", st)
		}
	})
}

// participantReads counts the participation reads made outside
// transactions (Chat.IsParticipant on the database).
type participantReads struct {
	store.DB
	n atomic.Int64
}

func (p *participantReads) Chat() store.Chat { return countedChat{p.DB.Chat(), p} }

type countedChat struct {
	store.Chat
	p *participantReads
}

func (c countedChat) IsParticipant(ctx context.Context, botID, conversationID, userID string) (bool, error) {
	c.p.n.Add(1)
	return c.Chat.IsParticipant(ctx, botID, conversationID, userID)
}

// TestExpiredParticipationCheckedInTheCommit: a user's first message in a
// conversation reads the participation; once its cached answer expired,
// the next message reads nothing (its transaction checks it) and is
// stored; a participation removed behind the cache's back (straight
// through the store, as by another node) refuses the message in its
// transaction: 403, nothing stored, and a conversation deleted that way
// 404.
func TestExpiredParticipationCheckedInTheCommit(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		reads := &participantReads{DB: db}
		e := newEnv(t, reads, envOpts{})
		userA, keyA := e.user("")
		msg := func(key, conv string) int {
			return e.call("POST", "/messages", key, map[string]any{"conversationId": conv,
				"payload": map[string]any{"type": "text", "text": "x"}}).Status
		}
		stored := func(conv string) int {
			ms, _, err := db.Chat().ListMessages(ctx, e.bot.ID, conv, store.Page{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range ms {
				if m.Direction == model.DirectionIncoming {
					n++
				}
			}
			return n
		}
		conv := e.conversation(keyA)
		convGone := e.conversation(keyA)
		for _, c := range []string{conv, convGone} {
			before := reads.n.Load()
			if st := msg(keyA, c); st != 201 {
				t.Fatalf("createMessage: %d", st)
			}
			if reads.n.Load() == before {
				t.Fatal("a first message did not read the participation")
			}
		}
		time.Sleep(1100 * time.Millisecond) // the cached participations expired
		before := reads.n.Load()
		if st := msg(keyA, conv); st != 201 {
			t.Fatalf("createMessage with an expired participation: %d", st)
		}
		if n := reads.n.Load() - before; n != 0 {
			t.Fatalf("%d participation reads for a message whose participation had expired, want 0", n)
		}
		if n := stored(conv); n != 2 {
			t.Fatalf("%d user messages stored, want 2", n)
		}

		if err := db.Chat().RemoveParticipant(ctx, e.bot.ID, conv, userA); err != nil {
			t.Fatal(err)
		}
		if err := db.Chat().DeleteConversation(ctx, e.bot.ID, convGone); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		for _, want := range []struct {
			conv   string
			status int
		}{{conv, 403}, {conv, 403}, {convGone, 404}} {
			if st := msg(keyA, want.conv); st != want.status {
				t.Fatalf("createMessage after the participation's removal: %d, want %d", st, want.status)
			}
		}
		if n := stored(conv); n != 2 {
			t.Fatalf("%d user messages stored after the removal, want 2", n)
		}
	})
}
