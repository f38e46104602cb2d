package turns

// What a folded turn starts with, kept from the conversation's last one.

import (
	"context"
	"errors"
	"sync"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// keptStarts' bounds: beyond maxKeptStarts conversations, one's start is
// forgotten; a start whose states (and workflow dialog) take more than
// maxKeptStateBytes is not kept (a few thousand starts then hold a few
// megabytes at most).
const (
	maxKeptStarts     = 4096
	maxKeptStateBytes = 8 << 10
)

// keptStarts remembers, per conversation, what its next turn starts with
// (its user, conversation and states, and its last turn's number), once a
// folded turn committed having changed none of it (startKeeper). The next
// message of the same user there folds without reading the store first
// (States.GetIdleTurn, a read on a connection whose page cache every
// commit dropped: 13 % of the CPU of a message): its turn starts from the
// kept start, and its completion commits only if, read in the commit's
// transaction on the writer's warm connection, the store still holds that
// start and no handoff (stillHolds). Anything else that changed it (a
// state set through the API, the user updated, a handoff) leaves the turn
// pending: the dispatcher runs it again from the store, as it does when
// another turn came in between.
type keptStarts struct {
	mu sync.Mutex
	m  map[model.ConversationRef]keptStart
}

type keptStart struct {
	userID string
	start  store.TurnStart
	seq    int64 // the conversation's last turn number
	// dialog is the workflow dialog the last turn stored or left as it
	// found it; nil: not kept (a code bot's turn), the next turn reads it.
	dialog *keptDialog
}

// keptDialog is a conversation's workflow dialog state as the store holds
// it after a turn (raw nil: none stored). Only the conversation's turns
// write it (a dialog timeout is a turn too), so the last-turn check that
// every folded commit makes also tells the kept dialog still holds.
type keptDialog struct{ raw []byte }

// foldedTurn is what the turn of a message not committed yet gets beyond
// its pending turn: the gate it passes before it steps outside what its
// completion holds, and the dialog its conversation's last turn kept.
type foldedTurn struct {
	gate   func(context.Context) error
	dialog *keptDialog
}

// take removes and returns the conversation's kept start when it is the
// user's.
func (k *keptStarts) take(ref model.ConversationRef, userID string) (keptStart, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ks, ok := k.m[ref]
	if ok {
		delete(k.m, ref)
	}
	return ks, ok && ks.userID == userID
}

// drop forgets the conversation's kept start.
func (k *keptStarts) drop(ref model.ConversationRef) {
	k.mu.Lock()
	delete(k.m, ref)
	k.mu.Unlock()
}

func (k *keptStarts) put(ref model.ConversationRef, ks keptStart) {
	size := len(ks.start.UserState) + len(ks.start.ConvState) + len(ks.start.BotState)
	if ks.dialog != nil {
		size += len(ks.dialog.raw)
	}
	if size > maxKeptStateBytes {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[model.ConversationRef]keptStart{}
	}
	if _, ok := k.m[ref]; !ok && len(k.m) >= maxKeptStarts {
		for old := range k.m { // any one
			delete(k.m, old)
			break
		}
	}
	k.m[ref] = ks
}

// stillHolds is the ThenIf of a turn that started from a kept start: the
// store, checked in the commit's transaction, still holds that start, and
// the conversation is not in handoff (States.RequireTurnStart: on SQLite
// told from the store's count of start changes, or else read on the
// writer's warm connection; on PostgreSQL written to fail in
// the server, so the pipelined commit needs no answer before its COMMIT,
// and the group commit then commits the write without its Then).
func stillHolds(ref model.ConversationRef, ks keptStart) func(ctx context.Context, tx store.Store) (bool, error) {
	return func(ctx context.Context, tx store.Store) (bool, error) {
		err := tx.States().RequireTurnStart(ctx, ref.BotID, ks.userID, ref.ConversationID, ks.start)
		if errors.Is(err, store.ErrStartChanged) {
			return false, nil
		}
		return err == nil, err
	}
}
