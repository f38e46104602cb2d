package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestDatabaseUnavailable: while PostgreSQL cannot be reached (its
// connections cut, nothing listening), the Admin and Chat APIs answer 503
// ServiceUnavailable with Retry-After, in the standard error body, not
// 500; once it is back, the same calls succeed.
func TestDatabaseUnavailable(t *testing.T) {
	a, proxy := behindProxy(t)
	ws := defaultWorkspace(t, a)
	_, chatURL, _ := codeBot(t, a, `bot.on.message('text', async () => {})`)
	c, conv, _ := chatSession(t, chatURL)

	do := func(method, url, body string, header ...string) (*http.Response, map[string]any) {
		t.Helper()
		res, b := request(t, method, url, body, header...)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return res, out
	}
	calls := []struct {
		name              string
		method, url, body string
		header            []string
	}{
		{"listBots", "GET", a.URL + "/v1/admin/bots", "", []string{"Authorization", "Bearer " + a.AdminToken, "x-workspace-id", ws}},
		{"createMessage", "POST", chatURL + "/messages", `{"conversationId":"` + conv + `","payload":{"type":"text","text":"hi"}}`, []string{"x-user-key", c.key}},
	}

	proxy.Cut()
	for _, call := range calls {
		res, body := do(call.method, call.url, call.body, call.header...)
		if res.StatusCode != http.StatusServiceUnavailable || body["type"] != "ServiceUnavailable" || body["code"] != float64(503) ||
			res.Header.Get("Retry-After") != "1" || body["id"] == nil || body["message"] == nil {
			t.Errorf("%s while the database is unreachable: %d %v (Retry-After %q), want 503 ServiceUnavailable with Retry-After 1",
				call.name, res.StatusCode, body, res.Header.Get("Retry-After"))
		}
	}

	proxy.Mend(t)
	for _, call := range calls {
		waitFor(t, call.name+" once the database is back", 15*time.Second, func() bool {
			res, _ := do(call.method, call.url, call.body, call.header...)
			return res.StatusCode/100 == 2
		})
	}
}

// TestDatabaseUnavailableToTheOfficialClient: the same outage as the
// official @botpress/client sees it (tests/compat/unavailable.mjs). Without
// retries it rejects with its UnknownError naming ServiceUnavailable and
// 503; with its retry option, a GET is retried after the Retry-After delay
// and succeeds once the database is back, which the test brings back only
// after the client's first retry was scheduled.
func TestDatabaseUnavailableToTheOfficialClient(t *testing.T) {
	a, proxy := behindProxy(t)
	ws := defaultWorkspace(t, a)
	codeBot(t, a, `bot.on.message('text', async () => {})`)

	marks := t.TempDir()
	proxy.Cut()
	node := testapp.StartNode(t, "unavailable.mjs", map[string]string{
		"API_URL": a.URL, "TOKEN": a.AdminToken, "WORKSPACE_ID": ws, "MARK_DIR": marks,
	})
	waitFor(t, "the client's first retry", time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(marks, "retrying"))
		return err == nil || node.Exited()
	})
	proxy.Mend(t)
	t.Log(node.Wait())
}

// behindProxy starts a server on PostgreSQL reached through a loopback
// proxy the test can cut and mend.
func behindProxy(t *testing.T) (*app.App, *testdb.Proxy) {
	t.Helper()
	u, proxy := testdb.PostgresBehindProxy(t)
	return testapp.Start(t, testapp.Config(t, u)), proxy
}
