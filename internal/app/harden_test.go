package app_test

// Regression tests of issue 12 (hardening): each one failed before its fix.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// hreq sends a request and returns its status, headers and decoded body.
func hreq(t *testing.T, method, url string, headers map[string]string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, res.Header, out
}

// chatUser creates a Chat API user and returns its id and key.
func chatUser(t *testing.T, chatURL string) (id, key string) {
	t.Helper()
	st, _, out := hreq(t, "POST", chatURL+"/users", nil, map[string]any{})
	if st != 200 && st != 201 {
		t.Fatalf("createUser: %d %v", st, out)
	}
	return out["user"].(map[string]any)["id"].(string), out["key"].(string)
}

func chatConversation(t *testing.T, chatURL, key string) string {
	t.Helper()
	st, _, out := hreq(t, "POST", chatURL+"/conversations", map[string]string{"x-user-key": key}, map[string]any{})
	if st != 200 && st != 201 {
		t.Fatalf("createConversation: %d %v", st, out)
	}
	return out["conversation"].(map[string]any)["id"].(string)
}

func chatMessage(t *testing.T, chatURL, key, conv, text string) string {
	t.Helper()
	st, _, out := hreq(t, "POST", chatURL+"/messages", map[string]string{"x-user-key": key},
		map[string]any{"conversationId": conv, "payload": map[string]any{"type": "text", "text": text}})
	if st != 200 && st != 201 {
		t.Fatalf("createMessage: %d %v", st, out)
	}
	return out["message"].(map[string]any)["id"].(string)
}

// listen opens a Chat API stream; lines come on the channel, which is
// closed when the stream ends.
func listen(t *testing.T, chatURL, key, conv string, lastEventID string) (status int, lines <-chan string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", chatURL+"/conversations/"+conv+"/listen", nil)
	req.Header.Set("x-user-key", key)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("listen: %v", err)
	}
	ch := make(chan string, 1024)
	if res.StatusCode != 200 {
		res.Body.Close()
		close(ch)
		return res.StatusCode, ch, cancel
	}
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			default:
			}
		}
	}()
	return 200, ch, cancel
}

const silentBot = `bot.on.message('text', async () => {})`

// Finding 10: a user removed from a conversation cannot delete their
// message in it.
func TestRemovedParticipantCannotDeleteMessage(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	_, chatURL, _ := codeBot(t, a, silentBot)
	_, owner := chatUser(t, chatURL)
	guestID, guest := chatUser(t, chatURL)
	conv := chatConversation(t, chatURL, owner)
	if st, _, out := hreq(t, "POST", chatURL+"/conversations/"+conv+"/participants", map[string]string{"x-user-key": owner},
		map[string]any{"userId": guestID}); st/100 != 2 {
		t.Fatalf("addParticipant: %d %v", st, out)
	}
	msg := chatMessage(t, chatURL, guest, conv, "mine")
	if st, _, out := hreq(t, "DELETE", chatURL+"/conversations/"+conv+"/participants/"+guestID, map[string]string{"x-user-key": owner}, nil); st/100 != 2 {
		t.Fatalf("removeParticipant: %d %v", st, out)
	}
	st, _, out := hreq(t, "DELETE", chatURL+"/messages/"+msg, map[string]string{"x-user-key": guest}, nil)
	if st != http.StatusForbidden {
		t.Fatalf("deleteMessage by a removed participant: %d %v, want 403", st, out)
	}
	if st, _, _ := hreq(t, "GET", chatURL+"/messages/"+msg, map[string]string{"x-user-key": owner}, nil); st != 200 {
		t.Fatalf("the message is gone: %d", st)
	}
}

// Finding 7: a deleted message is not replayed as message_created to a
// stream that reconnects with Last-Event-ID: 0.
func TestDeletedMessageIsNotReplayed(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	_, chatURL, _ := codeBot(t, a, silentBot)
	_, key := chatUser(t, chatURL)
	conv := chatConversation(t, chatURL, key)
	msg := chatMessage(t, chatURL, key, conv, "a secret I regret")
	chatMessage(t, chatURL, key, conv, "still here")
	if st, _, out := hreq(t, "DELETE", chatURL+"/messages/"+msg, map[string]string{"x-user-key": key}, nil); st/100 != 2 {
		t.Fatalf("deleteMessage: %d %v", st, out)
	}
	st, lines, stop := listen(t, chatURL, key, conv, "0")
	defer stop()
	if st != 200 {
		t.Fatalf("listen: %d", st)
	}
	var got []string
	deadline := time.After(3 * time.Second)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			if strings.HasPrefix(l, "data: {") {
				got = append(got, l)
				if strings.Contains(l, "still here") && strings.Contains(l, "message_deleted") {
					done = true
				}
			}
			if len(got) >= 3 {
				done = true
			}
		case <-deadline:
			done = true
		}
	}
	for _, l := range got {
		if strings.Contains(l, "a secret I regret") {
			t.Fatalf("deleted content replayed: %s", l)
		}
	}
	if len(got) == 0 {
		t.Fatal("nothing replayed")
	}
}

// Finding 6: a stream opened before an encryption-key rotation ends at the
// rotation.
func TestKeyRotationEndsStreams(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		bot, chatURL, _ := codeBot(t, a, silentBot)
		ws := defaultWorkspace(t, a)
		_, key := chatUser(t, chatURL)
		conv := chatConversation(t, chatURL, key)
		st, lines, stop := listen(t, chatURL, key, conv, "")
		defer stop()
		if st != 200 {
			t.Fatalf("listen: %d", st)
		}
		time.Sleep(200 * time.Millisecond)
		res := adminCall(t, a, ws, "PUT", "/v1/admin/bots/"+bot.ID, `{"integrations":{"chat":{"configuration":{"encryptionKey":"rotated-key-0123456789"}}}}`)
		if res.status != 200 {
			t.Fatalf("rotate: %d %v", res.status, res.body)
		}
		deadline := time.After(3 * time.Second)
		for {
			select {
			case _, ok := <-lines:
				if !ok {
					return // the stream ended
				}
			case <-deadline:
				t.Fatal("the stream authenticated with the old key is still open 3 s after the rotation")
			}
		}
	})
}

// Finding 5: viewers and billing members do not read secrets of the
// integrations' configuration; developers do.
func TestViewerCannotReadEncryptionKey(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	bot, _, key := codeBot(t, a, silentBot)
	ws := defaultWorkspace(t, a)
	for _, role := range []string{"viewer", "billing", "developer"} {
		email := role + "@example.com"
		if r := adminCall(t, a, ws, "POST", "/v1/admin/workspace-members", fmt.Sprintf(`{"email":%q,"role":%q}`, email, role)); r.status != 200 {
			t.Fatalf("add %s: %d %v", role, r.status, r.body)
		}
		_, token, err := a.Accounts().IssueTokenForEmail(context.Background(), email, role)
		if err != nil {
			t.Fatal(err)
		}
		st, _, out := hreq(t, "GET", a.URL+"/v1/admin/bots/"+bot.ID, map[string]string{"Authorization": "Bearer " + token, "x-workspace-id": ws}, nil)
		if st != 200 {
			t.Fatalf("%s getBot: %d %v", role, st, out)
		}
		raw, _ := json.Marshal(out)
		leaks := strings.Contains(string(raw), key)
		cfg := out["bot"].(map[string]any)["integrations"].(map[string]any)["chat"].(map[string]any)["configuration"].(map[string]any)
		if role == "developer" {
			if cfg["encryptionKey"] != key {
				t.Fatalf("developer does not see the encryption key: %v", cfg)
			}
		} else if leaks {
			t.Fatalf("%s reads the encryption key: %v", role, cfg)
		}
	}
}

// Finding 11: checkHandleAvailability and listPublicWorkspaces are served;
// hosted-only operations answer 405 MethodNotFound with the standard body.
func TestAdminRoutingOfClientOperations(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	if r := adminCall(t, a, ws, "PUT", "/v1/admin/workspaces/handle-availability", `{"handle":"free-handle"}`); r.status != 200 || r.body["available"] != true {
		t.Fatalf("checkHandleAvailability: %d %v", r.status, r.body)
	}
	if r := adminCall(t, a, ws, "PUT", "/v1/admin/workspaces/"+ws, `{"handle":"taken-handle"}`); r.status != 200 {
		t.Fatalf("updateWorkspace: %d %v", r.status, r.body)
	}
	if r := adminCall(t, a, ws, "PUT", "/v1/admin/workspaces/handle-availability", `{"handle":"taken-handle"}`); r.status != 200 || r.body["available"] != false {
		t.Fatalf("checkHandleAvailability of a taken handle: %d %v", r.status, r.body)
	}
	r := adminCall(t, a, ws, "GET", "/v1/admin/workspaces/public", "")
	if r.status != 200 {
		t.Fatalf("listPublicWorkspaces: %d %v", r.status, r.body)
	}
	if l, _ := r.body["workspaces"].([]any); r.body["workspaces"] == nil || len(l) != 0 {
		t.Fatalf("listPublicWorkspaces: no workspace is public by default: %v", r.body)
	}
	adminCall(t, a, ws, "PUT", "/v1/admin/workspaces/"+ws, `{"isPublic":true}`)
	if r := adminCall(t, a, ws, "GET", "/v1/admin/workspaces/public", ""); len(r.body["workspaces"].([]any)) != 1 {
		t.Fatalf("listPublicWorkspaces after marking one public: %v", r.body)
	}
	if r := adminCall(t, a, ws, "GET", "/v1/admin/workspaces/"+ws+"/public", ""); r.status != 200 {
		t.Fatalf("getPublicWorkspace: %d %v", r.status, r.body)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/admin/workspaces/" + ws + "/billing/invoices"},
		{"GET", "/v1/admin/workspaces/" + ws + "/quotas"},
		{"POST", "/v1/admin/integrations/request-verification"},
		{"GET", "/v2/billing/plans"},
		{"GET", "/v2/usage/workspace-usage"},
	} {
		r := adminCall(t, a, ws, c.method, c.path, "{}")
		if r.status != 405 || r.body["type"] != "MethodNotFound" || r.body["code"] != float64(405) || r.body["id"] == nil {
			t.Fatalf("%s %s: %d %v, want 405 MethodNotFound", c.method, c.path, r.status, r.body)
		}
	}
}

// Finding 4: one user cannot open streams beyond the cap (429 with
// Retry-After), and idle streams hold no database connection.
func TestStreamCapsAndIdleStreamsHoldNoConnection(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	_, chatURL, _ := codeBot(t, a, silentBot)
	_, key := chatUser(t, chatURL)
	conv := chatConversation(t, chatURL, key)
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	refused := 0
	for i := 0; i < 60; i++ {
		st, _, stop := listen(t, chatURL, key, conv, "")
		stops = append(stops, stop)
		if st == http.StatusTooManyRequests {
			refused++
		} else if st != 200 {
			t.Fatalf("listen %d: %d", i, st)
		}
	}
	if refused == 0 {
		t.Fatal("60 streams of one user on one conversation: all accepted")
	}
	req, _ := http.NewRequest("GET", chatURL+"/conversations/"+conv+"/listen", nil)
	req.Header.Set("x-user-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}

	// Many users each opening a stream at once: the pool stays capped and
	// idle streams hold no connection.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 150; i++ {
		_, k := chatUser(t, chatURL)
		c := chatConversation(t, chatURL, k)
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, _, stop := listen(t, chatURL, k, c, "")
			mu.Lock()
			stops = append(stops, stop)
			mu.Unlock()
			if st != 200 {
				t.Errorf("listen: %d", st)
			}
		}()
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	stats := a.Store().(interface{ SQL() *sql.DB }).SQL().Stats()
	t.Logf("db pool with ~170 idle streams: open %d, in use %d, max open %d", stats.OpenConnections, stats.InUse, stats.MaxOpenConnections)
	if stats.MaxOpenConnections == 0 || stats.OpenConnections > stats.MaxOpenConnections {
		t.Fatalf("the SQLite pool is not capped: %+v", stats)
	}
	if stats.InUse > 1 { // the group committer's pinned connection
		t.Fatalf("idle streams hold %d database connections", stats.InUse)
	}
}

// Finding 3: a client that sends its body slowly is cut off, and /healthz
// keeps answering meanwhile.
func TestSlowBodyIsCutOff(t *testing.T) {
	cfg := testapp.Config(t, "")
	cfg.BodyReadTimeout = time.Second
	cfg.MaxConnections = 64
	a := testapp.Start(t, cfg)
	host := strings.TrimPrefix(a.URL, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 40; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /v1/admin/bots HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	}
	start := time.Now()
	closed := make(chan time.Duration, len(conns))
	for _, c := range conns {
		go func(c net.Conn) {
			// One byte every 200 ms until the server hangs up.
			buf := make([]byte, 512)
			for time.Since(start) < 10*time.Second {
				if _, err := c.Write([]byte(" ")); err != nil {
					closed <- time.Since(start)
					return
				}
				c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := c.Read(buf); err != nil && !isTimeout(err) {
					closed <- time.Since(start)
					return
				}
			}
			closed <- -1
		}(c)
	}
	for i := 0; i < 5; i++ {
		hc := &http.Client{Timeout: 2 * time.Second}
		res, err := hc.Get(a.URL + "/healthz")
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("healthz while slow clients are connected: %v", err)
		}
		res.Body.Close()
		time.Sleep(100 * time.Millisecond)
	}
	var worst time.Duration
	for range conns {
		d := <-closed
		if d < 0 {
			t.Fatal("a slow-body client was still connected after 10 s")
		}
		worst = max(worst, d)
	}
	t.Logf("40 slow-body clients cut off within %v (body read timeout 1 s)", worst)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Rate limits: one user above its rate gets 429 with Retry-After; another
// user of the same bot is not affected.
func TestChatRateLimitPerUser(t *testing.T) {
	cfg := testapp.Config(t, "")
	cfg.RatePerUser = 5 // bursts of 10
	a := testapp.Start(t, cfg)
	_, chatURL, _ := codeBot(t, a, silentBot)
	_, noisy := chatUser(t, chatURL)
	_, quiet := chatUser(t, chatURL)
	limited := 0
	var retry string
	for i := 0; i < 40; i++ {
		st, h, _ := hreq(t, "GET", chatURL+"/users/me", map[string]string{"x-user-key": noisy}, nil)
		if st == http.StatusTooManyRequests {
			limited++
			retry = h.Get("Retry-After")
		}
	}
	if limited == 0 || retry == "" {
		t.Fatalf("40 requests at once with a rate of 5/s: %d limited, Retry-After %q", limited, retry)
	}
	if st, _, out := hreq(t, "GET", chatURL+"/users/me", map[string]string{"x-user-key": quiet}, nil); st != 200 {
		t.Fatalf("another user: %d %v", st, out)
	}
}

// Finding 11, every operation: each Admin (and billing) path of
// @botpress/client 1.45.0 answers; an error has the standard body with its
// status as code; none falls into another operation's "workspace not
// found".
func TestEveryClientAdminPathAnswers(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	data, err := os.ReadFile("testdata/client-1.45.0-admin-operations.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, "\t")
		op, method, path := f[1], f[2], f[3]
		path = strings.NewReplacer("{id}", "nope", "{botId}", "nope", "{integrationId}", "nope", "{versionId}", "nope",
			"{issueId}", "nope", "{key}", "k", "{name}", "n", "{version}", "1.0.0", "{platform}", "node",
			"{planId}", "p", "{addonId}", "a", "{invoiceId}", "i").Replace(path)
		body := ""
		if method != "GET" && method != "DELETE" {
			body = "{}"
		}
		r := adminCall(t, a, ws, method, path, body)
		if r.status >= 400 {
			if r.body["id"] == nil || r.body["type"] == nil || r.body["message"] == nil || r.body["code"] != float64(r.status) {
				t.Errorf("%s (%s %s): %d without the standard error body: %v", op, method, path, r.status, r.body)
			}
			if msg, _ := r.body["message"].(string); r.status == 404 && strings.Contains(msg, "workspace not found") && !strings.Contains(path, "/workspaces/nope") {
				t.Errorf("%s (%s %s): misrouted: %v", op, method, path, r.body)
			}
		}
	}
	for _, o := range []string{"listWorkspaceInvoices", "getUpcomingInvoice", "listWorkspaceQuotas", "getUsage", "requestIntegrationVerification", "listPlans", "getSubscription"} {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, "\t")
			if len(f) < 4 || f[1] != o {
				continue
			}
			path := strings.NewReplacer("{id}", ws, "{planId}", "p").Replace(f[3])
			if r := adminCall(t, a, ws, f[2], path, "{}"); r.status != 405 || r.body["type"] != "MethodNotFound" {
				t.Errorf("hosted-only %s: %d %v, want 405 MethodNotFound", o, r.status, r.body)
			}
		}
	}
}

// Finding 9: a JavaScript bot's turn that was cut short after sending a
// reply committed nothing: when it runs again after the restart, the
// conversation gets its reply once, not twice.
func TestInterruptedTurnCommitsNothing(t *testing.T) {
	const code = `bot.on.message('text', async ({ message, client }) => {
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'reply to ' + message.payload.text } })
  const until = Number(message.payload.text)
  while (Date.now() < until) {}
})`
	c := testapp.Config(t, "")
	first, err := app.Start(context.Background(), c, testapp.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	bot, chatURL, _ := codeBot(t, first, code)
	setMaxExecutionTime(t, first, bot.ID, 30)
	_, key := chatUser(t, chatURL)
	conv := chatConversation(t, chatURL, key)
	// The turn replies at once, then runs until this deadline: past the
	// shutdown's grace period (5 s), so the stop cuts it short.
	deadline := time.Now().Add(7 * time.Second)
	chatMessage(t, chatURL, key, conv, fmt.Sprint(deadline.UnixMilli()))
	time.Sleep(time.Second)
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := first.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(deadline))
	second := testapp.Start(t, c)
	replies := func() int {
		ms, _, err := second.Store().Chat().ListMessages(context.Background(), bot.ID, conv, store.Page{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range ms {
			if m.UserID == bot.ID {
				n++
			}
		}
		return n
	}
	wait := time.Now().Add(10 * time.Second)
	for replies() == 0 && time.Now().Before(wait) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if n := replies(); n != 1 {
		t.Fatalf("replies after an interrupted turn ran again: %d, want 1", n)
	}
}

// The Runtime API is rate-limited per bot too (issue 12): a bot that calls
// past its rate gets 429 with Retry-After; another bot is not affected.
func TestRuntimeAPIRateLimitPerBot(t *testing.T) {
	cfg := testapp.Config(t, "")
	cfg.RatePerBot = 5 // bursts of 10
	a := testapp.Start(t, cfg)
	noisyBot, _, _ := codeBot(t, a, silentBot)
	quietBot, _, _ := codeBot(t, a, silentBot)
	noisy, quiet := noisyBot.ID, quietBot.ID
	headers := func(botID string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + a.AdminToken, "x-bot-id": botID}
	}
	limited := 0
	var retry string
	for i := 0; i < 40; i++ {
		st, h, _ := hreq(t, "GET", a.URL+"/v1/chat/conversations", headers(noisy), nil)
		if st == http.StatusTooManyRequests {
			limited++
			retry = h.Get("Retry-After")
		}
	}
	if limited == 0 || retry == "" {
		t.Fatalf("40 Runtime API calls at once with a rate of 5/s: %d limited, Retry-After %q", limited, retry)
	}
	if st, _, out := hreq(t, "GET", a.URL+"/v1/chat/conversations", headers(quiet), nil); st != 200 {
		t.Fatalf("another bot: %d %v", st, out)
	}
}
