package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/syncbuf"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/web"
)

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return request(t, "GET", url, "", header...)
}

// request sends body (JSON, unless empty) with the header's name, value
// pairs, and returns the response with its body read.
func request(t *testing.T, method, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestMetricsScrapedAndParsed drives requests and a failing turn, then
// scrapes /metrics on its own listener and parses it with the Prometheus
// text parser.
func TestMetricsScrapedAndParsed(t *testing.T) {
	cfg := testapp.Config(t, "")
	cfg.MetricsAddr = "127.0.0.1:0"
	cfg.FoldWithin = 0 // the turn waits in the queue (a folded one runs at once)
	a := testapp.Start(t, cfg)
	ws := defaultWorkspace(t, a)
	adminCall(t, a, ws, "GET", "/v1/admin/bots", "")
	adminCall(t, a, ws, "GET", "/v1/admin/bots/no-such-bot", "")
	_, url, _ := codeBot(t, a, `bot.on.message('text', async () => { throw new Error('boom') })`)
	c, conv, user := chatSession(t, url)
	c.say(t, conv, "hi")
	c.botTexts(t, conv, user, 1) // the fallback: the failed turn ran

	if res, _ := get(t, a.URL+"/metrics"); res.StatusCode == 200 {
		t.Fatal("/metrics is served on the main listener too when --metrics-addr is set")
	}
	var families map[string]*dto.MetricFamily
	deadline := time.Now().Add(5 * time.Second)
	for {
		families = scrape(t, a.MetricsURL())
		if counter(families, "parley_turns_total", map[string]string{"outcome": "failed"}) >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []struct {
		family string
		labels map[string]string
	}{
		{"parley_http_requests_total", map[string]string{"route": "GET /v1/admin/bots", "method": "GET", "code": "200"}},
		{"parley_http_requests_total", map[string]string{"route": "GET /v1/admin/bots/{id}", "method": "GET", "code": "404"}},
		{"parley_http_requests_total", map[string]string{"route": "POST /chat/{wh}/messages", "method": "POST", "code": "201"}},
		{"parley_turns_total", map[string]string{"outcome": "failed"}},
		{"parley_commits_total", map[string]string{"outcome": "ok"}},
		{"parley_commit_transactions_total", nil},
		{"parley_commit_duration_seconds", nil},
		{"parley_turn_wait_seconds", nil},
		{"parley_user_messages_total", map[string]string{"commit": "off"}}, // FoldWithin 0
	} {
		if counter(families, want.family, want.labels) < 1 {
			t.Errorf("%s%v: not counted", want.family, want.labels)
		}
	}
	for _, name := range []string{"parley_http_request_duration_seconds", "parley_turn_duration_seconds", "parley_turn_queue_depth",
		"parley_turn_queue_delay_seconds", "parley_door_waiting", "parley_sse_streams_open", "parley_db_open_connections", "parley_db_in_use_connections", "parley_db_wait_count_total", "go_goroutines"} {
		if families[name] == nil {
			t.Errorf("%s: missing", name)
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && strings.Contains(l.GetValue(), "no-such-bot") {
					t.Errorf("%s has a raw path as its route label: %q", name, l.GetValue())
				}
			}
		}
	}
}

// counter is the value of the family's metric whose labels include want
// (a counter, or a histogram's count).
// scrape reads the metrics at url with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, body := get(t, url)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v\n%s", url, err, body)
	}
	return families
}

func counter(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		if m.Counter != nil {
			return m.GetCounter().GetValue()
		}
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// TestOpenAPIDocument checks that GET /openapi.json is valid OpenAPI 3
// and lists every route registered on the server's muxes (found in the
// source: every Handle/HandleFunc with a method pattern, plus web.Routes).
func TestOpenAPIDocument(t *testing.T) {
	a := testapp.Start(t, testapp.Config(t, ""))
	res, body := get(t, a.URL+"/openapi.json")
	if res.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d", res.StatusCode)
	}
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("not valid OpenAPI 3: %v", err)
	}
	if doc.Servers[0].URL != a.URL {
		t.Errorf("servers = %v, want %s", doc.Servers[0].URL, a.URL)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+pathParam.ReplaceAllString(path, "{}")] = true
		}
	}
	routes := registeredRoutes(t)
	if len(routes) < 80 {
		t.Fatalf("found only %d routes in the source: %v", len(routes), routes)
	}
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		if strings.Contains(path, "...}") {
			continue // GET /chat/{wh}/conversations/{rest...}: listen, for ids spanning segments
		}
		if !documented[method+" "+normalizePath(path)] {
			t.Errorf("route %q is not in openapi.json", r)
		}
	}
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// normalizePath maps a ServeMux pattern's path to the form of an OpenAPI
// path with its parameters written {}: {$} (exact match) dropped, a
// subtree pattern ending in "/" given a parameter.
func normalizePath(p string) string {
	if strings.HasSuffix(p, "/{$}") {
		p = strings.TrimSuffix(p, "{$}")
	} else if strings.HasSuffix(p, "/") && p != "/" {
		p += "{}"
	}
	return pathParam.ReplaceAllString(p, "{}")
}

// registeredRoutes reads the method patterns registered with Handle or
// HandleFunc in the files that build the server's muxes; string constants
// of the same file (const p = "/chat/{wh}") are resolved.
func registeredRoutes(t *testing.T) []string {
	root := testapp.RepoRoot()
	files := []string{"internal/app/app.go", "internal/httpapi/admin/admin.go", "internal/httpapi/admin/support.go", "internal/httpapi/chat/handler.go",
		"internal/httpapi/webchat/handler.go", "internal/httpapi/runtimeapi/handler.go",
		"internal/httpapi/files/handler.go", "internal/httpapi/tables/handler.go", "internal/httpapi/integrations/handler.go"}
	var out []string
	for _, f := range files {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, filepath.Join(root, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		consts := map[string]string{}
		specs := map[string]ast.Expr{}
		ast.Inspect(file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						specs[name.Name] = vs.Values[i]
					}
				}
			}
			return true
		})
		var eval func(e ast.Expr) (string, bool)
		eval = func(e ast.Expr) (string, bool) {
			switch e := e.(type) {
			case *ast.BasicLit:
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			case *ast.Ident:
				if s, ok := consts[e.Name]; ok {
					return s, true
				}
				if v, ok := specs[e.Name]; ok {
					s, ok := eval(v) // a string constant built from others
					if ok {
						consts[e.Name] = s
					}
					return s, ok
				}
				return "", false
			case *ast.BinaryExpr:
				l, ok1 := eval(e.X)
				r, ok2 := eval(e.Y)
				return l + r, ok1 && ok2
			}
			return "", false
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			// mux.Handle, mux.HandleFunc, or a file's own route helper
			// (route(pattern, handler) in the Runtime API).
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			case *ast.Ident:
				name = fn.Name
			}
			if name != "Handle" && name != "HandleFunc" && name != "route" {
				return true
			}
			if p, ok := eval(call.Args[0]); ok && strings.Contains(p, " ") {
				out = append(out, p)
			}
			return true
		})
	}
	return append(out, web.Routes...)
}

// TestRequestIDs: every response has an X-Request-Id (a sane incoming one
// kept, others replaced), error bodies carry it as requestId, and every
// log line of the request names it.
func TestRequestIDs(t *testing.T) {
	logs := &syncbuf.Buffer{}
	a, err := app.Start(context.Background(), testapp.Config(t, ""), slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })

	res, _ := get(t, a.URL+"/healthz")
	generated := res.Header.Get("X-Request-Id")
	if !strings.HasPrefix(generated, "req_") {
		t.Fatalf("generated X-Request-Id = %q", generated)
	}
	res, body := get(t, a.URL+"/v1/admin/bots", "Authorization", "Bearer wrong", "X-Request-Id", "client-id-42")
	if got := res.Header.Get("X-Request-Id"); got != "client-id-42" {
		t.Fatalf("a sane incoming id was not kept: %q", got)
	}
	var e map[string]any
	if err := json.Unmarshal(body, &e); err != nil || res.StatusCode != 401 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if e["requestId"] != "client-id-42" || e["id"] == nil || e["type"] != "Unauthorized" {
		t.Fatalf("error body = %v, want the standard fields and requestId", e)
	}
	res, _ = get(t, a.URL+"/healthz", "X-Request-Id", "bad id\twith spaces and a very long tail"+strings.Repeat("x", 200))
	if got := res.Header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Fatalf("an insane incoming id was kept: %q", got)
	}
	// The access-log line of each request carries its id.
	for _, id := range []string{generated, "client-id-42"} {
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, `"request_id":"`+id+`"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no access-log line with request_id %s in:\n%s", id, logs.String())
		}
	}
}
