package turns

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// FoldableBot makes b a bot whose turns Fold may run before their message
// is committed, holding its effects as a code bot does.
func FoldableBot(b Bot) Bot { return foldableBot{b} }

type foldableBot struct{ Bot }

func (foldableBot) foldable()          {}
func (foldableBot) HoldsEffects() bool { return true }

// StepOutside is what a code bot's host does before a Runtime API call or
// a read of the store.
func StepOutside(ctx context.Context, out BotOutput) error {
	if g, ok := out.(effectGate); ok {
		return g.beforeOutside(ctx)
	}
	return nil
}

// StartOf is what the turn starts with when it was read with it (a
// Fold's), or nil.
func StartOf(in *TurnInput) *store.TurnStart { return in.start }

// KeepStart tells the turn changed none of what it started with, as a code
// bot does.
func KeepStart(out BotOutput) {
	if k, ok := out.(startKeeper); ok {
		k.keepStart()
	}
}

// KeepStartWith tells the turn changed nothing of what it started with
// but the states it stores with its completion, as a code bot does.
func KeepStartWith(out BotOutput, user, conv, bot json.RawMessage) {
	if o, ok := out.(*turnOutput); ok {
		o.keepStartWith(user, conv, bot)
	}
}

// SetLeaseLinger sets how long d keeps a lease after its conversation's
// run (leaseLinger), before d starts.
func SetLeaseLinger(d *Dispatcher, linger time.Duration) { d.linger = linger }

// SetMaxClaim sets how long at most d's Folds wait for their
// conversation's run (maxClaimWithin), before d starts.
func SetMaxClaim(d *Dispatcher, v time.Duration) { d.maxClaim = v }

// Parked tells whether ref's lease is parked here, renewed recently
// enough to be reused (Dispatcher.lease).
func Parked(d *Dispatcher, ref model.ConversationRef) bool {
	d.parkMu.Lock()
	defer d.parkMu.Unlock()
	return d.reusable(d.parked[ref])
}

// Released tells whether q holds ref neither queued, running nor claimed
// by a Fold.
func Released(q *Queue, ref model.ConversationRef) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state[ref] == nil
}

// ClaimWithin is how long d's Folds wait for their conversation's last
// run to end.
func ClaimWithin(d *Dispatcher) time.Duration { return d.o.ClaimWithin }

// TakeEpoch is the epoch at which d's folded commit would take ref's
// free lease whose row has epoch after (Dispatcher.takeWithWrite).
func TakeEpoch(d *Dispatcher, ref model.ConversationRef, after int64) int64 {
	fence, _, _ := d.takeWithWrite(ref, after)
	return fence.Epoch
}
