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

// testDeleteWhileWriting deletes a conversation while writers commit
// messages to it, each with its signal, through the group commit. Every
// write either committed before the delete, and went with it, or failed
// as not found; none is left behind: the conversation made again under
// the same id has no message and no signal.
func testDeleteWhileWriting(t *testing.T, db store.DB) {
	ctx := t.Context()
	f := setup(t, db)
	newUser(t, db, f.bot.ID, "u")
	committer := db.NewCommitter(nil)
	const writers, rounds = 8, 3
	for round := range rounds {
		conv := newConv(t, db, f.bot.ID, "c", "u", round)
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
					m := &model.Message{BotID: f.bot.ID, ConversationID: conv.ID, UserID: "u", Direction: model.DirectionIncoming,
						Payload: json.RawMessage(fmt.Sprintf(`{"text":"w%d-%d"}`, w, i))}
					err := committer.Commit(ctx, &store.Write{
						Apply:  func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) },
						Signal: &model.Signal{BotID: f.bot.ID, ConversationID: conv.ID, Type: model.SignalMessageCreated, Data: json.RawMessage(`{}`)},
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
						if err := db.Chat().DeleteConversation(ctx, f.bot.ID, conv.ID); err != nil {
							errs <- err
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: a write or the delete failed: %v", round, err)
		}
		if refused.Load() != writers {
			t.Fatalf("round %d: %d writers refused, want %d", round, refused.Load(), writers)
		}
		newConv(t, db, f.bot.ID, "c", "u", round)
		ms, _, err := db.Chat().ListMessages(ctx, f.bot.ID, "c", store.Page{})
		ok(t, err)
		sg, err := db.Signals().SignalsAfter(ctx, f.bot.ID, "c", 0, 10)
		ok(t, err)
		if len(ms) != 0 || len(sg) != 0 {
			t.Fatalf("round %d (%d stored before the delete): %d messages and %d signals outlived their conversation", round, stored.Load(), len(ms), len(sg))
		}
		ok(t, db.Chat().DeleteConversation(ctx, f.bot.ID, "c"))
	}
}
