package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// The bot side of the turn pipeline (DESIGN.md): every message and custom
// event a user creates is stored as an incoming turn; the Dispatcher runs a
// conversation's turns one at a time, in order, through the bot's Bot.

// Bot runs one incoming turn. Implementations: EchoBot (tests), and the
// JavaScript runtime.
type Bot interface {
	HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error
}

// BotResolver returns the Bot that runs a bot's turns; (nil, nil) means
// the bot has nothing to run and its turns complete without effect.
type BotResolver func(ctx context.Context, botID string) (Bot, error)

// SetBots sets the resolver of Bot implementations.
func (s *Service) SetBots(r BotResolver) {
	s.chat.mu.Lock()
	s.chat.bots = r
	s.chat.mu.Unlock()
}

func (s *Service) botFor(ctx context.Context, botID string) (Bot, error) {
	s.chat.mu.RLock()
	r := s.chat.bots
	s.chat.mu.RUnlock()
	if r == nil {
		return nil, nil
	}
	return r(ctx, botID)
}

// TurnInput is what a bot gets for one incoming turn.
type TurnInput struct {
	BotID          string
	ConversationID string
	UserID         string
	// Seq orders the conversation's turns.
	Seq int64
	// Event is the incoming bot event.
	Event BotEvent
	// Message is the stored message, in its Chat API shape, for message
	// turns; nil for custom events.
	Message *ChatMessageView
}

// BotEvent is the data of an incoming (or outgoing) bot event, from which
// runtimes build their `event` object.
type BotEvent struct {
	// ID identifies the event. For a message it is the message id (a
	// message's event has no row of its own), so a re-run sees the same id.
	ID string
	// Type is the message payload type ("text", "image", ...) or
	// "chat:custom" for a Chat API custom event.
	Type           string
	Direction      string
	Payload        json.RawMessage
	CreatedAt      time.Time
	UserID         string
	ConversationID string
	MessageID      string // empty for custom events
}

// BotOutput is how a bot acts during a turn, as the bot's own user (whose
// id is the bot id). What it creates is stored, then signalled with
// isBot:true; it is outgoing, so it never becomes a turn itself.
type BotOutput interface {
	CreateMessage(ctx context.Context, m OutgoingMessage) (*ChatMessageView, error)
	CreateEvent(ctx context.Context, e OutgoingEvent) error
}

// OutgoingMessage is a message a bot sends. ConversationID defaults to the
// turn's conversation.
type OutgoingMessage struct {
	ConversationID string
	Payload        json.RawMessage
	Metadata       json.RawMessage
}

// OutgoingEvent is a custom event a bot sends; listeners see it as an
// event_created with id null.
type OutgoingEvent struct {
	ConversationID string
	Payload        json.RawMessage
}

// turnOutput implements BotOutput for one turn.
type turnOutput struct {
	s     *Service
	botID string
	conv  string
	last  time.Time // replies sort strictly after what they answer
}

func (o *turnOutput) convID(id string) string {
	if id == "" {
		return o.conv
	}
	return id
}

func (o *turnOutput) CreateMessage(ctx context.Context, in OutgoingMessage) (*ChatMessageView, error) {
	m, err := o.s.botCreateMessage(ctx, o.botID, o.convID(in.ConversationID), in.Payload, in.Metadata, o.last, o.conv)
	if err != nil {
		return nil, err
	}
	o.last = m.CreatedAt
	v := ChatMessage(m)
	return &v, nil
}

func (o *turnOutput) CreateEvent(ctx context.Context, in OutgoingEvent) error {
	return o.s.botCreateEvent(ctx, o.botID, o.convID(in.ConversationID), in.Payload, o.conv)
}

// laterThan returns now, or prev + 1 ms when now is not strictly later:
// the clients sort messages by millisecond timestamps.
func laterThan(prev time.Time) time.Time {
	t := model.Now()
	if !t.After(prev) {
		t = prev.Add(time.Millisecond)
	}
	return t
}

// BotCreateMessage stores a message from the bot (authored by the bot id)
// with its message_created signal (isBot:true), then publishes it. Its
// createdAt is strictly after `after`.
func (s *Service) BotCreateMessage(ctx context.Context, botID, convID string, payload, metadata json.RawMessage, after time.Time) (*model.Message, error) {
	return s.botCreateMessage(ctx, botID, convID, payload, metadata, after, "")
}

// botCreateMessage skips the conversation check for known, the conversation
// of the running turn (it existed when the turn was read; if it was deleted
// since, the insert fails as not found).
func (s *Service) botCreateMessage(ctx context.Context, botID, convID string, payload, metadata json.RawMessage, after time.Time, known string) (*model.Message, error) {
	p, err := model.ValidateMessagePayload(payload)
	if err != nil {
		return nil, err
	}
	var meta json.RawMessage
	if metadata != nil {
		if meta, err = model.ValidateMetadata(metadata); err != nil {
			return nil, err
		}
	}
	if convID != known {
		if _, err := s.conversation(ctx, botID, convID); err != nil {
			return nil, err
		}
	}
	m := &model.Message{BotID: botID, ID: model.NewID(), ConversationID: convID, UserID: botID,
		Payload: p, Metadata: meta, Direction: model.DirectionOutgoing, CreatedAt: laterThan(after)}
	sig := &model.Signal{BotID: botID, ConversationID: convID, Type: model.SignalMessageCreated,
		Data: messageCreatedData(m, true), CreatedAt: m.CreatedAt}
	if err := s.commitSignal(ctx, sig, nil, func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) }); err != nil {
		return nil, err
	}
	return m, nil
}

// BotCreateEvent signals a custom event from the bot: event_created with
// id null and isBot:true. Bot events have no stored row; the signal log
// keeps them.
func (s *Service) BotCreateEvent(ctx context.Context, botID, convID string, payload json.RawMessage) error {
	return s.botCreateEvent(ctx, botID, convID, payload, "")
}

// botCreateEvent skips the conversation check for known, as
// botCreateMessage does (if it was deleted since, the signal's append
// fails as not found).
func (s *Service) botCreateEvent(ctx context.Context, botID, convID string, payload json.RawMessage, known string) error {
	p, err := model.ValidateEventPayload(payload)
	if err != nil {
		return err
	}
	if convID != known {
		if _, err := s.conversation(ctx, botID, convID); err != nil {
			return err
		}
	}
	e := &model.Event{BotID: botID, ConversationID: convID, UserID: botID, Type: CustomEventType,
		Payload: p, CreatedAt: model.Now()}
	sig := &model.Signal{BotID: botID, ConversationID: convID, Type: model.SignalEventCreated,
		Data: eventCreatedData(e, true), CreatedAt: e.CreatedAt}
	return s.commitSignal(ctx, sig, nil, nil)
}

// turnInput loads what a turn refers to. ok is false when it is gone (a
// message deleted before its turn ran): the turn is then skipped.
func (s *Service) turnInput(ctx context.Context, t *model.Turn) (in *TurnInput, ok bool, err error) {
	p := store.PendingTurn{Turn: t}
	switch t.Kind {
	case model.TurnMessage:
		m, err := s.store.Chat().GetMessage(ctx, t.BotID, t.RefID)
		if err != nil && !model.IsNotFound(err) {
			return nil, false, err
		}
		p.Message = m
	case model.TurnEvent:
		e, err := s.store.Chat().GetEvent(ctx, t.BotID, t.RefID)
		if err != nil && !model.IsNotFound(err) {
			return nil, false, err
		}
		p.Event = e
	}
	return pendingTurnInput(p)
}

// pendingTurnInput builds a turn's input from what it refers to, read with
// it (store.Chat.PendingTurnInputs). ok is false when that is gone.
func pendingTurnInput(p store.PendingTurn) (in *TurnInput, ok bool, err error) {
	t := p.Turn
	in = &TurnInput{BotID: t.BotID, ConversationID: t.ConversationID, UserID: t.UserID, Seq: t.Seq}
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
		v := ChatMessage(m)
		in.Message = &v
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

// RunTurn runs one stored turn through the bot. It does not complete it.
func (s *Service) RunTurn(ctx context.Context, t *model.Turn) (err error) {
	return s.runTurn(ctx, store.PendingTurn{Turn: t}, false)
}

// runTurn runs a turn; loaded says p carries what the turn refers to
// (PendingTurnInputs), otherwise it is read.
func (s *Service) runTurn(ctx context.Context, p store.PendingTurn, loaded bool) (err error) {
	t := p.Turn
	bot, err := s.botFor(ctx, t.BotID)
	if err != nil || bot == nil {
		return err
	}
	var in *TurnInput
	var ok bool
	if loaded {
		in, ok, err = pendingTurnInput(p)
	} else {
		in, ok, err = s.turnInput(ctx, t)
	}
	if err != nil || !ok {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("bot panicked: %v", p)
		}
	}()
	out := &turnOutput{s: s, botID: t.BotID, conv: t.ConversationID, last: in.Event.CreatedAt}
	return bot.HandleTurn(ctx, in, out)
}
