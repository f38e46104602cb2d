package turns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/testutil/testdb"
	"github.com/parley-bots/parley/internal/turns"
)

// effectBot records its runs and, with each turn's completion, appends
// the message's text to the conversation's state: the state lists the
// turns whose effects were stored, in order.
type effectBot struct {
	mu   sync.Mutex
	runs []string
}

func (b *effectBot) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	var p struct{ Text string }
	_ = json.Unmarshal(in.Event.Payload, &p)
	b.mu.Lock()
	b.runs = append(b.runs, p.Text)
	b.mu.Unlock()
	out.WithCompletion(func(ctx context.Context, tx store.Store) error {
		var st struct{ Seen []string }
		cur, err := tx.States().Get(ctx, in.BotID, store.ScopeConversation, in.ConversationID)
		if err != nil {
			return err
		}
		if cur != nil {
			if err := json.Unmarshal(cur, &st); err != nil {
				return err
			}
		}
		st.Seen = append(st.Seen, p.Text)
		data, _ := json.Marshal(st)
		return tx.States().Put(ctx, in.BotID, store.ScopeConversation, in.ConversationID, data)
	})
	return nil
}

func (b *effectBot) ran() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.runs)
}

// failingCommitter fails its first writes with err, committing nothing.
type failingCommitter struct {
	store.Committer
	fails atomic.Int32
	err   error
}

func (c *failingCommitter) Submit(ctx context.Context, w *store.Write) func() error {
	if c.fails.Add(-1) >= 0 {
		return func() error { return c.err }
	}
	return c.Committer.Submit(ctx, w)
}

func (c *failingCommitter) Commit(ctx context.Context, w *store.Write) error {
	return c.Submit(ctx, w)()
}

// TestDispatcherWaitsOutAnUnavailableDatabase checks that the database
// being unavailable for now, when a turn's bot is resolved or when its
// completion is committed, fails no turn and drops no effect: the turns
// stay pending and run again, in order, and each turn's effects are stored
// exactly once. Before, the turn was completed as failed, or completed
// without its effects.
func TestDispatcherWaitsOutAnUnavailableDatabase(t *testing.T) {
	for _, eng := range []struct {
		name string
		open func(testing.TB) store.DB
	}{{"sqlite", testdb.SQLite}, {"postgres", testdb.Postgres}} {
		for _, tc := range []struct {
			name     string
			resolves int32 // resolutions of the bot that fail
			commits  int32 // completions that fail
			runs     []string
		}{
			{"resolving the bot", 2, 0, []string{"0", "1", "2"}},
			{"completing the turn", 0, 1, []string{"0", "0", "1", "2"}}, // the turn runs again
		} {
			t.Run(eng.name+"/"+tc.name, func(t *testing.T) {
				db := eng.open(t)
				if !db.Transient(testdb.Unavailable(t, eng.name)) {
					t.Fatal("the engine's unavailable error is not transient")
				}
				bot := &effectBot{}
				var failResolve atomic.Int32
				failResolve.Store(tc.resolves)
				resolver := func(context.Context, string) (turns.Bot, error) {
					if failResolve.Add(-1) >= 0 {
						return nil, fmt.Errorf("reading the bot: %w", testdb.Unavailable(t, eng.name))
					}
					return bot, nil
				}
				wrap := func(c store.Committer) store.Committer {
					fc := &failingCommitter{Committer: c, err: fmt.Errorf("commit: %w", testdb.Unavailable(t, eng.name))}
					fc.fails.Store(tc.commits)
					return fc
				}
				o := turns.DispatcherOptions{Workers: 2, Leases: eng.name == "postgres"}
				f := newChatFixtureOn(t, db, newNodeWith(db, resolver, wrap, o))
				ctx := context.Background()
				conv, err := f.chat.CreateConversation(ctx, f.caller, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					f.post(t, conv.ID, fmt.Sprint(i)) // before the dispatcher starts: one batch
				}
				f.dispatcher.Start(ctx)
				defer f.dispatcher.Stop()
				waitUntil(t, "turns completed", func() bool {
					ts, _ := db.Signals().PendingTurns(ctx, f.botID, conv.ID, 10)
					return len(ts) == 0
				})
				if got := bot.ran(); !slices.Equal(got, tc.runs) {
					t.Errorf("runs = %v, want %v", got, tc.runs)
				}
				data, err := db.States().Get(ctx, f.botID, store.ScopeConversation, conv.ID)
				if err != nil {
					t.Fatal(err)
				}
				var st struct{ Seen []string }
				_ = json.Unmarshal(data, &st)
				if want := []string{"0", "1", "2"}; !slices.Equal(st.Seen, want) {
					t.Errorf("effects stored for %v, want %v", st.Seen, want)
				}
			})
		}
	}
}
