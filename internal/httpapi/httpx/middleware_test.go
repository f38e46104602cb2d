package httpx

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/parley-bots/parley/internal/testutil/syncbuf"
)

// TestAccessLogCarriesTheRequestID: every line a request logs (the access
// line, and those of the context's Logger, from any goroutine of the
// request) carries its id, the one answered in X-Request-Id, whatever the
// level the access line is dropped at.
func TestAccessLogCarriesTheRequestID(t *testing.T) {
	for _, tc := range []struct {
		name       string
		level      slog.Level
		incoming   string
		wantAccess bool
	}{
		{"info, a new id", slog.LevelInfo, "", true},
		{"info, the caller's id", slog.LevelInfo, "trace-42", true},
		{"warn, no access line", slog.LevelWarn, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.level}))
			h := AccessLog(log, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var wg sync.WaitGroup
				for range 4 { // goroutines of the request racing for its logger
					wg.Add(1)
					go func() {
						defer wg.Done()
						Logger(r.Context()).Warn("inside", "from", "goroutine")
					}()
				}
				wg.Wait()
				if RequestID(r.Context()) == "" {
					t.Error("no request id in the context")
				}
				w.WriteHeader(http.StatusTeapot)
			}))
			req := httptest.NewRequest("GET", "/x", nil)
			if tc.incoming != "" {
				req.Header.Set(RequestIDHeader, tc.incoming)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			id := rec.Header().Get(RequestIDHeader)
			if id == "" || (tc.incoming != "" && id != tc.incoming) || (tc.incoming == "" && (!strings.HasPrefix(id, "req_") || len(id) != len("req_")+24 || !saneRequestID(id))) {
				t.Fatalf("X-Request-Id = %q (sent %q)", id, tc.incoming)
			}
			inside, access := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if rec["request_id"] != id {
					t.Errorf("line without the request's id %s: %s", id, line)
				}
				switch rec["msg"] {
				case "inside":
					inside++
				case "request":
					access++
					if rec["status"] != float64(http.StatusTeapot) {
						t.Errorf("access line status: %s", line)
					}
				}
			}
			if inside != 4 || (access == 1) != tc.wantAccess || access > 1 {
				t.Fatalf("%d lines of the handler, %d access lines (want one: %v):\n%s", inside, access, tc.wantAccess, buf.String())
			}
		})
	}
}

// BenchmarkAccessLog: a request through AccessLog at the level parley-bench
// runs at (warn: no access line), its handler logging nothing.
func BenchmarkAccessLog(b *testing.B) {
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := AccessLog(log, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	req := httptest.NewRequest("POST", "/chat/x/messages", nil)
	rec := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(rec, req)
	}
}
