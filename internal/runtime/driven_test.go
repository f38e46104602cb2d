package runtime

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/parley-bots/parley/internal/model"
)

func TestPlainJSON(t *testing.T) {
	deep := any("x")
	for range maxPlainDepth + 1 {
		deep = []any{deep}
	}
	for _, c := range []struct {
		name string
		v    any
		want bool
	}{
		{"null", nil, true},
		{"scalars", map[string]any{"s": "é✓", "b": true, "i": 3, "i64": int64(-4), "f": 1.5}, true},
		{"nested", map[string]any{"a": []any{map[string]any{"b": nil}, "c", 2.0}}, true},
		{"NaN", math.NaN(), false},
		{"infinity inside", []any{math.Inf(1)}, false},
		{"string not UTF-8", "a\xffb", false},
		{"key not UTF-8", map[string]any{"\xff": 1}, false},
		{"another type", map[string]any{"list": []string{"a"}}, false},
		{"raw JSON", json.RawMessage(`{}`), false},
		{"too deep", deep, false},
	} {
		if got := plainJSON(c.v, 0); got != c.want {
			t.Errorf("%s: plainJSON = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDriverRequestsAsJS: what a driven turn's JavaScript receives of a
// request is what JSON.parse makes of its JSON, whether it came as JS
// values (plain ones) or through JSON (the others).
func TestDriverRequestsAsJS(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', async () => {
  let res
  for (;;) {
    const req = ` + DriverGlobal + `(res)
    if (req.op === 'done') break
    res = JSON.stringify({ ok: [req.value, typeof req.value, Array.isArray(req.value)] })
  }
})`
	values := []any{
		nil, true, 7, int64(1) << 40, -2.5, "", "é✓ \u2028 <&>",
		map[string]any{"b": []any{1, "x", nil, map[string]any{}}, "a": map[string]any{"z": false}},
		[]any{},
		map[string]any{"list": []string{"a", "b"}}, // not plain: through JSON
		struct {
			N int `json:"n"`
		}{3},
		"a\xffb", // mended by json.Marshal
	}
	ev, err := NewMessageEvent("chat", model.Message{BotID: "b", ID: "m", ConversationID: "c", UserID: "u",
		Payload: json.RawMessage(`{"type":"text","text":"hi"}`), CreatedAt: created})
	if err != nil {
		t.Fatal(err)
	}
	var answers []json.RawMessage
	res, dr := e.RunDriven(context.Background(), TurnInput{BotID: "b", VersionID: "v", Code: code, Event: ev, Host: &sliceHost{}},
		func(call DriveCall) error {
			for _, v := range values {
				a, err := call(map[string]any{"op": "echo", "value": v})
				if err != nil {
					return err
				}
				answers = append(answers, a)
			}
			return nil
		})
	if res.Problem != nil || res.Err != nil || !dr.Completed || dr.Err != nil {
		t.Fatalf("turn: %+v %v; driver %+v", res.Problem, res.Err, dr)
	}
	if len(answers) != len(values) {
		t.Fatalf("%d answers to %d requests", len(answers), len(values))
	}
	for i, v := range values {
		raw, _ := json.Marshal(v)
		var want any
		_ = json.Unmarshal(raw, &want)
		wantTriple := []any{want, jsType(want), isArray(want)}
		var got any
		if err := json.Unmarshal(answers[i], &got); err != nil {
			t.Fatalf("%#v: answer %s: %v", v, answers[i], err)
		}
		if w, _ := json.Marshal(wantTriple); !reflect.DeepEqual(got, normalize(t, w)) {
			t.Errorf("%#v: the JavaScript side saw %s, want %s", v, answers[i], w)
		}
	}
}

func normalize(t *testing.T, raw []byte) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// jsType is JavaScript's typeof of a value JSON.parse made.
func jsType(v any) string {
	switch v.(type) {
	case nil, map[string]any, []any:
		return "object"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	}
	return "?"
}

func isArray(v any) bool { _, ok := v.([]any); return ok }
