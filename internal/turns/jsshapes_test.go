package turns

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/parley-bots/parley/internal/wire"
)

// viaJSON is what bot code was given before the builders: the wire value
// encoded to JSON and decoded into a map.
func viaJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestShapesMatchJSON: the maps built field by field are the maps the
// wire values' JSON decodes to, for every field set and unset. A field
// added to a wire type fails the count check until its builder has it.
func TestShapesMatchJSON(t *testing.T) {
	for typ, fields := range map[reflect.Type]int{
		reflect.TypeOf(wire.Message{}): 7, reflect.TypeOf(wire.User{}): 6, reflect.TypeOf(wire.Conversation{}): 3,
	} {
		if typ.NumField() != fields {
			t.Errorf("%s has %d fields, the builders know %d: add the new ones to jsshapes.go and here", typ, typ.NumField(), fields)
		}
	}
	yes := true
	for _, m := range []wire.Message{
		{ID: "m1", CreatedAt: "2026-11-24T06:00:00.000Z", Payload: json.RawMessage(`{"type":"text","text":"hi"}`), UserID: "u1", ConversationID: "c1"},
		{ID: "m2", CreatedAt: "2026-11-24T06:00:00.001Z", Payload: json.RawMessage(`{"type":"choice","text":"pick","options":[{"label":"a","value":1.5}],"nested":{"x":null}}`),
			UserID: "bot", ConversationID: "c1", Metadata: json.RawMessage(`{"k":["v",true]}`), IsBot: &yes},
		{ID: "m3", Payload: json.RawMessage(`{}`), Metadata: json.RawMessage(`"a string"`)},
	} {
		if got, want := messageMap(&m, nil), viaJSON(t, m); !reflect.DeepEqual(got, want) {
			t.Errorf("messageMap(%s) = %v, want %v", m.ID, got, want)
		}
		// The event's payload handed in gives the same map.
		if got, want := messageMap(&m, decodeObject(m.Payload)), viaJSON(t, m); !reflect.DeepEqual(got, want) {
			t.Errorf("messageMap(%s, payload) = %v, want %v", m.ID, got, want)
		}
	}
	for _, u := range []wire.User{
		{ID: "u1", CreatedAt: "a", UpdatedAt: "b"},
		{ID: "u2", Name: "Ann", PictureURL: "https://x/p.png", Profile: "p", CreatedAt: "a", UpdatedAt: "b"},
	} {
		if got, want := userMap(u), viaJSON(t, u); !reflect.DeepEqual(got, want) {
			t.Errorf("userMap(%s) = %v, want %v", u.ID, got, want)
		}
	}
	c := wire.Conversation{ID: "c1", CreatedAt: "a", UpdatedAt: "b"}
	if got, want := conversationMap(c), viaJSON(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("conversationMap = %v, want %v", got, want)
	}
}
