package turns

import (
	"context"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestCompletionLocal: a turn's completion is a Local write (one that
// PostgreSQL's group commit may batch with other conversations') only
// when everything it holds changes the turn's own conversation: not with a
// WithCompletion (a user's or the bot's state, an issue), nor with a held
// reply to another conversation; a completion without effects is. Group
// commit orders it with its turn's conversation in every case.
func TestCompletionLocal(t *testing.T) {
	turn := &model.Turn{BotID: "b", ConversationID: "c", Seq: 1}
	reply := func(conv string) *store.Write {
		return &store.Write{Local: true, Signal: &model.Signal{BotID: "b", ConversationID: conv}}
	}
	nop := func(context.Context, store.Store) error { return nil }
	cases := []struct {
		name string
		fill func(o *turnOutput)
		drop bool
		want bool
	}{
		{"nothing", func(*turnOutput) {}, false, true},
		{"a reply and a local completion", func(o *turnOutput) { o.held = append(o.held, reply("c")); o.WithLocalCompletion(nop) }, false, true},
		{"a shared completion", func(o *turnOutput) { o.WithLocalCompletion(nop); o.WithCompletion(nop) }, false, false},
		{"a reply to another conversation", func(o *turnOutput) { o.held = append(o.held, reply("other")) }, false, false},
		{"a shared completion, effects dropped", func(o *turnOutput) { o.WithCompletion(nop) }, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &turnOutput{botID: "b", conv: "c"}
			tc.fill(o)
			w := o.completion(turn, tc.drop)
			if w.Local != tc.want {
				t.Fatalf("completion Local = %v, want %v", w.Local, tc.want)
			}
			// Ordered with its turn's conversation, whatever it replies to.
			if ref := w.Conversation(); ref != (model.ConversationRef{BotID: "b", ConversationID: "c"}) {
				t.Fatalf("completion's conversation %+v, want the turn's", ref)
			}
		})
	}
}
