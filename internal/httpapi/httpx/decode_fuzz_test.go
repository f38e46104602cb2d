package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parley-bots/parley/internal/model"
)

type fuzzBody struct {
	ID      string            `json:"id"`
	Tags    map[string]string `json:"tags"`
	Payload json.RawMessage   `json:"payload"`
	N       *int              `json:"n"`
	Items   []struct {
		A bool `json:"a"`
	} `json:"items"`
}

// FuzzDecodeBody: request bodies decode without panic, under a size limit;
// every refusal is a *model.Error (InvalidPayload, or PayloadTooLarge over
// the limit); an accepted body re-encodes to JSON that decodes strictly to
// the same value.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"id":"x","tags":{"a":"b"},"payload":{"type":"text"},"n":3,"items":[{"a":true}]}`,
		`{"id":1}`, `{"unknown":1}`, `{"id":"x"}}`, `{"id":"x"} {}`, `[]`, `null`, `{"n":1e400}`, `{"tags":{"a":null}}`,
		"{\"id\":\"\xff\"}", `{"payload":`, ` {"id" : "y"} `} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		const limit = 1 << 10
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(data))
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, limit)
		var dst fuzzBody
		err := Decode(r, &dst, strict)
		if err != nil {
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("Decode(%q): error %#v is not a *model.Error", data, err)
			}
			if len(data) > limit && me.Type != model.ErrPayloadTooLarge && me.Type != model.ErrInvalidPayload {
				t.Fatalf("Decode(%q) over the limit: %v", data, err)
			}
			return
		}
		if len(data) > limit {
			t.Fatalf("Decode accepted %d bytes over a limit of %d", len(data), limit)
		}
		out, err := json.Marshal(dst)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again fuzzBody
		if err := DecodeBytes(out, &again, true); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("round trip: %s then %s", out, out2)
		}
	})
}
