package turns

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestKeptStartsBounded: keptStarts holds at most maxKeptStarts
// conversations and no start with large states (a workflow's dialog
// included); take gives a start once, and only to its user.
func TestKeptStartsBounded(t *testing.T) {
	var k keptStarts
	ref := func(i int) model.ConversationRef {
		return model.ConversationRef{BotID: "b", ConversationID: string(rune('a'+i%26)) + strings.Repeat("x", i/26)}
	}
	for i := range maxKeptStarts + 100 {
		k.put(ref(i), keptStart{userID: "u", seq: int64(i)})
	}
	if n := len(k.m); n != maxKeptStarts {
		t.Fatalf("%d starts kept, want %d", n, maxKeptStarts)
	}
	last := ref(maxKeptStarts + 99)
	if _, ok := k.take(last, "other"); ok {
		t.Fatal("another user's message took the start")
	}
	if _, ok := k.take(last, "u"); ok {
		t.Fatal("a start was taken twice (the other user's take forgets it)")
	}
	k.put(last, keptStart{userID: "u", seq: 7})
	if ks, ok := k.take(last, "u"); !ok || ks.seq != 7 {
		t.Fatalf("take = %+v, %v", ks, ok)
	}
	big := keptStart{userID: "u", start: store.TurnStart{ConvState: json.RawMessage(`"` + strings.Repeat("s", maxKeptStateBytes) + `"`)}}
	k.put(last, big)
	if _, ok := k.take(last, "u"); ok {
		t.Fatal("a start with large states was kept")
	}
	// A workflow dialog counts with the states.
	half := json.RawMessage(`"` + strings.Repeat("s", maxKeptStateBytes/2) + `"`)
	k.put(last, keptStart{userID: "u", start: store.TurnStart{UserState: half}, dialog: &keptDialog{raw: half}})
	if _, ok := k.take(last, "u"); ok {
		t.Fatal("a start whose states and dialog are large was kept")
	}
	k.put(last, keptStart{userID: "u", start: store.TurnStart{UserState: half}, dialog: &keptDialog{raw: []byte(`{"turns":1}`)}})
	if ks, ok := k.take(last, "u"); !ok || string(ks.dialog.raw) != `{"turns":1}` {
		t.Fatalf("a start with a small dialog: %+v, %v", ks, ok)
	}
}
