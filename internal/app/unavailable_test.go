package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestDatabaseUnavailable: while PostgreSQL cannot be reached (its
// connections cut, nothing listening), the Admin and Chat APIs answer 503
// ServiceUnavailable with Retry-After, in the standard error body, not
// 500; once it is back, the same calls succeed.
func TestDatabaseUnavailable(t *testing.T) {
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testdb.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	a := testapp.Start(t, testapp.Config(t, u.String()))
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
