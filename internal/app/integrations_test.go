package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// buildCompat builds tests/compat/sdkintegration's entry (integration.cjs
// or bot.cjs) with esbuild, as the Botpress CLI would, and returns the
// bundle's path.
func buildCompat(t *testing.T, entry string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), entry)
	testapp.RunNode(t, "sdkintegration/build.mjs", map[string]string{"ENTRY": entry, "OUT": out})
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIntegrations runs tests/compat/integrations.mjs on both engines: an
// integration built with the unchanged @botpress/sdk, managed with every
// integration operation of @botpress/client's Admin API, installed on an
// SDK bot and a sandbox JavaScript bot, reached through the Webhook
// interface, replying through its channel handler to a fake chat service
// on loopback.
func TestIntegrations(t *testing.T) {
	integration := buildCompat(t, "integration.cjs")
	sdkBot := buildCompat(t, "bot.cjs")
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		ctx := context.Background()
		ws := defaultWorkspace(t, a)
		var otherWS struct{ ID string }
		adminJSON(t, a, ws, "POST", "/v1/admin/workspaces", `{"name":"other"}`, &otherWS)
		viewerEmail := "integ-viewer@example.com"
		_, viewerToken, err := a.Accounts().IssueTokenForEmail(ctx, viewerEmail, "viewer")
		if err != nil {
			t.Fatal(err)
		}
		adminJSON(t, a, ws, "POST", "/v1/admin/workspace-members", `{"email":"`+viewerEmail+`","role":"viewer"}`, nil)
		out := testapp.RunNode(t, "integrations.mjs", map[string]string{
			"API_URL": a.URL, "TOKEN": a.AdminToken, "WORKSPACE_ID": ws, "OTHER_WORKSPACE_ID": otherWS.ID,
			"VIEWER_TOKEN": viewerToken, "INTEGRATION_BUNDLE": integration, "SDKBOT_BUNDLE": sdkBot,
		})
		t.Log(out)
	})
}

// TestWebhookBodyLimit: a webhook body above 100 MB is refused with 413
// and the standard error body before it is read; the refusal does not
// depend on the webhook id being known.
func TestWebhookBodyLimit(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	u, err := url.Parse(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	const size = 100<<20 + 1
	fmt.Fprintf(conn, "POST /0b4c3d2e-1f00-4a00-8000-000000000001/updates HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", u.Host, size)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		ID      string `json:"id"`
		Code    int    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 413 || body.Code != 413 || body.Type != "PayloadTooLarge" || body.ID == "" {
		t.Fatalf("oversized webhook body: %d %+v, want 413 PayloadTooLarge", resp.StatusCode, body)
	}
}

// TestSlackIntegration runs tests/compat/slack.mjs on both engines: the
// Slack integration (integrations/slack) installed by its install.mjs,
// Slack's signed requests through the Webhook interface, a sandbox bot's
// replies reaching a Slack Web API on loopback.
func TestSlackIntegration(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		ws := defaultWorkspace(t, a)
		out := testapp.RunNode(t, "slack.mjs", map[string]string{"API_URL": a.URL, "TOKEN": a.AdminToken, "WORKSPACE_ID": ws})
		t.Log(out)
	})
}
