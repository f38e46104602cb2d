package turns

import (
	"context"
	"slices"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// TestCompletionLocal: a turn's completion is a Local write (one that
// PostgreSQL's group commit may batch with other conversations') only
// when everything it holds changes the turn's own conversation: not with a
// WithCompletion (an issue) or a WithStatesCompletion (a user's or the
// bot's state), nor with a held reply to another conversation; a
// completion without effects is. It lists its shared states (which a
// batch locks first) only when they are all it shares. Group commit
// orders it with its turn's conversation in every case.
func TestCompletionLocal(t *testing.T) {
	turn := &model.Turn{BotID: "b", ConversationID: "c", Seq: 1}
	reply := func(conv string) *store.Write {
		return &store.Write{Local: true, Signal: &model.Signal{BotID: "b", ConversationID: conv}}
	}
	nop := func(context.Context, store.Store) error { return nil }
	user := store.StateKey{BotID: "b", Scope: store.ScopeUser, OwnerID: "u"}
	bot := store.StateKey{BotID: "b", Scope: store.ScopeBot, OwnerID: "b"}
	states := func(keys ...store.StateKey) func(o *turnOutput) {
		return func(o *turnOutput) { o.held = append(o.held, reply("c")); o.WithStatesCompletion(keys, nop) }
	}
	cases := []struct {
		name   string
		fill   func(o *turnOutput)
		drop   bool
		want   bool
		shared []store.StateKey
	}{
		{"nothing", func(*turnOutput) {}, false, true, nil},
		{"a reply and a local completion", func(o *turnOutput) { o.held = append(o.held, reply("c")); o.WithLocalCompletion(nop) }, false, true, nil},
		{"a shared completion", func(o *turnOutput) { o.WithLocalCompletion(nop); o.WithCompletion(nop) }, false, false, nil},
		{"a reply to another conversation", func(o *turnOutput) { o.held = append(o.held, reply("other")) }, false, false, nil},
		{"a shared completion, effects dropped", func(o *turnOutput) { o.WithCompletion(nop) }, true, true, nil},
		{"a user's and the bot's states", states(user, bot), false, false, []store.StateKey{user, bot}},
		{"states and a shared completion", func(o *turnOutput) { states(user)(o); o.WithCompletion(nop) }, false, false, nil},
		{"states and a reply to another conversation", func(o *turnOutput) { states(user)(o); o.held = append(o.held, reply("other")) }, false, false, nil},
		{"states, effects dropped", states(user), true, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := &turnOutput{botID: "b", conv: "c"}
			tc.fill(o)
			w := o.completion(turn, tc.drop)
			if w.Local != tc.want {
				t.Fatalf("completion Local = %v, want %v", w.Local, tc.want)
			}
			if !slices.Equal(w.SharedStates, tc.shared) {
				t.Fatalf("completion SharedStates = %v, want %v", w.SharedStates, tc.shared)
			}
			// Ordered with its turn's conversation, whatever it replies to.
			if ref := w.Conversation(); ref != (model.ConversationRef{BotID: "b", ConversationID: "c"}) {
				t.Fatalf("completion's conversation %+v, want the turn's", ref)
			}
		})
	}
}
