package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// engines runs a test on SQLite and on PostgreSQL.
func engines(t *testing.T, fn func(t *testing.T, cfg func() app.Config)) {
	sqliteOnly(t, fn)
	t.Run("postgres", func(t *testing.T) {
		url := testdb.PostgresURL(t)
		dir := t.TempDir()
		fn(t, func() app.Config { c := testapp.Config(t, url); c.DataDir = dir; return c })
	})
}

// sqliteOnly is engines' SQLite case alone.
func sqliteOnly(t *testing.T, fn func(t *testing.T, cfg func() app.Config)) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		fn(t, func() app.Config { c := testapp.Config(t, ""); c.DataDir = dir; return c })
	})
}

// adminCaller is the bootstrap administrator in a's default workspace.
func adminCaller(t *testing.T, a *app.App) *administration.Caller {
	t.Helper()
	ctx := context.Background()
	p, err := a.Accounts().Authenticate(ctx, a.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Accounts().InWorkspace(ctx, p, defaultWorkspace(t, a))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func defaultWorkspace(t *testing.T, a *app.App, token ...string) string {
	t.Helper()
	ctx := context.Background()
	tok := a.AdminToken
	if len(token) > 0 {
		tok = token[0]
	}
	p, err := a.Accounts().Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := a.Workspaces().List(ctx, p, "", store.Page{})
	if err != nil || len(ws) != 1 {
		t.Fatalf("workspaces = %v, %v", ws, err)
	}
	return ws[0].ID
}

// TestAdminCompatibility drives the Admin API with @botpress/client 1.45.0.
func TestAdminCompatibility(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a := testapp.Start(t, cfg())
		const viewerEmail = "viewer@example.com"
		_, viewerToken, err := a.Accounts().IssueTokenForEmail(context.Background(), viewerEmail, "viewer")
		if err != nil {
			t.Fatal(err)
		}
		out := testapp.RunNode(t, "admin.mjs", map[string]string{
			"API_URL": a.URL, "TOKEN": a.AdminToken, "WORKSPACE_ID": defaultWorkspace(t, a),
			"VIEWER_TOKEN": viewerToken, "VIEWER_EMAIL": viewerEmail,
		})
		t.Log(out)
	})
}

// TestRestartKeepsDataAndDoesNotBootstrapAgain restarts a server on the same
// store and checks that data survive and no second owner, workspace or token
// appears.
func TestRestartKeepsDataAndDoesNotBootstrapAgain(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		ctx := context.Background()
		c := cfg()
		first, err := app.Start(ctx, c, testapp.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		token := first.AdminToken
		if token == "" {
			t.Fatal("first start did not bootstrap")
		}
		ws := defaultWorkspace(t, first)
		if c.DatabaseURL == "" {
			info, err := os.Stat(filepath.Join(c.DataDir, "admin-token"))
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("admin-token file: %v, mode %v", err, info.Mode())
			}
		}
		req, _ := http.NewRequest("POST", first.URL+"/v1/admin/bots", strings.NewReader(`{"name":"survivor","tags":{"k":"v"}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("x-workspace-id", ws)
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("create bot: %v %v", err, res.Status)
		}
		var created struct{ Bot struct{ ID string } }
		json.NewDecoder(res.Body).Decode(&created)
		res.Body.Close()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := first.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}

		second := testapp.Start(t, c)
		if second.AdminToken != "" {
			t.Fatal("second start bootstrapped again")
		}
		if got := defaultWorkspace(t, second, token); got != ws {
			t.Fatalf("workspace changed across restart: %s != %s", got, ws)
		}
		n, err := second.Store().Accounts().Count(ctx)
		if err != nil || n != 1 {
			t.Fatalf("accounts after restart = %d, %v", n, err)
		}
		req, _ = http.NewRequest("GET", second.URL+"/v1/admin/bots/"+created.Bot.ID, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("x-workspace-id", ws)
		res, err = http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("get bot after restart: %v %v", err, res.Status)
		}
		var got struct {
			Bot struct {
				Name string
				Tags map[string]string
			}
		}
		json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if got.Bot.Name != "survivor" || got.Bot.Tags["k"] != "v" {
			t.Fatalf("bot after restart = %+v", got.Bot)
		}
	})
}

// TestOneServerPerSQLiteFile: a second server on the data directory of a
// running one (SQLite) refuses to start, saying why, and starts once the
// first stopped. On PostgreSQL several servers share a database.
func TestOneServerPerSQLiteFile(t *testing.T) {
	ctx := context.Background()
	c := testapp.Config(t, "")
	first, err := app.Start(ctx, c, testapp.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if second, err := app.Start(ctx, c, testapp.Logger(t)); err == nil {
		second.Shutdown(ctx)
		t.Fatal("a second server started on the same SQLite file")
	} else if !strings.Contains(err.Error(), "in use by another Parley server") {
		t.Fatalf("second server: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := first.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	testapp.Start(t, c) // stopped by the test's cleanup
}

func TestAdminTokenFromEnvironment(t *testing.T) {
	c := testapp.Config(t, "")
	c.AdminToken = "my-chosen-admin-token"
	a := testapp.Start(t, c)
	if _, err := a.Accounts().Authenticate(context.Background(), "my-chosen-admin-token"); err != nil {
		t.Fatalf("chosen token refused: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir, "admin-token")); !os.IsNotExist(err) {
		t.Fatalf("a chosen token must not be written to disk: %v", err)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(a.URL + path)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, res.Status)
		}
		res.Body.Close()
	}
	// The node's id, start time and scheduler leadership (the only node
	// leads at once: the lease is free).
	var ready struct {
		Node struct {
			ID                string `json:"id"`
			StartedAt         string `json:"started_at"`
			HeldConversations *int   `json:"held_conversations"`
			Scheduler         struct {
				Leader bool   `json:"leader"`
				Since  string `json:"since"`
			} `json:"scheduler"`
		} `json:"node"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := http.Get(a.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&ready)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ready.Node.Scheduler.Leader || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := ready.Node
	if !strings.HasPrefix(n.ID, "node-") || n.HeldConversations == nil || !n.Scheduler.Leader {
		t.Fatalf("readyz node = %+v", n)
	}
	for _, ts := range []string{n.StartedAt, n.Scheduler.Since} {
		if at, err := time.Parse(time.RFC3339Nano, ts); err != nil || time.Since(at) > time.Minute {
			t.Fatalf("readyz times %q: %v", ts, err)
		}
	}
}

// TestErrorBodies checks status and standard body for bad requests over HTTP.
func TestErrorBodies(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	ws := defaultWorkspace(t, a)
	tests := []struct {
		name, method, path, body, token, workspace string
		status                                     int
		typ, mention                               string
	}{
		{"no token", "GET", "/v1/admin/bots", "", "", ws, 401, "Unauthorized", "token"},
		{"bad token", "GET", "/v1/admin/bots", "", "nope", ws, 401, "Unauthorized", "token"},
		{"no workspace", "GET", "/v1/admin/bots", "", a.AdminToken, "", 401, "Unauthorized", "x-workspace-id"},
		{"malformed json", "POST", "/v1/admin/bots", `{"name":`, a.AdminToken, ws, 400, "InvalidPayload", "JSON"},
		{"wrong type", "POST", "/v1/admin/bots", `{"tags":{"a":1}}`, a.AdminToken, ws, 400, "InvalidPayload", "tags"},
		{"unknown property", "POST", "/v1/admin/bots", `{"colour":"red"}`, a.AdminToken, ws, 400, "InvalidPayload", "colour"},
		{"not an object", "POST", "/v1/admin/bots", `[1]`, a.AdminToken, ws, 400, "InvalidPayload", "object"},
		{"float execution time", "POST", "/v1/admin/bots", `{"maxExecutionTime":1.5}`, a.AdminToken, ws, 400, "InvalidPayload", "maxExecutionTime"},
		{"unknown bot", "GET", "/v1/admin/bots/nope", "", a.AdminToken, ws, 404, "ResourceNotFound", "bot"},
		{"unknown route", "GET", "/v1/admin/nothing", "", a.AdminToken, ws, 405, "MethodNotFound", "nothing"},
		{"bad page size", "GET", "/v1/admin/bots?pageSize=1000", "", a.AdminToken, ws, 400, "InvalidQuery", "pageSize"},
		{"bad next token", "GET", "/v1/admin/bots?nextToken=not-a-token", "", a.AdminToken, ws, 400, "InvalidQuery", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, a.URL+tt.path, strings.NewReader(tt.body))
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.workspace != "" {
				req.Header.Set("x-workspace-id", tt.workspace)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status || body["type"] != tt.typ || body["code"] != float64(tt.status) {
				t.Fatalf("got %d %v, want %d %s", res.StatusCode, body, tt.status, tt.typ)
			}
			if id, _ := body["id"].(string); !strings.HasPrefix(id, "err_") {
				t.Fatalf("error id %q", body["id"])
			}
			if msg, _ := body["message"].(string); !strings.Contains(msg, tt.mention) {
				t.Fatalf("message %q does not mention %q", msg, tt.mention)
			}
		})
	}
	// Nothing was stored by the failed creates.
	p, _ := a.Accounts().Authenticate(context.Background(), a.AdminToken)
	c, _ := a.Accounts().InWorkspace(context.Background(), p, ws)
	bots, _, err := a.Bots().List(context.Background(), c, store.BotFilter{}, store.Page{})
	if err != nil || len(bots) != 0 {
		t.Fatalf("bots after failed creates: %d %v", len(bots), err)
	}
}

// TestGracefulShutdownFinishesInFlightRequests starts a request whose body
// is still arriving, shuts the server down meanwhile, and checks that the
// request completes and its bot is stored.
func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	ctx := context.Background()
	c := testapp.Config(t, "")
	a, err := app.Start(ctx, c, testapp.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ws := defaultWorkspace(t, a)
	token := a.AdminToken
	body, writer := io.Pipe()
	req, _ := http.NewRequest("POST", a.URL+"/v1/admin/bots", body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("x-workspace-id", ws)
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{0, err}
			return
		}
		res.Body.Close()
		done <- result{res.StatusCode, nil}
	}()
	writer.Write([]byte(`{"name":"in-fli`))
	time.Sleep(100 * time.Millisecond) // the handler is now reading the body
	stopped := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		stopped <- a.Shutdown(sctx)
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-stopped:
		t.Fatalf("shutdown returned before the in-flight request finished: %v", err)
	default:
	}
	writer.Write([]byte(`ght"}`))
	writer.Close()
	if r := <-done; r.err != nil || r.status != 200 {
		t.Fatalf("in-flight request: %d %v", r.status, r.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	again := testapp.Start(t, c)
	p, _ := again.Accounts().Authenticate(ctx, token)
	caller, _ := again.Accounts().InWorkspace(ctx, p, ws)
	bots, _, err := again.Bots().List(ctx, caller, store.BotFilter{}, store.Page{})
	if err != nil || len(bots) != 1 || bots[0].Name != "in-flight" {
		t.Fatalf("bots after restart: %v %v", bots, err)
	}
}
