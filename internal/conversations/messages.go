package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Messages and events of the Chat API (and the Webchat API's, which come
// through here with their own payload rules).

// MessageInput is the body of the Chat API's createMessage.
type MessageInput struct {
	ConversationID *string         `json:"conversationId"`
	Payload        json.RawMessage `json:"payload"`
	Metadata       json.RawMessage `json:"metadata"`
}

// Validate checks the body with model.ValidateMessagePayload (the Chat
// API's payload rules) and model.ValidateMetadata.
func (in MessageInput) Validate() (IncomingMessage, error) {
	if in.Payload == nil {
		return IncomingMessage{}, model.Invalid("payload: required")
	}
	payload, err := model.ValidateMessagePayload(in.Payload)
	if err != nil {
		return IncomingMessage{}, err
	}
	return newIncoming(in.ConversationID, payload, in.Metadata)
}

// WebchatMessageInput is the body of the Webchat API's createMessage.
type WebchatMessageInput MessageInput

// Validate checks the body with model.ValidateWebchatMessagePayload, the
// webchat's payload rules: bloc items arrive in the bot form {type,
// payload:{...}} and are flattened to the Chat API form; file payloads
// lose their fileId (the URL is kept); and a text payload keeps the
// `value` of the button the user clicked ({type:"text", text:<label>,
// value:<value>}, as the component sends a choice button click), so that bots see event.payload.value and
// workflow choices match the value before the label.
func (in WebchatMessageInput) Validate() (IncomingMessage, error) {
	if in.Payload == nil {
		return IncomingMessage{}, model.Invalid("payload: required")
	}
	payload, err := model.ValidateWebchatMessagePayload(wire.FlattenBloc(in.Payload))
	if err != nil {
		return IncomingMessage{}, err
	}
	return newIncoming(in.ConversationID, payload, in.Metadata)
}

// IncomingMessage is a validated user message, whichever API it came
// through.
type IncomingMessage struct {
	ConversationID string
	Payload        json.RawMessage
	Metadata       json.RawMessage
}

func newIncoming(convID *string, payload, metadata json.RawMessage) (IncomingMessage, error) {
	if convID == nil || *convID == "" {
		return IncomingMessage{}, model.Invalid("conversationId: required")
	}
	in := IncomingMessage{ConversationID: *convID, Payload: payload}
	if metadata != nil {
		var err error
		if in.Metadata, err = model.ValidateMetadata(metadata); err != nil {
			return IncomingMessage{}, err
		}
	}
	return in, nil
}

// CreateMessage stores a participant's message with its message_created
// signal and the bot's turn, then publishes.
func (s *Chat) CreateMessage(ctx context.Context, c *Caller, in MessageInput) (*model.Message, error) {
	msg, err := in.Validate()
	if err != nil {
		return nil, err
	}
	return s.createIncomingMessage(ctx, c, msg)
}

// createIncomingMessage stores a user's message with its signal and turn.
func (s *Chat) createIncomingMessage(ctx context.Context, c *Caller, in IncomingMessage) (*model.Message, error) {
	convID := in.ConversationID
	recheck, err := s.participation(ctx, c, convID)
	if err != nil {
		return nil, err
	}
	if s.door != nil {
		release, err := s.door.Admit(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	m := &model.Message{BotID: c.BotID, ID: model.NewID(), ConversationID: convID, UserID: c.UserID,
		Payload: in.Payload, Metadata: in.Metadata, Direction: model.DirectionIncoming,
		CreatedAt: model.MessageTime(model.ConversationRef{BotID: c.BotID, ConversationID: convID}, time.Time{})}
	turn := &model.Turn{BotID: c.BotID, ConversationID: convID, Kind: model.TurnMessage, RefID: m.ID,
		UserID: c.UserID, CreatedAt: m.CreatedAt}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalMessageCreated,
		Data: wire.MessageCreatedData(m, false), CreatedAt: m.CreatedAt}
	w := &store.Write{Signal: sig, Turn: turn, Local: true,
		Apply: func(ctx context.Context, tx store.Store) error {
			if recheck != nil {
				if err := tx.Chat().RequireParticipant(ctx, c.BotID, convID, c.UserID); err != nil {
					return err
				}
			}
			return tx.Chat().CreateMessage(ctx, m)
		}}
	if err := s.commitMessage(ctx, w, m); err != nil {
		if recheck != nil && errors.Is(err, store.ErrNotParticipant) {
			return nil, recheck.refused(ctx)
		}
		return nil, err
	}
	if recheck != nil {
		recheck.held()
	}
	return m, nil
}

// commitMessage commits a user's message: with its bot's answer when the
// Folder can, else alone.
func (s *Chat) commitMessage(ctx context.Context, w *store.Write, m *model.Message) error {
	if s.folder != nil {
		if ok, err := s.folder.Fold(ctx, w, m); ok {
			return err
		}
	}
	return s.commit.Commit(ctx, w)
}

// commitSignal runs write, appends sig and enqueues turn (if any) in one
// write of the Committer (shared with concurrent writes on SQLite, so write
// must be re-runnable); after the commit, the Committer's hook publishes
// sig and wakes the turn dispatcher.
func (s *Chat) commitSignal(ctx context.Context, sig *model.Signal, turn *model.Turn, write func(ctx context.Context, tx store.Store) error) error {
	return s.commit.Commit(ctx, &store.Write{Apply: write, Signal: sig, Turn: turn})
}

// GetMessage returns a message of a conversation the caller is in.
func (s *Chat) GetMessage(ctx context.Context, c *Caller, id string) (*model.Message, error) {
	m, err := s.store.Chat().GetMessage(ctx, c.BotID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound("Message " + quote(id))
	}
	if err != nil {
		return nil, err
	}
	if err := s.requireParticipant(ctx, c, m.ConversationID); err != nil {
		return nil, err
	}
	return m, nil
}

// DeleteMessage deletes the caller's own message in a conversation the
// caller still takes part in, and signals message_deleted. Its
// message_created signal is rewritten in the log (store.Chat
// RedactMessageSignal), so a stream replaying from before the deletion
// never receives the deleted content.
func (s *Chat) DeleteMessage(ctx context.Context, c *Caller, id string) error {
	m, err := s.store.Chat().GetMessage(ctx, c.BotID, id)
	if model.IsNotFound(err) {
		return model.NotFound("Message " + quote(id))
	}
	if err != nil {
		return err
	}
	if m.UserID != c.UserID {
		return model.Forbidden("Only the author of a message can delete it")
	}
	// A participant removed from the conversation keeps no right on it.
	if err := s.requireParticipant(ctx, c, m.ConversationID); err != nil {
		return err
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: m.ConversationID, Type: model.SignalMessageDeleted,
		Data: wire.MessageDeletedData(m), CreatedAt: model.Now()}
	err = s.commitSignal(ctx, sig, nil, func(ctx context.Context, tx store.Store) error {
		if err := tx.Chat().DeleteMessage(ctx, c.BotID, id); err != nil {
			return err
		}
		return tx.Signals().RedactMessageSignal(ctx, c.BotID, m.ConversationID, id, sig.Type, sig.Data)
	})
	if model.IsNotFound(err) {
		return model.NotFound("Message " + quote(id))
	}
	return err
}

// EventInput is the body of createEvent; no other property is allowed.
type EventInput struct {
	ConversationID *string         `json:"conversationId"`
	Payload        json.RawMessage `json:"payload"`
}

// CreateEvent stores a custom event with its event_created signal and
// the bot's turn, then publishes.
func (s *Chat) CreateEvent(ctx context.Context, c *Caller, in EventInput) (*model.Event, error) {
	if in.ConversationID == nil || *in.ConversationID == "" {
		return nil, model.Invalid("conversationId: required")
	}
	if in.Payload == nil {
		return nil, model.Invalid("payload: required")
	}
	payload, err := model.ValidateEventPayload(in.Payload)
	if err != nil {
		return nil, err
	}
	convID := *in.ConversationID
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, err
	}
	e := &model.Event{BotID: c.BotID, ID: model.NewID(), ConversationID: convID, UserID: c.UserID,
		Type: model.ChatCustomEventType, Payload: payload, CreatedAt: model.Now()}
	turn := &model.Turn{BotID: c.BotID, ConversationID: convID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: c.UserID, CreatedAt: e.CreatedAt}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalEventCreated,
		Data: wire.EventCreatedData(e, false), CreatedAt: e.CreatedAt}
	if err := s.commitSignal(ctx, sig, turn, func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateEvent(ctx, e) }); err != nil {
		return nil, err
	}
	return e, nil
}

// GetEvent returns an event of a conversation the caller is in.
func (s *Chat) GetEvent(ctx context.Context, c *Caller, id string) (*model.Event, error) {
	e, err := s.store.Chat().GetEvent(ctx, c.BotID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound("Event " + quote(id))
	}
	if err != nil {
		return nil, err
	}
	if err := s.requireParticipant(ctx, c, e.ConversationID); err != nil {
		return nil, err
	}
	return e, nil
}
