package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/llm"
)

// serve answers every request with status and body, checking the key.
func serve(t *testing.T, status int, body string, delay time.Duration) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "application/json" || r.Method != "POST" {
			http.Error(w, "bad request headers", http.StatusUnauthorized)
			return
		}
		time.Sleep(delay)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestEmbed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		delay   time.Duration
		want    string // vectors' first components, or the error's text
		wantErr bool
	}{
		{name: "in order", status: 200, body: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3,4]}]}`, want: "1 3"},
		{name: "reordered by index", status: 200, body: `{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}`, want: "1 3"},
		{name: "no index", status: 200, body: `{"data":[{"embedding":[1,2]},{"embedding":[3,4]}]}`, want: "1 3"},
		{name: "too few vectors", status: 200, body: `{"data":[{"index":0,"embedding":[1,2]}]}`, want: "1 vectors for 2 inputs", wantErr: true},
		{name: "empty vector", status: 200, body: `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[3]}]}`, want: "empty vector", wantErr: true},
		{name: "server error", status: 500, body: `{"error":{"message":"overloaded"}}`, want: "500 Internal Server Error", wantErr: true},
		{name: "not JSON", status: 200, body: `<html>`, want: "invalid response", wantErr: true},
		{name: "too slow", status: 200, body: `{}`, delay: 300 * time.Millisecond, want: "deadline exceeded", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := llm.Embedder{Endpoint: llm.Endpoint{URL: serve(t, tc.status, tc.body, tc.delay), Model: "m", APIKey: "k", Timeout: 100 * time.Millisecond}}
			vs, err := e.Embed(context.Background(), []string{"a", "b"})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ftoa(vs[0][0]) + " " + ftoa(vs[1][0]); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func ftoa(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

func TestComplete(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		wantErr          bool
	}{
		{name: "first choice", body: `{"choices":[{"message":{"role":"assistant","content":"  Refunds take 14 days. "}},{"message":{"content":"other"}}]}`, want: "Refunds take 14 days."},
		{name: "no choice", body: `{"choices":[]}`, want: "empty answer", wantErr: true},
		{name: "blank answer", body: `{"choices":[{"message":{"content":" "}}]}`, want: "empty answer", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := llm.Generator{Endpoint: llm.Endpoint{URL: serve(t, 200, tc.body, 0), Model: "m", APIKey: "k"}}
			got, err := g.Complete(context.Background(), []llm.Message{{Role: "user", Content: "q"}})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
}
