package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// testDeleteWhileWriting deletes a conversation, its bot or its workspace
// while writers commit messages to it, each with its signal, through the
// group commit. Every write either committed before the delete, and went
// with it, or failed as not found; none is left behind. On PostgreSQL
// messages and signals have no key to their conversation (migration
// 0016): what the cascade did is the deletes' order (DeleteConversation).
func testDeleteWhileWriting(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	for i, tc := range []struct {
		name string
		// make returns the bot of the conversation to delete (made by
		// the test), and del deletes it.
		make func(round int) *model.Bot
		del  func(b *model.Bot, conv string) error
	}{
		{"conversation",
			func(int) *model.Bot { return f.bot },
			func(b *model.Bot, conv string) error { return db.Chat().DeleteConversation(ctx, b.ID, conv) }},
		{"bot",
			func(round int) *model.Bot { return newBot(t, db, f.ws, nil, 100+round) },
			func(b *model.Bot, _ string) error { return db.Bots().Delete(ctx, b.WorkspaceID, b.ID) }},
		{"workspace",
			func(round int) *model.Bot {
				return newBot(t, db, newWorkspace(t, db, f.acct, fmt.Sprintf("race%d", round), 200+round), nil, 200+round)
			},
			func(b *model.Bot, _ string) error { return db.Workspaces().Delete(ctx, b.WorkspaceID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 3 {
				b := tc.make(3*i + round)
				if _, err := db.Chat().GetUser(ctx, b.ID, "u"); model.IsNotFound(err) {
					newUser(t, db, b.ID, "u")
				}
				conv := newConv(t, db, b.ID, "c", "u", round)
				stored := writeUntilGone(t, db, b, conv.ID, func() error { return tc.del(b, conv.ID) })
				ms, _, err := db.Chat().ListMessages(ctx, b.ID, conv.ID, store.Page{})
				ok(t, err)
				sg, err := db.Signals().SignalsAfter(ctx, b.ID, conv.ID, 0, 10)
				ok(t, err)
				if len(ms) != 0 || len(sg) != 0 {
					t.Fatalf("round %d (%d stored before the delete): %d messages and %d signals outlived their conversation", round, stored, len(ms), len(sg))
				}
			}
		})
	}
}

// writeUntilGone has writers commit messages to conv until del, called
// once they stored some, makes each of them fail as not found; it returns
// how many they stored.
func writeUntilGone(t *testing.T, db store.DB, b *model.Bot, conv string, del func() error) int64 {
	t.Helper()
	ctx := t.Context()
	committer := db.NewCommitter(nil)
	const writers = 8
	var stored, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers+1) // one per writer, and the delete's
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i == 10000 { // the delete never came, or never took
					errs <- fmt.Errorf("writer %d: still writing after %d messages", w, i)
					return
				}
				m := &model.Message{BotID: b.ID, ConversationID: conv, UserID: "u", Direction: model.DirectionIncoming,
					Payload: json.RawMessage(fmt.Sprintf(`{"text":"w%d-%d"}`, w, i))}
				err := committer.Commit(ctx, &store.Write{
					Apply:  func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) },
					Signal: &model.Signal{BotID: b.ID, ConversationID: conv, Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)},
				})
				if model.IsNotFound(err) {
					refused.Add(1)
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if stored.Add(1) == writers*5 {
					if err := del(); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a write or the delete failed: %v", err)
	}
	if refused.Load() != writers {
		t.Fatalf("%d writers refused, want %d", refused.Load(), writers)
	}
	return stored.Load()
}
