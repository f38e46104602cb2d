package httpx

import (
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
)

func TestDecodeBytes(t *testing.T) {
	type body struct {
		Name  *string           `json:"name"`
		Count int               `json:"count"`
		Tags  map[string]string `json:"tags"`
	}
	tests := []struct {
		name, in string
		strict   bool
		wantErr  string // "" means success; else a substring of the message
	}{
		{"ok", `{"name":"a","count":2}`, true, ""},
		{"empty body is an empty object", ``, true, ""},
		{"trailing brace", `{"name":"a"}}`, true, "after the top-level object"},
		{"two objects", `{"name":"a"} {"name":"b"}`, true, "after the top-level object"},
		{"not an object", `[1,2]`, true, "must be a JSON object"},
		{"truncated", `{"name":`, true, "malformed JSON"},
		{"syntax", `{"name" "a"}`, true, "malformed JSON"},
		{"wrong type names the field", `{"count":"x"}`, true, "count: expected number"},
		{"nested wrong type", `{"tags":{"a":1}}`, true, "tags: expected string"},
		{"unknown property strict", `{"nmae":"a"}`, true, "nmae: unknown property"},
		{"unknown property lax", `{"nmae":"a"}`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b body
			err := DecodeBytes([]byte(tt.in), &b, tt.strict)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || model.TypeOf(err) != model.ErrInvalidPayload || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want InvalidPayload containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestBodyForHidesInternals(t *testing.T) {
	b := BodyFor(errString("pq: password authentication failed for user secret"))
	if b.Code != 500 || b.Type != "Internal" || strings.Contains(b.Message, "secret") || !strings.HasPrefix(b.ID, "err_") {
		t.Fatalf("body = %+v", b)
	}
	b = BodyFor(model.NotFound("bot"))
	if b.Code != 404 || b.Type != "ResourceNotFound" || b.Message != "bot not found" {
		t.Fatalf("body = %+v", b)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
