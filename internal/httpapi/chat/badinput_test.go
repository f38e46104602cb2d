package chat_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

func testdbSQLite(t *testing.T) store.DB { return testdb.SQLite(t) }

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func hs512(secret, id string) string {
	k, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"id": id}).SignedString([]byte(secret))
	return k
}

func newRequest(method, url string, hdr map[string]string) (*http.Request, error) {
	r, err := http.NewRequest(method, url, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r, err
}

// validPayloads are one example of each of the 12 variants, written in
// their normalised form (so what is stored equals what was sent).
var validPayloads = map[string]string{
	"text":     `{"type":"text","text":"hi"}`,
	"markdown": `{"type":"markdown","markdown":"**hi**"}`,
	"image":    `{"type":"image","imageUrl":"https://x/i.png"}`,
	"audio":    `{"type":"audio","audioUrl":"https://x/a.ogg"}`,
	"video":    `{"type":"video","videoUrl":"https://x/v.mp4"}`,
	"file":     `{"type":"file","fileUrl":"https://x/f.pdf","title":"F"}`,
	"location": `{"type":"location","latitude":45.5,"longitude":-73.6,"address":"","title":"Home"}`,
	"card":     `{"type":"card","title":"T","subtitle":"S","imageUrl":"https://x/i.png","actions":[{"action":"url","label":"Go","value":"https://x"}]}`,
	"carousel": `{"type":"carousel","items":[{"type":"card","title":"A","actions":[]},{"type":"card","title":"B","actions":[{"action":"say","label":"L","value":"V"}]}]}`,
	"choice":   `{"type":"choice","text":"Pick","options":[{"label":"A","value":"a"}]}`,
	"dropdown": `{"type":"dropdown","text":"Pick","options":[]}`,
	"bloc":     `{"type":"bloc","items":[{"type":"text","text":"t"},{"type":"image","imageUrl":"https://x/i.png"},{"type":"location","latitude":1,"longitude":2}]}`,
}

// invalidPayloads each give 400 InvalidPayload.
var invalidPayloads = map[string]string{
	"not an object":         `"text"`,
	"array":                 `[]`,
	"null":                  `null`,
	"no type":               `{"text":"hi"}`,
	"numeric type":          `{"type":1,"text":"hi"}`,
	"unknown type":          `{"type":"sticker","url":"x"}`,
	"empty text":            `{"type":"text","text":""}`,
	"text not a string":     `{"type":"text","text":5}`,
	"missing text":          `{"type":"text"}`,
	"empty markdown":        `{"type":"markdown","markdown":""}`,
	"empty image url":       `{"type":"image","imageUrl":""}`,
	"missing audio url":     `{"type":"audio"}`,
	"video url number":      `{"type":"video","videoUrl":3}`,
	"empty file title":      `{"type":"file","fileUrl":"u","title":""}`,
	"location string lat":   `{"type":"location","latitude":"1","longitude":2}`,
	"location no longitude": `{"type":"location","latitude":1}`,
	"location null address": `{"type":"location","latitude":1,"longitude":2,"address":null}`,
	"card no actions":       `{"type":"card","title":"T"}`,
	"card empty title":      `{"type":"card","title":"","actions":[]}`,
	"card bad action kind":  `{"type":"card","title":"T","actions":[{"action":"call","label":"L","value":"V"}]}`,
	"card empty label":      `{"type":"card","title":"T","actions":[{"action":"url","label":"","value":"V"}]}`,
	"card empty subtitle":   `{"type":"card","title":"T","subtitle":"","actions":[]}`,
	"carousel non-card":     `{"type":"carousel","items":[{"type":"text","text":"x"}]}`,
	"carousel no items":     `{"type":"carousel"}`,
	"choice no options":     `{"type":"choice","text":"t"}`,
	"choice empty value":    `{"type":"choice","text":"t","options":[{"label":"a","value":""}]}`,
	"dropdown options obj":  `{"type":"dropdown","text":"t","options":{}}`,
	"bloc with card":        `{"type":"bloc","items":[{"type":"card","title":"T","actions":[]}]}`,
	"bloc with bloc":        `{"type":"bloc","items":[{"type":"bloc","items":[]}]}`,
	"bloc with choice":      `{"type":"bloc","items":[{"type":"choice","text":"t","options":[]}]}`,
	"bloc bad item":         `{"type":"bloc","items":[{"type":"text","text":""}]}`,
	"bloc items not array":  `{"type":"bloc","items":"x"}`,
}

// TestBadInput sends malformed, mistyped, incomplete and oversized input to
// every operation that takes any, and checks the error type and that
// nothing was stored (no message, event, signal or turn).
func TestBadInput(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, envOpts{bot: nopBot{}})
		uid, key := e.user("owner")
		conv := e.conversation(key)
		m := e.sendText(key, conv, "keep")
		mid := m["id"].(string)
		// Let the bot finish the turn, so only the cases change anything.
		for i := 0; ; i++ {
			turns, err := db.Signals().PendingTurns(context.Background(), e.bot.ID, conv, 10)
			if err != nil || len(turns) == 0 {
				break
			}
			if i > 200 {
				t.Fatal("turn never completed")
			}
			time.Sleep(10 * time.Millisecond)
		}
		big := `{"conversationId":"` + conv + `","payload":{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}}`
		msg := func(payload string) string {
			return fmt.Sprintf(`{"conversationId":%q,"payload":%s}`, conv, payload)
		}

		type tc struct {
			name, method, path, body string
			status                   int
			typ                      string
		}
		cases := []tc{
			// createUser
			{"createUser malformed", "POST", "/users", `{"id":`, 400, "InvalidPayload"},
			{"createUser not object", "POST", "/users", `[1]`, 400, "InvalidPayload"},
			{"createUser id number", "POST", "/users", `{"id":5}`, 400, "InvalidPayload"},
			{"createUser name number", "POST", "/users", `{"name":5}`, 400, "InvalidPayload"},
			{"createUser oversized", "POST", "/users", `{"name":"` + strings.Repeat("n", 1<<20) + `"}`, 413, "PayloadTooLarge"},
			// getOrCreateUser / updateUser
			{"getOrCreateUser malformed", "POST", "/users/get-or-create", `{`, 400, "InvalidPayload"},
			{"getOrCreateUser profile number", "POST", "/users/get-or-create", `{"profile":1}`, 400, "InvalidPayload"},
			{"updateUser malformed", "PUT", "/users/me", `{"name":}`, 400, "InvalidPayload"},
			{"updateUser wrong type", "PUT", "/users/me", `{"pictureUrl":[]}`, 400, "InvalidPayload"},
			{"updateUser oversized", "PUT", "/users/me", `{"name":"` + strings.Repeat("n", 1<<20) + `"}`, 413, "PayloadTooLarge"},
			// conversations
			{"createConversation malformed", "POST", "/conversations", `{"id"`, 400, "InvalidPayload"},
			{"createConversation id number", "POST", "/conversations", `{"id":1}`, 400, "InvalidPayload"},
			{"createConversation bad fid", "POST", "/conversations", `{"id":"a b"}`, 400, "InvalidPayload"},
			{"getOrCreateConversation missing id", "POST", "/conversations/get-or-create", `{}`, 400, "InvalidPayload"},
			{"getOrCreateConversation id bool", "POST", "/conversations/get-or-create", `{"id":true}`, 400, "InvalidPayload"},
			{"getOrCreateConversation oversized", "POST", "/conversations/get-or-create", `{"id":"` + strings.Repeat("i", 1<<20) + `"}`, 413, "PayloadTooLarge"},
			// participants
			{"addParticipant malformed", "POST", "/conversations/" + conv + "/participants", `{"userId"`, 400, "InvalidPayload"},
			{"addParticipant missing userId", "POST", "/conversations/" + conv + "/participants", `{}`, 400, "InvalidPayload"},
			{"addParticipant userId number", "POST", "/conversations/" + conv + "/participants", `{"userId":7}`, 400, "InvalidPayload"},
			{"removeParticipant owner", "DELETE", "/conversations/" + conv + "/participants/" + uid, `{}`, 400, "InvalidPayload"},
			// messages
			{"createMessage malformed", "POST", "/messages", `{"conversationId":`, 400, "InvalidPayload"},
			{"createMessage trailing garbage", "POST", "/messages", msg(validPayloads["text"]) + `}`, 400, "InvalidPayload"},
			{"createMessage missing payload", "POST", "/messages", fmt.Sprintf(`{"conversationId":%q}`, conv), 400, "InvalidPayload"},
			{"createMessage missing conversationId", "POST", "/messages", `{"payload":` + validPayloads["text"] + `}`, 400, "InvalidPayload"},
			{"createMessage conversationId number", "POST", "/messages", `{"conversationId":1,"payload":` + validPayloads["text"] + `}`, 400, "InvalidPayload"},
			{"createMessage metadata null", "POST", "/messages", fmt.Sprintf(`{"conversationId":%q,"payload":%s,"metadata":null}`, conv, validPayloads["text"]), 400, "InvalidPayload"},
			{"createMessage metadata array", "POST", "/messages", fmt.Sprintf(`{"conversationId":%q,"payload":%s,"metadata":[1]}`, conv, validPayloads["text"]), 400, "InvalidPayload"},
			{"createMessage oversized", "POST", "/messages", big, 413, "PayloadTooLarge"},
			{"createMessage unknown conversation", "POST", "/messages", `{"conversationId":"nope","payload":` + validPayloads["text"] + `}`, 404, "ResourceNotFound"},
			// events
			{"createEvent malformed", "POST", "/events", `{"payload":{}`, 400, "InvalidPayload"},
			{"createEvent missing payload", "POST", "/events", fmt.Sprintf(`{"conversationId":%q}`, conv), 400, "InvalidPayload"},
			{"createEvent missing conversationId", "POST", "/events", `{"payload":{}}`, 400, "InvalidPayload"},
			{"createEvent payload array", "POST", "/events", fmt.Sprintf(`{"conversationId":%q,"payload":[1]}`, conv), 400, "InvalidPayload"},
			{"createEvent payload string", "POST", "/events", fmt.Sprintf(`{"conversationId":%q,"payload":"x"}`, conv), 400, "InvalidPayload"},
			{"createEvent payload null", "POST", "/events", fmt.Sprintf(`{"conversationId":%q,"payload":null}`, conv), 400, "InvalidPayload"},
			{"createEvent extra property", "POST", "/events", fmt.Sprintf(`{"conversationId":%q,"payload":{},"type":"x"}`, conv), 400, "InvalidPayload"},
			{"createEvent oversized", "POST", "/events", fmt.Sprintf(`{"conversationId":%q,"payload":{"x":"%s"}}`, conv, strings.Repeat("x", 1<<20)), 413, "PayloadTooLarge"},
			// path ids
			{"getMessage unknown", "GET", "/messages/nope", "", 404, "ResourceNotFound"},
			{"deleteMessage unknown", "DELETE", "/messages/nope", `{}`, 404, "ResourceNotFound"},
			{"listMessages unknown conversation", "GET", "/conversations/nope/messages", "", 404, "ResourceNotFound"},
			{"listMessages bad token", "GET", "/conversations/" + conv + "/messages?nextToken=%2B%2F", "", 400, "InvalidQuery"},
		}
		for name, p := range invalidPayloads {
			cases = append(cases, tc{"createMessage payload " + name, "POST", "/messages", msg(p), 400, "InvalidPayload"})
		}
		for _, c := range cases {
			before := snapshot(t, db, e.bot.ID, conv)
			var body any
			if c.body != "" {
				body = c.body
			}
			r := e.call(c.method, c.path, key, body)
			if r.Status != c.status || r.errType() != c.typ {
				t.Errorf("%s: got %d %s, want %d %s: %.300s", c.name, r.Status, r.errType(), c.status, c.typ, r.Raw)
				continue
			}
			if code, _ := r.Body["code"].(float64); int(code) != c.status || r.Body["id"] == "" || r.Body["message"] == "" {
				t.Errorf("%s: error body %s", c.name, r.Raw)
			}
			if after := snapshot(t, db, e.bot.ID, conv); after != before {
				t.Errorf("%s: stored something: %s -> %s", c.name, before, after)
			}
		}
		// The message kept is still there and intact.
		e.must(e.call("GET", "/messages/"+mid, key, nil), 200)
	})
}

// snapshot summarises what a conversation holds.
func snapshot(t *testing.T, db store.DB, botID, conv string) string {
	t.Helper()
	ctx := context.Background()
	msgs, _, err := db.Chat().ListMessages(ctx, botID, conv, store.Page{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := db.Signals().SignalsAfter(ctx, botID, conv, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := db.Signals().PendingTurns(ctx, botID, conv, 1000)
	if err != nil {
		t.Fatal(err)
	}
	users, _, err := db.Chat().ListParticipants(ctx, botID, conv, store.Page{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	convs, _, err := db.Chat().ListBotConversations(ctx, botID, "", store.Page{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("messages=%d signals=%d turns=%d participants=%d conversations=%d", len(msgs), len(sigs), len(turns), len(users), len(convs))
}
