package turns

// One turn of a conversation's run (Dispatcher.runConversation): running
// it through its bot, and the write that completes or skips it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// completeTurn queues the write that ends a turn that ran (its held
// effects, states and logs, and its deletion: turnOutput.completion), in a
// group commit with other writes, and returns the wait for its outcome.
// If that write fails for good (the conversation was deleted meanwhile, a
// reply no longer fits), the turn is completed without its effects, so a
// conversation is never stuck on a turn that cannot commit.
//
// With leases, fence makes the write commit only while this node still
// holds the conversation's lease at the epoch it took: a node that was
// paused past its lease and taken over commits nothing (store.ErrFenced).
//
// check, when given, runs first in that transaction: its error (such as
// store.ErrTurnBetween) leaves the turn pending, to run again, instead of
// completing it without its effects.
func (d *Dispatcher) completeTurn(ctx context.Context, t *model.Turn, out *turnOutput, run *model.TurnRun, fence *store.Fence, check ...func(ctx context.Context, tx store.Store) error) (wait func() error) {
	full := out.completion(t, false)
	full.Fence = fence
	recordRun(full, t, run)
	if len(check) > 0 {
		apply := full.Apply
		full.Apply = func(ctx context.Context, tx store.Store) error {
			for _, c := range check {
				if err := c(ctx, tx); err != nil {
					return err
				}
			}
			return apply(ctx, tx)
		}
	}
	w := d.commit.Submit(ctx, full)
	return func() error {
		err := w()
		if errors.Is(err, store.ErrFenced) {
			d.log.Warn("turns: lease taken over: the turn's completion is fenced off, another node runs it",
				"bot", t.BotID, "conversation", t.ConversationID, "seq", t.Seq, "node", d.o.Node)
			return err
		}
		if store.TurnRefused(err) {
			return err // refused by check: the turn runs again
		}
		if err == nil || ctx.Err() != nil || out == nil || (len(out.held) == 0 && len(out.finish) == 0) || d.store.Transient(err) {
			// Unavailable for now: the turn stays pending, its run is
			// tried again rather than completed without its effects.
			return err
		}
		d.log.Warn("turns: storing the turn's effects failed; completing it without them", "err", err,
			"bot", t.BotID, "conversation", t.ConversationID, "seq", t.Seq)
		bare := out.completion(t, true)
		bare.Fence = fence
		recordRun(bare, t, run)
		return d.commit.Commit(ctx, bare)
	}
}

// recordRun adds the turn's run (analytics: its time, whether it failed)
// to the write that completes it. The run takes t's number as the write
// runs: a turn committed with its message (Dispatcher.Fold) is numbered
// only then.
func recordRun(w *store.Write, t *model.Turn, run *model.TurnRun) {
	apply := w.Apply
	w.Apply = func(ctx context.Context, tx store.Store) error {
		if err := apply(ctx, tx); err != nil {
			return err
		}
		run.Seq = t.Seq
		return tx.Activity().RecordTurn(ctx, run)
	}
}

// turnEnded counts a turn that ran to its end (the door's average, the
// observer) and logs its failure: a failed turn is not retried (a failing
// bot would otherwise block its conversation forever).
func (d *Dispatcher) turnEnded(t *model.Turn, took time.Duration, err error) {
	d.queue.turnRan(took)
	if d.o.Observer != nil {
		d.o.Observer.TurnRan(took, err != nil)
	}
	if err != nil {
		d.log.Warn("turns: bot failed", "err", err, "bot", t.BotID, "conversation", t.ConversationID, "seq", t.Seq)
	}
}

// skipTurn completes a turn of a conversation in handoff without running
// the bot: the user's message stays stored and shown, the bot does not
// answer it (not after the hand back either).
func (d *Dispatcher) skipTurn(ctx context.Context, t *model.Turn, fence *store.Fence) (wait func() error) {
	w := (*turnOutput)(nil).completion(t, true)
	w.Fence = fence
	return d.commit.Submit(ctx, w)
}

// runTurn runs a pending turn, read with what it refers to
// (store.Chat.PendingTurnInputs), through its bot's Bot. out holds what
// the turn commits with its completion (nil when the bot did not run).
// folded, for the turn of a message not committed yet (Dispatcher.Fold),
// holds its gate and the dialog its conversation's last turn kept.
func (d *Dispatcher) runTurn(ctx context.Context, p store.PendingTurn, attempt int, folded *foldedTurn) (out *turnOutput, err error) {
	t := p.Turn
	bot, err := d.bots(ctx, t.BotID)
	if err != nil || bot == nil {
		return nil, d.retryable(err)
	}
	in, ok, err := pendingTurnInput(p)
	if err != nil || !ok {
		return nil, err
	}
	in.Attempt = attempt
	out = &turnOutput{out: outbox{d.store, d.commit}, botID: t.BotID, conv: t.ConversationID, last: in.Event.CreatedAt}
	if folded != nil {
		out.gate, in.dialog = folded.gate, folded.dialog
	}
	if h, ok := bot.(EffectHolder); ok {
		out.hold = h.HoldsEffects()
	}
	defer func() {
		// Not when the dispatcher stops: the turn stays pending.
		if needsFallback(err, out) && d.ctx.Err() == nil {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			d.sendFallback(fctx, bot, in, out, err)
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("bot panicked: %v", p)
		}
	}()
	err = d.retryable(bot.HandleTurn(ctx, in, out))
	return out, err
}

// retryable makes an error of the database being unavailable for now a
// RetryLater: it is no failure of the turn, which stays pending (no
// fallback, no failed run) and runs again.
func (d *Dispatcher) retryable(err error) error {
	var later *RetryLater
	if err == nil || errors.As(err, &later) || !d.store.Transient(err) {
		return err
	}
	return &RetryLater{Err: err}
}

// pendingTurnInput builds a turn's input from what it refers to, read with
// it (store.Chat.PendingTurnInputs). ok is false when that is gone.
func pendingTurnInput(p store.PendingTurn) (in *TurnInput, ok bool, err error) {
	t := p.Turn
	in = &TurnInput{BotID: t.BotID, ConversationID: t.ConversationID, UserID: t.UserID, Seq: t.Seq, start: p.Start}
	switch t.Kind {
	case model.TurnMessage:
		m := p.Message
		if m == nil {
			return nil, false, nil
		}
		var pl struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(m.Payload, &pl)
		v := wire.NewMessage(m)
		in.Message, in.MessageTags = &v, m.Tags
		in.Event = BotEvent{ID: m.ID, Type: pl.Type, Direction: model.DirectionIncoming, Payload: m.Payload,
			CreatedAt: m.CreatedAt, UserID: m.UserID, ConversationID: m.ConversationID, MessageID: m.ID}
	case model.TurnEvent:
		e := p.Event
		if e == nil {
			return nil, false, nil
		}
		in.Event = BotEvent{ID: e.ID, Type: e.Type, Direction: model.DirectionIncoming, Payload: e.Payload,
			CreatedAt: e.CreatedAt, UserID: e.UserID, ConversationID: e.ConversationID}
	default:
		return nil, false, fmt.Errorf("turn of unknown kind %q", t.Kind)
	}
	return in, true, nil
}
