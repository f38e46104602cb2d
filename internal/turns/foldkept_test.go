package turns_test

// A start a folded turn kept for the conversation's next message.

import (
	"cmp"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/turns"
)

// TestFoldKeptStart: a folded turn that changed none of what it started
// with leaves that start for the conversation's next message, which folds
// without reading it; a change made meanwhile by anything else (a state
// set, a handoff) is found in the commit's transaction, and the turn runs
// again from the store instead; another user's message reads its own.
func TestFoldKeptStart(t *testing.T) {
	// The bot answers with the conversation's state it started with, and
	// changes nothing.
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		text, err := echoWithState(ctx, in, out)
		if err == nil && text == "help" {
			err = out.RequestHandoff(ctx, in.ConversationID, "asked")
		}
		turns.KeepStart(out)
		return err
	})
	for _, tc := range []struct {
		name      string
		between   func(t *testing.T, f *foldFixture)
		reads     int64  // the second message's reads of its start
		commits   int64  // and commits
		answer    string // the second message's answer ("": none)
		otherUser bool
		first     string // the first message ("a" unless set)
	}{
		{name: "nothing changed", reads: 0, commits: 1, answer: "echo b none"},
		{name: "state set", between: func(t *testing.T, f *foldFixture) {
			if err := f.db.States().Put(context.Background(), f.botID, store.ScopeConversation, f.conv, json.RawMessage(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
		}, reads: 0, commits: 2, answer: `echo b {"n":1}`},
		{name: "handoff", between: func(t *testing.T, f *foldFixture) {
			if _, err := f.db.Handoffs().Request(context.Background(), &model.Handoff{BotID: f.botID, ConversationID: f.conv,
				Status: model.HandoffWaiting, RequestedBy: "test", RequestedAt: model.Now()}); err != nil {
				t.Fatal(err)
			}
		}, reads: 0, commits: 2},
		{name: "another user", otherUser: true, reads: 1, commits: 1, answer: "echo b none"},
		// A turn that asked for a human keeps no start: the next message
		// reads that the conversation is in handoff.
		{name: "handoff asked by the turn", first: "help", reads: 1, commits: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			foldEngines(t, func(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
				f := newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
				first := cmp.Or(tc.first, "a")
				f.post(t, f.conv, first)
				if n := f.reads.Load(); n != 1 {
					t.Fatalf("the first message read its start %d times, want 1", n)
				}
				if tc.between != nil {
					tc.between(t, f)
				}
				if tc.otherUser {
					f.chatFixture = f.otherCaller(t, f.conv)
				}
				reads, commits := f.reads.Load(), f.commits.n.Load()
				f.post(t, f.conv, "b")
				want := []string{first, "echo " + first + " none", "b"}
				if tc.answer != "" {
					want = append(want, tc.answer)
				}
				waitUntil(t, "the second turn", func() bool { return f.pending(t) == 0 })
				time.Sleep(20 * time.Millisecond) // an answer given twice would show
				eqStrings(t, "messages", f.texts(t), want...)
				if n := f.reads.Load() - reads; n != tc.reads {
					t.Fatalf("the second message read its start %d times, want %d", n, tc.reads)
				}
				if n := f.commits.n.Load() - commits; n != tc.commits {
					t.Fatalf("the second message took %d commits, want %d", n, tc.commits)
				}
			})
		})
	}
}

// otherCaller adds a second user to the conversation and returns the
// fixture acting as that user.
func (f *foldFixture) otherCaller(t *testing.T, conv string) *chatFixture {
	t.Helper()
	ctx := context.Background()
	c := &conversations.Caller{Scope: f.caller.Scope, UserID: "u2"}
	if _, err := f.chat.GetOrCreateUser(ctx, c, conversations.UserInput{}); err != nil {
		t.Fatal(err)
	}
	id := "u2"
	if _, err := f.chat.AddParticipant(ctx, f.caller, conv, &id); err != nil {
		t.Fatal(err)
	}
	return &chatFixture{node: f.node, botID: f.botID, caller: c}
}

// TestFoldKeptStartWithStates: a folded turn that changed only its states
// leaves its start with those states for the next message, which folds
// without reading and starts from them.
func TestFoldKeptStartWithStates(t *testing.T) {
	foldEngines(t, testFoldKeptStartWithStates)
}

func testFoldKeptStartWithStates(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
	bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
		if isWarm(in) {
			return echoText(ctx, in, out) // no state, no start kept
		}
		text, err := echoWithState(ctx, in, out)
		if err != nil {
			return err
		}
		next, _ := json.Marshal(map[string]string{"last": text})
		out.WithLocalCompletion(func(ctx context.Context, tx store.Store) error {
			return tx.States().Put(ctx, in.BotID, store.ScopeConversation, in.ConversationID, next)
		})
		turns.KeepStartWith(out, nil, next, nil)
		return nil
	})
	f := newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
	reads := f.reads.Load() // the warm message's, on PostgreSQL
	for _, text := range []string{"a", "b", "c"} {
		commits := f.commits.n.Load()
		f.post(t, f.conv, text)
		if n := f.commits.n.Load() - commits; n != 1 {
			t.Fatalf("message %q took %d commits, want 1", text, n)
		}
	}
	eqStrings(t, "messages", f.texts(t), "a", "echo a none", "b", `echo b {"last":"a"}`, "c", `echo c {"last":"b"}`)
	if n := f.reads.Load() - reads; n != 1 {
		t.Fatalf("the messages read their start %d times, want once (the first)", n)
	}
}

// isWarm tells the first message foldEngines sends on PostgreSQL (warm).
func isWarm(in *turns.TurnInput) bool {
	var p struct{ Text string }
	return in.Message != nil && json.Unmarshal(in.Message.Payload, &p) == nil && p.Text == "warm"
}

// echoWithState answers a text message with "echo <text> <the
// conversation's state the turn started with>" and returns the text.
func echoWithState(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) (string, error) {
	var p struct{ Text string }
	_ = json.Unmarshal(in.Message.Payload, &p)
	state := "none"
	if st := turns.StartOf(in); st != nil && st.ConvState != nil {
		state = string(st.ConvState)
	}
	b, _ := json.Marshal(map[string]string{"type": "text", "text": "echo " + p.Text + " " + state})
	_, err := out.CreateMessage(ctx, turns.OutgoingMessage{Payload: b})
	return p.Text, err
}

// TestFoldKeptStartDroppedByARun: a start a folded turn kept is dropped
// once a worker runs the conversation (here an event's turn): its last
// turn's number is stale then, and the next message reads its start and
// folds, in one commit, instead of failing the number's check.
func TestFoldKeptStartDroppedByARun(t *testing.T) {
	foldEngines(t, func(t *testing.T, newFixture func(turns.Bot, turns.DispatcherOptions) *foldFixture) {
		bot := botFunc(func(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
			if in.Message == nil {
				return nil // the event
			}
			_, err := echoWithState(ctx, in, out)
			turns.KeepStart(out)
			return err
		})
		f := newFixture(turns.FoldableBot(bot), turns.DispatcherOptions{FoldWithin: 10 * time.Second})
		f.post(t, f.conv, "a")
		f.storeEvent(t)
		f.queue.Notify(f.ref())
		waitUntil(t, "the event's turn", func() bool { return f.pending(t) == 0 })
		reads, commits := f.reads.Load(), f.commits.n.Load()
		f.post(t, f.conv, "b")
		eqStrings(t, "messages once createMessage returned", f.texts(t), "a", "echo a none", "b", "echo b none")
		if n := f.commits.n.Load() - commits; n != 1 {
			t.Fatalf("the message after the run took %d commits, want 1", n)
		}
		if n := f.reads.Load() - reads; n != 1 {
			t.Fatalf("the message after the run read its start %d times, want 1", n)
		}
	})
}
