package runtimeapi

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Messages are the messages of the bot's conversations. A message whose
// userId is the bot's id is outgoing (the bot's reply: Chat API listeners
// see message_created with isBot true); any other author makes it
// incoming, and it gives the bot a turn, as a Chat API message does.
type Messages struct{ deps }

// MessageInput is the body of createMessage and getOrCreateMessage.
type MessageInput struct {
	ConversationID     string            `json:"conversationId"`
	UserID             string            `json:"userId"`
	Type               string            `json:"type"`
	Payload            json.RawMessage   `json:"payload"`
	Tags               map[string]string `json:"tags"`
	Schedule           *Schedule         `json:"schedule"`
	Origin             string            `json:"origin"`
	DiscriminateByTags []string          `json:"discriminateByTags"`
}

// Schedule is when a scheduled message or event happens.
type Schedule struct {
	DateTime *string `json:"dateTime"`
	Delay    *int64  `json:"delay"`
}

// due returns when the schedule fires.
func (s *Schedule) due(now time.Time) (time.Time, error) {
	switch {
	case s.DateTime != nil && s.Delay != nil:
		return time.Time{}, model.Invalid("schedule: give either dateTime or delay, not both")
	case s.DateTime != nil:
		t, err := time.Parse(time.RFC3339Nano, *s.DateTime)
		if err != nil {
			return time.Time{}, model.Invalid("schedule.dateTime: must be an ISO 8601 date")
		}
		return t.UTC().Truncate(time.Millisecond), nil
	case s.Delay != nil:
		if *s.Delay < 0 {
			return time.Time{}, model.Invalid("schedule.delay: must not be negative")
		}
		return now.Add(time.Duration(*s.Delay) * time.Millisecond), nil
	}
	return time.Time{}, model.Invalid("schedule: dateTime or delay is required")
}

// storedPayload validates a Runtime message's type and payload and
// returns the stored flat payload {type, ...payload}. The types the Chat
// API knows are checked with its rules (listeners parse them); other
// types are kept as given.
func storedPayload(typ string, payload json.RawMessage) (json.RawMessage, error) {
	if typ == "" {
		return nil, model.Invalid("type: required")
	}
	obj, err := requireObject("payload", payload, true)
	if err != nil {
		return nil, err
	}
	joined, err := wire.JoinPayload(typ, obj)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(model.PayloadTypes, typ) {
		return joined, nil
	}
	if typ == "bloc" {
		joined = wire.FlattenBloc(joined)
	}
	return model.ValidateMessagePayload(joined)
}

// prepare validates in and builds the message with its signal and turn.
func (s *Messages) prepare(ctx context.Context, c *Caller, in MessageInput, at time.Time) (*store.Write, *model.Message, error) {
	if in.ConversationID == "" {
		return nil, nil, model.Invalid("conversationId: required")
	}
	if in.UserID == "" {
		return nil, nil, model.Invalid("userId: required")
	}
	if in.Schedule != nil {
		return nil, nil, model.Invalid("schedule: scheduled messages are not supported; schedule an event instead")
	}
	payload, err := storedPayload(in.Type, in.Payload)
	if err != nil {
		return nil, nil, err
	}
	if err := model.ValidateTags("tags", in.Tags); err != nil {
		return nil, nil, err
	}
	if _, err := s.store.Chat().GetConversation(ctx, c.BotID, in.ConversationID); err != nil {
		return nil, nil, orNotFound(err, "Conversation", in.ConversationID)
	}
	incoming := in.UserID != c.BotID
	if incoming {
		if _, err := s.store.Chat().GetUser(ctx, c.BotID, in.UserID); err != nil {
			return nil, nil, orNotFound(err, "User", in.UserID)
		}
	}
	m := &model.Message{BotID: c.BotID, ID: model.NewID(), ConversationID: in.ConversationID, UserID: in.UserID,
		Payload: payload, Tags: model.CleanTags(in.Tags), Direction: model.DirectionOutgoing, CreatedAt: at}
	if len(m.Tags) == 0 {
		m.Tags = nil
	}
	w := &store.Write{Apply: func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) }}
	w.Signal = &model.Signal{BotID: c.BotID, ConversationID: m.ConversationID, Type: model.SignalMessageCreated,
		Data: wire.MessageCreatedData(m, !incoming), CreatedAt: m.CreatedAt}
	if incoming {
		m.Direction = model.DirectionIncoming
		w.Turn = &model.Turn{BotID: c.BotID, ConversationID: m.ConversationID, Kind: model.TurnMessage, RefID: m.ID,
			UserID: m.UserID, CreatedAt: m.CreatedAt}
	}
	return w, m, nil
}

// Create stores a message, signals it and, when a user wrote it, gives
// the bot its turn.
func (s *Messages) Create(ctx context.Context, c *Caller, in MessageInput) (*model.Message, error) {
	if err := c.require("createMessage"); err != nil {
		return nil, err
	}
	if c.Kind == KindBot && s.replies != nil && in.UserID == c.BotID && in.ConversationID != "" {
		defer s.replies.ReplyStarted(c.BotID, in.ConversationID)()
	}
	at := model.Now()
	if in.ConversationID != "" {
		at = model.MessageTime(model.ConversationRef{BotID: c.BotID, ConversationID: in.ConversationID}, time.Time{})
	}
	w, m, err := s.prepare(ctx, c, in, at)
	if err != nil {
		return nil, err
	}
	if m.Direction == model.DirectionOutgoing {
		// A reply of the bot while one of its turns is in flight on the
		// conversation (an SDK bot's turn, store.Deliveries): the k-th
		// reply of a turn delivered again is the one already stored.
		seq, k, storedID, inTurn, err := s.store.Deliveries().NextReply(ctx, c.BotID, m.ConversationID)
		if err != nil {
			return nil, err
		}
		if inTurn && storedID != "" {
			if stored, err := s.store.Chat().GetMessage(ctx, c.BotID, storedID); err == nil {
				return stored, nil
			} else if !model.IsNotFound(err) {
				return nil, err
			}
		}
		if inTurn {
			create := w.Apply
			w.Apply = func(ctx context.Context, tx store.Store) error {
				if err := create(ctx, tx); err != nil {
					return err
				}
				return tx.Deliveries().RecordReply(ctx, c.BotID, m.ConversationID, seq, k, m.ID)
			}
		}
	}
	if err := s.commit.Commit(ctx, w); err != nil {
		return nil, err
	}
	return m, nil
}

// GetOrCreate returns the conversation's message whose tags match on the
// keys of discriminateByTags (every tag when empty), creating it when none
// does.
func (s *Messages) GetOrCreate(ctx context.Context, c *Caller, in MessageInput) (*model.Message, bool, error) {
	if err := c.require("getOrCreateMessage"); err != nil {
		return nil, false, err
	}
	if err := model.ValidateTags("tags", in.Tags); err != nil {
		return nil, false, err
	}
	if match := pick(model.CleanTags(in.Tags), in.DiscriminateByTags); len(match) > 0 && in.ConversationID != "" {
		m, err := s.store.Chat().FindMessageByTags(ctx, c.BotID, in.ConversationID, match)
		if err == nil {
			return m, false, nil
		}
		if !model.IsNotFound(err) {
			return nil, false, err
		}
	}
	m, err := s.Create(ctx, c, in)
	return m, err == nil, err
}

// Get returns a message.
func (s *Messages) Get(ctx context.Context, c *Caller, id string) (*model.Message, error) {
	if err := c.require("getMessage"); err != nil {
		return nil, err
	}
	m, err := s.store.Chat().GetMessage(ctx, c.BotID, id)
	return m, orNotFound(err, "Message", id)
}

// MessageUpdate is the body of updateMessage.
type MessageUpdate struct {
	Tags    TagPatch        `json:"tags"`
	Payload json.RawMessage `json:"payload"`
}

// Update changes a message's tags and payload (its type stays).
func (s *Messages) Update(ctx context.Context, c *Caller, id string, in MessageUpdate) (*model.Message, error) {
	if err := c.require("updateMessage"); err != nil {
		return nil, err
	}
	if err := in.Tags.validate("tags"); err != nil {
		return nil, err
	}
	if in.Payload != nil {
		if _, err := requireObject("payload", in.Payload, true); err != nil {
			return nil, err
		}
	}
	var m *model.Message
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if m, err = tx.Chat().GetMessage(ctx, c.BotID, id); err != nil {
			return orNotFound(err, "Message", id)
		}
		if in.Payload != nil {
			typ, _ := wire.SplitPayload(m.Payload)
			if m.Payload, err = storedPayload(typ, in.Payload); err != nil {
				return err
			}
		}
		m.Tags = in.Tags.apply(m.Tags)
		m.UpdatedAt = model.Now()
		return tx.Chat().UpdateMessage(ctx, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Delete deletes a message (message_deleted is signalled).
func (s *Messages) Delete(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteMessage"); err != nil {
		return err
	}
	m, err := s.store.Chat().GetMessage(ctx, c.BotID, id)
	if err != nil {
		return orNotFound(err, "Message", id)
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: m.ConversationID, Type: model.SignalMessageDeleted,
		Data: wire.MessageDeletedData(m), CreatedAt: model.Now()}
	err = s.commit.Commit(ctx, &store.Write{Signal: sig, Apply: func(ctx context.Context, tx store.Store) error {
		return tx.Chat().DeleteMessage(ctx, c.BotID, id)
	}})
	return orNotFound(err, "Message", id)
}

// ListMessagesQuery is the query of listMessages.
type ListMessagesQuery struct {
	NextToken      string
	PageSize       int
	ConversationID string
	Tags           map[string]string
}

// List lists messages, newest first.
func (s *Messages) List(ctx context.Context, c *Caller, q ListMessagesQuery) ([]*model.Message, string, error) {
	if err := c.require("listMessages"); err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListMessagesBy(ctx, c.BotID, store.MessageFilter{ConversationID: q.ConversationID, Tags: q.Tags},
		page(q.NextToken, q.PageSize))
}

// ImportInput is one message of importMessages.
type ImportInput struct {
	ConversationID     string            `json:"conversationId"`
	UserID             string            `json:"userId"`
	Type               string            `json:"type"`
	Payload            json.RawMessage   `json:"payload"`
	Tags               map[string]string `json:"tags"`
	CreatedAt          string            `json:"createdAt"`
	DiscriminateByTags []string          `json:"discriminateByTags"`
}

// MaxImport is the most messages one importMessages call takes.
const MaxImport = 100

// Import stores past messages with their own creation dates, all or none.
// Imported messages are history: they are signalled but give the bot no
// turn.
func (s *Messages) Import(ctx context.Context, c *Caller, in []ImportInput) ([]*model.Message, error) {
	if err := c.require("importMessages"); err != nil {
		return nil, err
	}
	if len(in) > MaxImport {
		return nil, model.Invalid("messages: at most %d messages per call", MaxImport)
	}
	writes := make([]*store.Write, 0, len(in))
	out := make([]*model.Message, 0, len(in))
	for i, im := range in {
		at, err := time.Parse(time.RFC3339Nano, im.CreatedAt)
		if err != nil {
			return nil, model.Invalid("messages[%d].createdAt: must be an ISO 8601 date", i)
		}
		w, m, err := s.prepare(ctx, c, MessageInput{ConversationID: im.ConversationID, UserID: im.UserID, Type: im.Type,
			Payload: im.Payload, Tags: im.Tags}, at.UTC().Truncate(time.Millisecond))
		if err != nil {
			return nil, err
		}
		w.Turn = nil
		writes = append(writes, w)
		out = append(out, m)
	}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		for _, w := range writes {
			if err := w.Apply(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// IncomingInput is the body of initializeIncomingMessage: the user and
// conversation by id or by tags, and optionally the message.
type IncomingInput struct {
	UserID         string             `json:"userId"`
	User           *UserInput         `json:"user"`
	ConversationID string             `json:"conversationId"`
	Conversation   *ConversationInput `json:"conversation"`
	Message        *struct {
		Type               string            `json:"type"`
		Payload            json.RawMessage   `json:"payload"`
		Tags               map[string]string `json:"tags"`
		DiscriminateByTags []string          `json:"discriminateByTags"`
	} `json:"message"`
}

// Incoming is the result of initializeIncomingMessage.
type Incoming struct {
	User         *model.ChatUser
	Conversation *model.Conversation
	Message      *model.Message // nil when none was asked for
}

// InitializeIncoming gets or creates the user and the conversation, makes
// the user a participant, and gets or creates the message: what an
// integration does when a message arrives.
func (s *Messages) InitializeIncoming(ctx context.Context, c *Caller, in IncomingInput) (*Incoming, error) {
	if err := c.require("initializeIncomingMessage"); err != nil {
		return nil, err
	}
	users, convs := &Users{s.deps}, &Conversations{s.deps}
	var out Incoming
	var err error
	switch {
	case in.UserID != "":
		out.User, err = users.Get(ctx, c, in.UserID)
	case in.User != nil:
		out.User, _, err = users.GetOrCreate(ctx, c, *in.User)
	default:
		err = model.Invalid("userId or user: required")
	}
	if err != nil {
		return nil, err
	}
	switch {
	case in.ConversationID != "":
		out.Conversation, err = convs.Get(ctx, c, in.ConversationID)
	case in.Conversation != nil:
		out.Conversation, _, err = convs.GetOrCreate(ctx, c, *in.Conversation)
	default:
		err = model.Invalid("conversationId or conversation: required")
	}
	if err != nil {
		return nil, err
	}
	if _, err := convs.AddParticipant(ctx, c, out.Conversation.ID, out.User.ID); err != nil {
		return nil, err
	}
	if in.Message != nil {
		out.Message, _, err = s.GetOrCreate(ctx, c, MessageInput{ConversationID: out.Conversation.ID, UserID: out.User.ID,
			Type: in.Message.Type, Payload: in.Message.Payload, Tags: in.Message.Tags, DiscriminateByTags: in.Message.DiscriminateByTags})
		if err != nil {
			return nil, err
		}
	}
	return &out, nil
}
