package turns

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
	"github.com/parley-bots/parley/internal/store"
)

// TestCompletionLocal: a turn's completion is a Local write (one that
// PostgreSQL's group commit may batch with other conversations') only
// when everything it holds changes the turn's own conversation: not with a
// WithCompletion (an issue) or a WithStatesCompletion (a user's or the
// bot's state), nor with a held reply to another conversation; a
// completion without effects is. It lists the states it shares (which
// its transaction locks first), and says when it shares more (it then
// commits alone). Group commit orders it with its turn's conversation in
// every case.
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
		more   bool // SharesMore
	}{
		{"nothing", func(*turnOutput) {}, false, true, nil, false},
		{"a reply and a local completion", func(o *turnOutput) { o.held = append(o.held, reply("c")); o.WithLocalCompletion(nop) }, false, true, nil, false},
		{"a shared completion", func(o *turnOutput) { o.WithLocalCompletion(nop); o.WithCompletion(nop) }, false, false, nil, true},
		{"a reply to another conversation", func(o *turnOutput) { o.held = append(o.held, reply("other")) }, false, false, nil, true},
		{"a shared completion, effects dropped", func(o *turnOutput) { o.WithCompletion(nop) }, true, true, nil, false},
		{"a user's and the bot's states", states(user, bot), false, false, []store.StateKey{user, bot}, false},
		{"states and a shared completion", func(o *turnOutput) { states(user)(o); o.WithCompletion(nop, bot) }, false, false, []store.StateKey{user, bot}, true},
		{"states and a reply to another conversation", func(o *turnOutput) { states(user)(o); o.held = append(o.held, reply("other")) }, false, false, []store.StateKey{user}, true},
		{"states, effects dropped", states(user), true, true, nil, false},
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
			// Alone where it shares more than it lists, locking what it does.
			if w.SharesMore != tc.more {
				t.Fatalf("completion SharesMore = %v, want %v", w.SharesMore, tc.more)
			}
			// Ordered with its turn's conversation, whatever it replies to.
			if ref := w.Conversation(); ref != (model.ConversationRef{BotID: "b", ConversationID: "c"}) {
				t.Fatalf("completion's conversation %+v, want the turn's", ref)
			}
		})
	}
}

// TestAddCompletion: how a bot's turn hands its completion over decides
// how PostgreSQL commits it: an issue alone (its states locked all the
// same), the user's or the bot's state batched with those states listed,
// else local.
func TestAddCompletion(t *testing.T) {
	turn := &model.Turn{BotID: "b", ConversationID: "c", Seq: 1}
	nop := func(context.Context, store.Store) error { return nil }
	user := store.StateKey{BotID: "b", Scope: store.ScopeUser, OwnerID: "u"}
	for _, tc := range []struct {
		name        string
		shared      []store.StateKey
		issue       bool
		local, more bool
	}{
		{"the conversation's rows only", nil, false, true, false},
		{"a user's state", []store.StateKey{user}, false, false, false},
		{"an issue", nil, true, false, true},
		{"an issue and a user's state", []store.StateKey{user}, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &turnOutput{botID: "b", conv: "c"}
			addCompletion(o, nop, tc.shared, tc.issue)
			w := o.completion(turn, false)
			if w.Local != tc.local || w.SharesMore != tc.more || !slices.Equal(w.SharedStates, tc.shared) {
				t.Fatalf("completion Local %v, SharesMore %v, SharedStates %v; want %v, %v, %v",
					w.Local, w.SharesMore, w.SharedStates, tc.local, tc.more, tc.shared)
			}
		})
	}
}

// TestSharedStates: the states outside its conversation that a turn's
// completion writes, each under its owner's key: the user's and the
// bot's that it set, never the conversation's.
func TestSharedStates(t *testing.T) {
	in := &TurnInput{UserID: "u", ConversationID: "c"}
	set := json.RawMessage(`{"n":1}`)
	user := store.StateKey{BotID: "b", Scope: store.ScopeUser, OwnerID: "u"}
	bot := store.StateKey{BotID: "b", Scope: store.ScopeBot, OwnerID: "b"}
	for _, tc := range []struct {
		name string
		st   runtime.States
		want []store.StateKey
	}{
		{"none set", runtime.States{}, nil},
		{"the conversation's only", runtime.States{Conversation: set}, nil},
		{"the user's", runtime.States{User: set, Conversation: set}, []store.StateKey{user}},
		{"the bot's", runtime.States{Bot: set}, []store.StateKey{bot}},
		{"all three", runtime.States{User: set, Conversation: set, Bot: set}, []store.StateKey{user, bot}},
	} {
		if got := sharedStates("b", in, tc.st); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
