package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

// testSharedStates: two writes that each set the same two users' states,
// in opposite orders, listing them (Write.SharedStates), committed side
// by side by two group committers (two nodes' batches) in plain
// transactions, each waiting after its first state until the other set
// its own first (or 300 ms passed): with LockShared, the second to lock
// waits for the first's commit before it writes anything, so both commit
// at their first try. Without the locks, each would hold the state the
// other waits for: on PostgreSQL a deadlock, which fails one of them. A
// third write goes through the engine's own committer.
func testSharedStates(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	run := func(ctx context.Context, fn func(context.Context, store.Store) error) error {
		return db.InTx(ctx, func(tx store.Store) error { return fn(ctx, tx) })
	}
	key := func(user string) store.StateKey {
		return store.StateKey{BotID: f.bot.ID, Scope: store.ScopeUser, OwnerID: user}
	}
	firsts := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	var once [2]sync.Once
	write := func(i int, name, other string, users ...string) *store.Write {
		return &store.Write{SharedStates: []store.StateKey{key(users[0]), key(users[1])},
			Apply: func(ctx context.Context, tx store.Store) error {
				for j, u := range users {
					if err := tx.States().Put(ctx, f.bot.ID, store.ScopeUser, u, json.RawMessage(fmt.Sprintf(`{"by":%q}`, name))); err != nil {
						return err
					}
					if j == 0 {
						once[i].Do(func() { close(firsts[name]) })
						select {
						case <-firsts[other]:
						case <-time.After(300 * time.Millisecond):
						}
					}
				}
				return nil
			}}
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, w := range []*store.Write{write(0, "a", "b", "u1", "u2"), write(1, "b", "a", "u2", "u1")} {
		g := store.NewGroupCommitter(store.GroupConfig{Shards: 1, LocalOnly: true, LockShared: true}, run, nil)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = g.Commit(ctx, w) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v (the two waited for each other)", i, err)
		}
	}
	// Each committed whole: the last to commit set both users.
	u1, err := db.States().Get(ctx, f.bot.ID, store.ScopeUser, "u1")
	ok(t, err)
	u2, err := db.States().Get(ctx, f.bot.ID, store.ScopeUser, "u2")
	ok(t, err)
	eq(t, "both users set by one write", string(u1), string(u2))

	// The engine's committer (pipelined on PostgreSQL, its lock statement
	// sent with the rest) commits such a write, its keys repeated.
	w := &store.Write{SharedStates: []store.StateKey{key("u2"), key("u1"), key("u2")},
		Apply: func(ctx context.Context, tx store.Store) error {
			return tx.States().Put(ctx, f.bot.ID, store.ScopeUser, "u1", json.RawMessage(`{"by":"engine"}`))
		}}
	ok(t, db.NewCommitter(nil).Commit(ctx, w))
	u1, err = db.States().Get(ctx, f.bot.ID, store.ScopeUser, "u1")
	ok(t, err)
	eq(t, "set through the engine's committer", string(u1), `{"by":"engine"}`)
}
