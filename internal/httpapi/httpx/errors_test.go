package httpx

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parley-bots/parley/internal/model"
)

// TestWriteErrorUnavailable: an error AccessLog's classifier tells is the
// database being unavailable for now is answered 503 ServiceUnavailable
// with Retry-After; a model error keeps its own status, and any other
// error, or one with no classifier, is a 500.
func TestWriteErrorUnavailable(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	isDown := func(err error) bool { return errors.Is(err, down) }
	for _, c := range []struct {
		name        string
		unavailable func(error) bool
		err         error
		status      int
		typ         string
		retryAfter  string
	}{
		{"the database unavailable", isDown, down, 503, "ServiceUnavailable", "1"},
		{"wrapped", isDown, errors.Join(errors.New("reading the bot"), down), 503, "ServiceUnavailable", "1"},
		{"a model error", func(error) bool { return true }, model.NotFound("bot"), 404, "ResourceNotFound", ""},
		{"another error", isDown, errors.New("boom"), 500, "Internal", ""},
		{"no classifier", nil, down, 500, "Internal", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := AccessLog(slog.New(slog.NewTextHandler(io.Discard, nil)), c.unavailable, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				WriteError(w, r, c.err)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/admin/bots", nil))
			var body ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if rec.Code != c.status || body.Code != c.status || body.Type != c.typ {
				t.Errorf("status %d, body %+v; want %d %s", rec.Code, body, c.status, c.typ)
			}
			if got := rec.Header().Get("Retry-After"); got != c.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, c.retryAfter)
			}
			if body.RequestID == "" || body.RequestID != rec.Header().Get(RequestIDHeader) || body.ID == "" {
				t.Errorf("ids: body %+v, header %q", body, rec.Header().Get(RequestIDHeader))
			}
		})
	}
}
