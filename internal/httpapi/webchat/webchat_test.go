package webchat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testbots"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// engines runs fn against a server on SQLite and one on PostgreSQL (files
// on disk and in the database respectively).
func engines(t *testing.T, fn func(t *testing.T, a *app.App, base string)) {
	run := func(t *testing.T, dbURL string) {
		a := testapp.Start(t, testapp.Config(t, dbURL), app.WithBots(testbots.Resolver(greeter{})))
		fn(t, a, a.URL+"/webchat/"+newBot(t, a))
	}
	t.Run("sqlite", func(t *testing.T) { run(t, "") })
	t.Run("postgres", func(t *testing.T) { run(t, testdb.PostgresURL(t)) })
}

// greeter welcomes on conversation start and echoes text.
type greeter struct{}

func (greeter) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	if in.Message == nil {
		if in.Event.Type == model.WebchatConversationStarted {
			_, err := out.CreateMessage(ctx, turns.OutgoingMessage{Payload: json.RawMessage(`{"type":"text","text":"welcome"}`)})
			return err
		}
		return nil
	}
	_, err := out.CreateMessage(ctx, turns.OutgoingMessage{Payload: json.RawMessage(`{"type":"text","text":"echo"}`)})
	return err
}

func newBot(t *testing.T, a *app.App) string {
	t.Helper()
	var ws struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	call(t, "GET", a.URL+"/v1/admin/workspaces", map[string]string{"Authorization": "Bearer " + a.AdminToken}, nil, 200, &ws)
	var res struct {
		Bot struct {
			Integrations map[string]struct {
				WebhookID string `json:"webhookId"`
			} `json:"integrations"`
		} `json:"bot"`
	}
	call(t, "POST", a.URL+"/v1/admin/bots", map[string]string{"Authorization": "Bearer " + a.AdminToken,
		"x-workspace-id": ws.Workspaces[0].ID}, map[string]any{"name": "w"}, 200, &res)
	return res.Bot.Integrations["webchat"].WebhookID
}

func call(t *testing.T, method, url string, headers map[string]string, body any, want int, out any) http.Header {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, url, rd)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, res.StatusCode, want, data)
	}
	if method != "OPTIONS" && res.StatusCode != 204 && !json.Valid(data) {
		t.Fatalf("%s %s: body is not JSON: %q", method, url, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
	}
	return res.Header
}

type signal struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// stream opens /initialize and returns its signals as they come, and the
// raw lines seen.
func stream(t *testing.T, url, key string) (<-chan signal, *[]string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("timeout", "60000")
	if key != "" {
		req.Header.Set("x-user-key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("initialize: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("the stream lacks Access-Control-Allow-Origin")
	}
	ch := make(chan signal, 64)
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var s signal
				if json.Unmarshal([]byte(d), &s) == nil {
					select {
					case ch <- s:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	// stop returns once the reader is done: lines is the caller's then.
	return ch, &lines, func() { cancel(); res.Body.Close(); <-done }
}

func next(t *testing.T, ch <-chan signal, typ string) signal {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended waiting for %s", typ)
			}
			if s.Type == typ {
				return s
			}
		case <-timeout:
			t.Fatalf("no %s signal", typ)
		}
	}
}

type initData struct {
	Conversation struct{ ID string } `json:"conversation"`
	Messages     []struct {
		ID      string          `json:"id"`
		UserID  string          `json:"userId"`
		Payload json.RawMessage `json:"payload"`
	} `json:"messages"`
	Participants []any `json:"participants"`
	User         struct {
		ID      string `json:"id"`
		UserKey string `json:"userKey"`
	} `json:"user"`
}

func TestWebchatFlow(t *testing.T) {
	engines(t, func(t *testing.T, a *app.App, base string) {
		ch, lines, stop := stream(t, base+"/initialize", "")
		init := next(t, ch, "init")
		var d initData
		if err := json.Unmarshal(init.Data, &d); err != nil || d.User.UserKey == "" || d.Conversation.ID == "" || d.Participants == nil {
			t.Fatalf("init: %s", init.Data)
		}
		key := map[string]string{"x-user-key": d.User.UserKey, "Content-Type": "application/json"}
		started := map[string]any{"conversationId": d.Conversation.ID, "payload": map[string]any{"type": "conversation_started", "data": map[string]any{}}}
		var ev struct {
			Event struct {
				Payload struct {
					Data struct {
						Status struct{ IsInitial bool } `json:"status"`
					} `json:"data"`
				} `json:"payload"`
			} `json:"event"`
		}
		call(t, "POST", base+"/events", key, started, 201, &ev)
		if !ev.Event.Payload.Data.Status.IsInitial {
			t.Fatal("the first conversation_started is not initial")
		}
		next(t, ch, "message_created") // welcome

		// A message: status, echo with clientMessageId, typing, reply.
		call(t, "POST", base+"/messages", key, map[string]any{"conversationId": d.Conversation.ID,
			"payload": map[string]any{"type": "text", "text": "hi"}, "metadata": map[string]any{"clientMessageId": "abc123"}}, 201, nil)
		st := next(t, ch, "message_status_changed")
		if !strings.Contains(string(st.Data), `"newStatus":"processing"`) || !strings.Contains(string(st.Data), "abc123") {
			t.Fatalf("status: %s", st.Data)
		}
		echo := next(t, ch, "message_created")
		if !strings.Contains(string(echo.Data), `"clientMessageId":"abc123"`) {
			t.Fatalf("echo without clientMessageId: %s", echo.Data)
		}
		next(t, ch, "typing_started")
		reply := next(t, ch, "message_created")
		if !strings.Contains(string(reply.Data), `"echo"`) {
			t.Fatalf("reply: %s", reply.Data)
		}
		stop()
		for _, l := range *lines {
			if strings.HasPrefix(l, "event:") || strings.HasPrefix(l, "id:") {
				t.Fatalf("the stream has a %q line", l)
			}
		}

		// Reconnect: history, no second welcome.
		ch2, _, stop2 := stream(t, base+"/initialize?conversationId="+d.Conversation.ID, d.User.UserKey)
		defer stop2()
		var d2 initData
		_ = json.Unmarshal(next(t, ch2, "init").Data, &d2)
		if d2.Conversation.ID != d.Conversation.ID || len(d2.Messages) != 3 || d2.User.ID != d.User.ID {
			t.Fatalf("resume: conversation %s (want %s), %d messages", d2.Conversation.ID, d.Conversation.ID, len(d2.Messages))
		}
		call(t, "POST", base+"/events", key, started, 201, &ev)
		if ev.Event.Payload.Data.Status.IsInitial {
			t.Fatal("a second conversation_started is initial")
		}
		time.Sleep(300 * time.Millisecond)
		var msgs struct{ Messages []any }
		call(t, "GET", base+"/conversations/"+d.Conversation.ID+"/messages", key, nil, 200, &msgs)
		if len(msgs.Messages) != 3 {
			t.Fatalf("%d messages after a second start; the welcome ran twice?", len(msgs.Messages))
		}

		// Feedback on the bot's reply, shown in history.
		botMsg := d2.Messages[0].ID
		call(t, "PUT", base+"/messages/"+botMsg+"/feedback", key, map[string]any{"value": "negative", "comment": "meh"}, 200, nil)
		var got struct {
			Message struct {
				Feedback struct{ Value, Comment string }
			}
		}
		call(t, "GET", base+"/messages/"+botMsg, key, nil, 200, &got)
		if got.Message.Feedback.Value != "negative" || got.Message.Feedback.Comment != "meh" {
			t.Fatalf("feedback: %+v", got)
		}
		call(t, "DELETE", base+"/messages/"+botMsg+"/feedback", key, nil, 200, nil)

		// History list: conversations with their last message.
		var list struct {
			Conversations []struct {
				ID          string
				LastMessage *struct{ ID string }
			}
			Meta map[string]any
		}
		call(t, "GET", base+"/conversations", key, nil, 200, &list)
		if len(list.Conversations) != 1 || list.Conversations[0].LastMessage == nil || list.Meta == nil {
			t.Fatalf("conversations: %+v", list)
		}
		// ...and never an error, whatever the key.
		call(t, "GET", base+"/conversations", map[string]string{"x-user-key": "garbage"}, nil, 200, &list)

		// A bad key on /initialize: a new user, still 200 + init.
		ch3, _, stop3 := stream(t, base+"/initialize?conversationId="+d.Conversation.ID, "garbage")
		defer stop3()
		var d3 initData
		_ = json.Unmarshal(next(t, ch3, "init").Data, &d3)
		if d3.User.ID == d.User.ID || d3.Conversation.ID == d.Conversation.ID {
			t.Fatal("a bad key resumed someone else's conversation")
		}
		// A foreign conversation: Forbidden (the component then starts anew).
		other := map[string]string{"x-user-key": d3.User.UserKey, "Content-Type": "application/json"}
		call(t, "POST", base+"/messages", other, map[string]any{"conversationId": d.Conversation.ID,
			"payload": map[string]any{"type": "text", "text": "x"}}, 403, nil)
	})
}

func TestWebchatFiles(t *testing.T) {
	engines(t, func(t *testing.T, a *app.App, base string) {
		var created struct {
			User struct{ ID string }
			Key  string
		}
		call(t, "POST", base+"/users", map[string]string{"Content-Type": "application/json"}, map[string]any{}, 201, &created)
		key := map[string]string{"x-user-key": created.Key, "Content-Type": "application/json"}
		var f struct {
			File struct {
				ID, URL, UploadURL, ContentType, Status string
			}
		}
		// Declared too big: refused before anything is stored.
		call(t, "POST", base+"/files", key, map[string]any{"key": "abcdef-big.png", "size": 2 << 20}, 413, nil)

		call(t, "POST", base+"/files", key, map[string]any{"key": "abcdef-dot.png", "size": 4}, 201, &f)
		if f.File.ContentType != "image/png" || f.File.Status != "upload_pending" || !strings.HasSuffix(f.File.URL, "/dot.png") {
			t.Fatalf("file: %+v", f.File)
		}
		// Preflight of the upload URL.
		h := call(t, "OPTIONS", f.File.UploadURL, map[string]string{"Origin": "http://elsewhere.test",
			"Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "content-type,x-amz-tagging"}, nil, 204, nil)
		if h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "x-amz-tagging") {
			t.Fatalf("preflight: %v", h)
		}
		// Not yet uploaded: not served.
		call(t, "GET", f.File.URL, nil, nil, 404, nil)
		// A wrong token is refused.
		call(t, "PUT", f.File.UploadURL+"x", map[string]string{"Content-Type": "image/png"}, []byte("nope"), 403, nil)
		png := []byte("\x89PNG\r\n\x1a\nfake")
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "image/png", "x-amz-tagging": "public=true"}, png, 200, nil)
		res, err := http.Get(f.File.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/png" || !bytes.Equal(body, png) ||
			res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("download: %d %v", res.StatusCode, res.Header)
		}

		// The attachment is a Files API file of the bot: listFiles and
		// getFile show it (as a member with the admin's token), and its
		// Files API URL serves the same bytes.
		admin := map[string]string{"Authorization": "Bearer " + a.AdminToken}
		var ws struct{ Workspaces []struct{ ID string } }
		call(t, "GET", a.URL+"/v1/admin/workspaces", admin, nil, 200, &ws)
		admin["x-workspace-id"] = ws.Workspaces[0].ID
		var bots struct{ Bots []struct{ ID string } }
		call(t, "GET", a.URL+"/v1/admin/bots", admin, nil, 200, &bots)
		member := map[string]string{"Authorization": "Bearer " + a.AdminToken, "x-bot-id": bots.Bots[0].ID}
		var list struct {
			Files []struct{ ID, Key, Status, ContentType string }
		}
		call(t, "GET", a.URL+"/v1/files", member, nil, 200, &list)
		if len(list.Files) != 1 || list.Files[0].ID != f.File.ID || list.Files[0].Key != "abcdef-dot.png" ||
			list.Files[0].Status != "upload_completed" || list.Files[0].ContentType != "image/png" {
			t.Fatalf("listFiles: %+v", list.Files)
		}
		var got struct {
			File struct {
				ID, URL string
				Size    int
			}
		}
		call(t, "GET", a.URL+"/v1/files/"+f.File.ID, member, nil, 200, &got)
		if got.File.Size != len(png) || got.File.URL == "" {
			t.Fatalf("getFile: %+v", got.File)
		}
		res, err = http.Get(got.File.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(body, png) {
			t.Fatalf("Files API url: %d %q", res.StatusCode, body)
		}

		// Uploading more than 1 MB: 413, and the file is gone.
		call(t, "POST", base+"/files", key, map[string]any{"key": "abcdef-big.bin"}, 201, &f)
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "application/octet-stream"}, bytes.Repeat([]byte("x"), 1<<20+1), 413, nil)
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "application/octet-stream"}, []byte("late"), 404, nil)
		call(t, "GET", f.File.URL, nil, nil, 404, nil)

		// HTML is never rendered on Parley's origin.
		call(t, "POST", base+"/files", key, map[string]any{"key": "abcdef-x.html"}, 201, &f)
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "text/html"}, []byte("<script>alert(1)</script>"), 200, nil)
		res, err = http.Get(f.File.URL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") || !strings.Contains(res.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("html file served inline: %v", res.Header)
		}
	})
}

// Finding 8 of issue 12: an upload URL is single-use: a second PUT after
// the upload completed is refused and neither replaces nor deletes the file.
func TestUploadURLIsSingleUse(t *testing.T) {
	engines(t, func(t *testing.T, a *app.App, base string) {
		var created struct{ Key string }
		call(t, "POST", base+"/users", map[string]string{"Content-Type": "application/json"}, map[string]any{}, 201, &created)
		key := map[string]string{"x-user-key": created.Key, "Content-Type": "application/json"}
		var f struct {
			File struct{ URL, UploadURL string }
		}
		call(t, "POST", base+"/files", key, map[string]any{"key": "abcdef-a.txt"}, 201, &f)
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "text/plain"}, []byte("original"), 200, nil)
		read := func() string {
			res, err := http.Get(f.File.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return fmt.Sprint(res.StatusCode, " ", string(b))
		}
		// A second upload is refused (409) and changes nothing.
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "text/plain"}, []byte("replaced"), 409, nil)
		if got := read(); got != "200 original" {
			t.Fatalf("after a second PUT: %s", got)
		}
		// An oversized re-upload does not delete the completed file.
		call(t, "PUT", f.File.UploadURL, map[string]string{"Content-Type": "text/plain"}, bytes.Repeat([]byte("x"), 1<<20+1), 409, nil)
		if got := read(); got != "200 original" {
			t.Fatalf("after an oversized second PUT: %s", got)
		}
	})
}

func TestWebchatErrors(t *testing.T) {
	engines(t, func(t *testing.T, a *app.App, base string) {
		var e struct{ ID, Type, Message string }
		call(t, "GET", a.URL+"/webchat/nope/users/me", nil, nil, 404, &e)
		if !strings.HasPrefix(e.ID, "err_") || e.Type != "ResourceNotFound" || !strings.Contains(e.Message, "[Webhook Handler]") {
			t.Fatalf("unknown client id: %+v", e)
		}
		call(t, "GET", base+"/users/me", nil, nil, 401, &e)
		call(t, "POST", base+"/messages", map[string]string{"Content-Type": "application/json"},
			bytes.Repeat([]byte("x"), 1<<20+10), 413, &e)
		if e.Type != "PayloadTooLarge" {
			t.Fatalf("oversized body: %+v", e)
		}
	})
}
