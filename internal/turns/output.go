package turns

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// outbox stores what bots send: a message or event authored by the bot id,
// with its signal (isBot:true), through the Committer (published after the
// commit).
type outbox struct {
	store  store.Store
	commit store.Committer
}

// createMessage stores a bot message whose createdAt is strictly after
// `after`. It skips the conversation check for known, the conversation of
// the running turn (it existed when the turn was read; if it was deleted
// since, the insert fails as not found).
func (o outbox) createMessage(ctx context.Context, botID, convID string, payload, metadata json.RawMessage, after time.Time, known string) (*model.Message, error) {
	w, m, err := o.messageWrite(ctx, botID, convID, payload, metadata, after, known)
	if err != nil {
		return nil, err
	}
	if err := o.commit.Commit(ctx, w); err != nil {
		return nil, err
	}
	return m, nil
}

// messageWrite validates a bot message and builds its write (the message
// and its signal), uncommitted.
func (o outbox) messageWrite(ctx context.Context, botID, convID string, payload, metadata json.RawMessage, after time.Time, known string) (*store.Write, *model.Message, error) {
	p, err := model.ValidateMessagePayload(payload)
	if err != nil {
		return nil, nil, err
	}
	var meta json.RawMessage
	if metadata != nil {
		if meta, err = model.ValidateMetadata(metadata); err != nil {
			return nil, nil, err
		}
	}
	if convID != known {
		if err := o.requireConversation(ctx, botID, convID); err != nil {
			return nil, nil, err
		}
	}
	m := &model.Message{BotID: botID, ID: model.NewID(), ConversationID: convID, UserID: botID,
		Payload: p, Metadata: meta, Direction: model.DirectionOutgoing,
		CreatedAt: model.MessageTime(model.ConversationRef{BotID: botID, ConversationID: convID}, after)}
	sig := &model.Signal{BotID: botID, ConversationID: convID, Type: model.SignalMessageCreated,
		Data: wire.MessageCreatedData(m, true), CreatedAt: m.CreatedAt}
	return &store.Write{Signal: sig, Local: true,
		Apply: func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) }}, m, nil
}

// createEvent signals a custom event from the bot: event_created with id
// null and isBot:true. Bot events have no stored row; the signal log keeps
// them. It skips the conversation check for known, as createMessage does.
func (o outbox) createEvent(ctx context.Context, botID, convID string, payload json.RawMessage, known string) error {
	w, err := o.eventWrite(ctx, botID, convID, payload, known)
	if err != nil {
		return err
	}
	return o.commit.Commit(ctx, w)
}

// eventWrite validates a bot event and builds its write, uncommitted.
func (o outbox) eventWrite(ctx context.Context, botID, convID string, payload json.RawMessage, known string) (*store.Write, error) {
	p, err := model.ValidateEventPayload(payload)
	if err != nil {
		return nil, err
	}
	if convID != known {
		if err := o.requireConversation(ctx, botID, convID); err != nil {
			return nil, err
		}
	}
	e := &model.Event{BotID: botID, ConversationID: convID, UserID: botID, Type: model.ChatCustomEventType,
		Payload: p, CreatedAt: model.Now()}
	sig := &model.Signal{BotID: botID, ConversationID: convID, Type: model.SignalEventCreated,
		Data: wire.EventCreatedData(e, true), CreatedAt: e.CreatedAt}
	return &store.Write{Signal: sig, Local: true}, nil
}

func (o outbox) requireConversation(ctx context.Context, botID, convID string) error {
	_, err := o.store.Chat().GetConversation(ctx, botID, convID)
	if model.IsNotFound(err) {
		b, _ := json.Marshal(convID)
		return model.NotFound("Conversation " + string(b))
	}
	return err
}

// turnOutput implements BotOutput for one turn. When hold is set (an
// EffectHolder's turn), what the bot sends is kept in held and committed
// with the turn's completion (Dispatcher.completeTurn); otherwise it is
// committed as it is sent.
type turnOutput struct {
	out   outbox
	botID string
	conv  string
	last  time.Time // replies sort strictly after what they answer
	hold  bool

	held   []*store.Write                                    // the bot's messages and events, in order
	finish []func(ctx context.Context, tx store.Store) error // WithCompletion
	shared bool                                              // a WithCompletion that is not local
	states []store.StateKey                                  // the states outside the conversation its completions write
	// sent and refused count the turn's messages stored (or held) and
	// refused (a turn whose every reply was refused gets the fallback
	// message).
	sent, refused int
	// handoff is set when the bot asked for a human (RequestHandoff).
	handoff bool
	// startKept is set by a bot whose turn changed none of what a turn
	// starts with (its user, conversation and states; startKeeper).
	startKept bool
	// setStates, when set, are the states (user, conversation, bot; nil:
	// unchanged) of a turn that changed nothing else of its start
	// (keepStartWith).
	setStates *[3]json.RawMessage
	// nextDialog is the workflow dialog the turn leaves stored, kept with
	// its start for the next turn (keptStart.dialog).
	nextDialog *keptDialog
	// gate, when set, runs before the turn's first step outside what its
	// completion holds (a Runtime API call, a read of the store): the
	// turn of a message not committed yet (Dispatcher.Fold) commits it
	// first, so that nothing outside sees the turn before its message.
	gate func(context.Context) error
}

// effectGate is the BotOutput of a turn that must be told before it
// steps outside what its completion holds (turnOutput.gate).
type effectGate interface {
	beforeOutside(ctx context.Context) error
}

func (o *turnOutput) beforeOutside(ctx context.Context) error {
	if o.gate == nil {
		return nil
	}
	return o.gate(ctx)
}

// startKeeper is the BotOutput of a turn whose bot can tell it changed
// none of what a turn starts with: the conversation's next turn in the
// same batch then starts from the batch's read instead of reading again
// (store.PendingTurn.Start).
type startKeeper interface{ keepStart() }

func (o *turnOutput) keepStart() { o.startKept = true }

// keepStartWith tells the turn changed nothing of what a turn starts with
// but the states it stores with its completion (user, conversation, bot;
// nil: unchanged).
func (o *turnOutput) keepStartWith(user, conv, bot json.RawMessage) {
	o.setStates = &[3]json.RawMessage{user, conv, bot}
}

// nextStart is what the conversation's next turn starts with, after this
// one that started from start, when the turn told (keepStart,
// keepStartWith).
func (o *turnOutput) nextStart(start store.TurnStart) (store.TurnStart, bool) {
	switch {
	case o.handoff: // the conversation waits for a human: its next turn is skipped
		return start, false
	case o.startKept:
		return start, true
	case o.setStates != nil:
		for i, to := range []*json.RawMessage{&start.UserState, &start.ConvState, &start.BotState} {
			if st := o.setStates[i]; st != nil {
				*to = st
			}
		}
		return start, true
	}
	return start, false
}

// RequestHandoff hands the conversation over to humans with the turn's
// completion: it waits for an operator, and the bot's next turns in it
// are skipped until the hand back. Asking again while in handoff changes
// nothing.
func (o *turnOutput) RequestHandoff(ctx context.Context, conversationID, reason string) error {
	if len(reason) > model.HandoffReasonMax {
		return model.Invalid("reason: at most %d characters", model.HandoffReasonMax)
	}
	conv := o.convID(conversationID)
	if conv != o.conv {
		if err := o.out.requireConversation(ctx, o.botID, conv); err != nil {
			return err
		}
	}
	h := &model.Handoff{BotID: o.botID, ConversationID: conv, Status: model.HandoffWaiting, Reason: reason,
		RequestedBy: "bot", RequestedAt: model.Now()}
	request := func(ctx context.Context, tx store.Store) error {
		_, err := tx.Handoffs().Request(ctx, h)
		return err
	}
	if conv != o.conv { // another conversation's row: not local
		o.WithCompletion(request)
		return nil
	}
	o.WithLocalCompletion(request)
	o.handoff = true
	return nil
}

func (o *turnOutput) convID(id string) string {
	if id == "" {
		return o.conv
	}
	return id
}

func (o *turnOutput) CreateMessage(ctx context.Context, in OutgoingMessage) (*wire.Message, error) {
	var m *model.Message
	var err error
	if o.hold {
		var w *store.Write
		if w, m, err = o.out.messageWrite(ctx, o.botID, o.convID(in.ConversationID), in.Payload, in.Metadata, o.last, o.conv); err == nil {
			o.held = append(o.held, w)
		}
	} else {
		m, err = o.out.createMessage(ctx, o.botID, o.convID(in.ConversationID), in.Payload, in.Metadata, o.last, o.conv)
	}
	if err != nil {
		o.refused++
		return nil, err
	}
	o.sent++
	o.last = m.CreatedAt
	v := wire.NewMessage(m)
	return &v, nil
}

func (o *turnOutput) CreateEvent(ctx context.Context, in OutgoingEvent) error {
	if !o.hold {
		return o.out.createEvent(ctx, o.botID, o.convID(in.ConversationID), in.Payload, o.conv)
	}
	w, err := o.out.eventWrite(ctx, o.botID, o.convID(in.ConversationID), in.Payload, o.conv)
	if err == nil {
		o.held = append(o.held, w)
	}
	return err
}

func (o *turnOutput) WithCompletion(apply func(ctx context.Context, tx store.Store) error, states ...store.StateKey) {
	o.finish = append(o.finish, apply)
	o.shared = true
	o.states = append(o.states, states...)
}

func (o *turnOutput) WithLocalCompletion(apply func(ctx context.Context, tx store.Store) error) {
	o.finish = append(o.finish, apply)
}

func (o *turnOutput) WithStatesCompletion(states []store.StateKey, apply func(ctx context.Context, tx store.Store) error) {
	o.finish = append(o.finish, apply)
	o.states = append(o.states, states...)
}

// completion is the one write that ends a turn: the held messages and
// events (with their signals, in order), what WithCompletion added, and
// the turn's deletion. Without effects (a failed turn, or dropEffects
// after the full write failed), it is only the deletion.
func (o *turnOutput) completion(t *model.Turn, dropEffects bool) *store.Write {
	var held []*store.Write
	var finish []func(ctx context.Context, tx store.Store) error
	var states []store.StateKey
	local := true
	if o != nil && !dropEffects {
		held, finish, local, states = o.held, o.finish, !o.shared, o.states
	}
	for _, h := range held {
		ref := h.Conversation()
		local = local && h.Local && ref.BotID == t.BotID && ref.ConversationID == t.ConversationID
	}
	w := &store.Write{Local: local && len(states) == 0, SharedStates: states, SharesMore: !local,
		Ref: model.ConversationRef{BotID: t.BotID, ConversationID: t.ConversationID},
		Apply: func(ctx context.Context, tx store.Store) error {
			for _, h := range held {
				if h.Apply != nil {
					if err := h.Apply(ctx, tx); err != nil {
						return err
					}
				}
			}
			for _, f := range finish {
				if err := f(ctx, tx); err != nil {
					return err
				}
			}
			return tx.Signals().CompleteTurn(ctx, t.BotID, t.ConversationID, t.Seq)
		}}
	for _, h := range held {
		w.More = append(w.More, h.Signal)
	}
	return w
}
