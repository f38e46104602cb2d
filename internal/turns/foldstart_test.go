package turns

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestKeptStartsBounded: keptStarts holds at most maxKeptStarts
// conversations and no start with large states; take gives a start once,
// and only to its user.
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
}
