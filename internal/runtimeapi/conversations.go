package runtimeapi

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Conversations are the bot's conversations and their participants.
type Conversations struct{ deps }

// ConversationInput is the body of createConversation and
// getOrCreateConversation.
type ConversationInput struct {
	Channel            string            `json:"channel"`
	Tags               map[string]string `json:"tags"`
	IntegrationName    string            `json:"integrationName"`
	DiscriminateByTags []string          `json:"discriminateByTags"`
}

func (in ConversationInput) conversation(c *Caller) (*model.Conversation, error) {
	botID := c.BotID
	if in.Channel == "" {
		return nil, model.Invalid("channel: required")
	}
	if err := model.ValidateTags("tags", in.Tags); err != nil {
		return nil, err
	}
	integration := in.IntegrationName
	if c.Kind == KindIntegration {
		integration = c.Integration // an integration's conversations are its own
	}
	if integration == "" {
		integration = model.IntegrationChat
	}
	now := model.Now()
	return &model.Conversation{BotID: botID, ID: model.NewID(), Integration: integration, Channel: in.Channel,
		Tags: model.CleanTags(in.Tags), CreatedAt: now, UpdatedAt: now}, nil
}

// Create creates a conversation.
func (s *Conversations) Create(ctx context.Context, c *Caller, in ConversationInput) (*model.Conversation, error) {
	if err := c.require("createConversation"); err != nil {
		return nil, err
	}
	conv, err := in.conversation(c)
	if err != nil {
		return nil, err
	}
	if c.Kind != KindIntegration && s.creation != nil && in.IntegrationName != "" {
		id, handled, err := s.creation.CreateConversation(ctx, c.BotID, in.IntegrationName, in.Channel, conv.Tags)
		if err != nil {
			return nil, err
		}
		if handled {
			got, err := s.store.Chat().GetConversation(ctx, c.BotID, id)
			return got, orNotFound(err, "Conversation", id)
		}
	}
	if err := s.store.Chat().CreateConversation(ctx, conv); err != nil {
		return nil, err
	}
	return conv, nil
}

// Get returns a conversation.
func (s *Conversations) Get(ctx context.Context, c *Caller, id string) (*model.Conversation, error) {
	if err := c.require("getConversation"); err != nil {
		return nil, err
	}
	conv, err := s.store.Chat().GetConversation(ctx, c.BotID, id)
	return conv, orNotFound(err, "Conversation", id)
}

// MessageCount counts a conversation's messages (the Conversation
// object's messageCount).
func (s *Conversations) MessageCount(ctx context.Context, c *Caller, id string) (int, error) {
	return s.store.Chat().CountMessages(ctx, c.BotID, id)
}

// GetOrCreate returns the conversation of the integration and channel
// whose tags match on the keys of discriminateByTags (every tag when
// empty), creating it when none does.
func (s *Conversations) GetOrCreate(ctx context.Context, c *Caller, in ConversationInput) (*model.Conversation, bool, error) {
	if err := c.require("getOrCreateConversation"); err != nil {
		return nil, false, err
	}
	conv, err := in.conversation(c)
	if err != nil {
		return nil, false, err
	}
	if match := pick(conv.Tags, in.DiscriminateByTags); len(match) > 0 {
		found, err := s.store.Chat().FindConversationByTags(ctx, c.BotID, conv.Integration, conv.Channel, match)
		if err == nil {
			return found, false, nil
		}
		if !model.IsNotFound(err) {
			return nil, false, err
		}
	}
	if err := s.store.Chat().CreateConversation(ctx, conv); err != nil {
		return nil, false, err
	}
	return conv, true, nil
}

// ConversationUpdate is the body of updateConversation.
type ConversationUpdate struct {
	Tags TagPatch `json:"tags"`
}

// Update changes a conversation's tags.
func (s *Conversations) Update(ctx context.Context, c *Caller, id string, in ConversationUpdate) (*model.Conversation, error) {
	if err := c.require("updateConversation"); err != nil {
		return nil, err
	}
	if err := in.Tags.validate("tags"); err != nil {
		return nil, err
	}
	var conv *model.Conversation
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if conv, err = tx.Chat().GetConversation(ctx, c.BotID, id); err != nil {
			return orNotFound(err, "Conversation", id)
		}
		conv.Tags = in.Tags.apply(conv.Tags)
		conv.UpdatedAt = model.Now()
		return tx.Chat().UpdateConversation(ctx, conv)
	})
	if err != nil {
		return nil, err
	}
	return conv, nil
}

// Delete deletes a conversation with its messages, events and
// participants.
func (s *Conversations) Delete(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteConversation"); err != nil {
		return err
	}
	if err := s.store.Chat().DeleteConversation(ctx, c.BotID, id); err != nil {
		return orNotFound(err, "Conversation", id)
	}
	if s.chat != nil {
		s.chat.ConversationDeleted(c.BotID, id)
	}
	return nil
}

// ListConversationsQuery is the query of listConversations.
type ListConversationsQuery struct {
	NextToken       string
	PageSize        int
	Tags            map[string]string
	ParticipantIDs  []string
	IntegrationName string
	Channel         string
	SortField       string
	SortDirection   string
}

// List lists conversations, newest first unless sorted otherwise.
func (s *Conversations) List(ctx context.Context, c *Caller, q ListConversationsQuery) ([]*model.Conversation, string, error) {
	if err := c.require("listConversations"); err != nil {
		return nil, "", err
	}
	asc, err := ascending(q.SortDirection)
	if err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListConversationsBy(ctx, c.BotID, store.ConversationFilter{Tags: q.Tags, ParticipantIDs: q.ParticipantIDs,
		Integration: q.IntegrationName, Channel: q.Channel, SortField: q.SortField, Ascending: asc}, page(q.NextToken, q.PageSize))
}

// AddParticipant adds a user to a conversation (participant_added is
// signalled to the Chat API's listeners). Adding a participant twice is
// not an error.
func (s *Conversations) AddParticipant(ctx context.Context, c *Caller, convID, userID string) (*model.ChatUser, error) {
	if err := c.require("addParticipant"); err != nil {
		return nil, err
	}
	if userID == "" {
		return nil, model.Invalid("userId: required")
	}
	if _, err := s.store.Chat().GetConversation(ctx, c.BotID, convID); err != nil {
		return nil, orNotFound(err, "Conversation", convID)
	}
	u, err := s.store.Chat().GetUser(ctx, c.BotID, userID)
	if err != nil {
		return nil, orNotFound(err, "User", userID)
	}
	in, err := s.store.Chat().IsParticipant(ctx, c.BotID, convID, userID)
	if err != nil || in {
		return u, err
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalParticipantAdded,
		Data: wire.ParticipantData(convID, userID), CreatedAt: model.Now()}
	err = s.commit.Commit(ctx, &store.Write{Signal: sig, Apply: func(ctx context.Context, tx store.Store) error {
		return tx.Chat().AddParticipant(ctx, c.BotID, convID, userID, sig.CreatedAt)
	}})
	if err != nil && model.TypeOf(err) != model.ErrAlreadyExists {
		return nil, err
	}
	return u, nil
}

// GetParticipant returns a participant of a conversation.
func (s *Conversations) GetParticipant(ctx context.Context, c *Caller, convID, userID string) (*model.ChatUser, error) {
	if err := c.require("getParticipant"); err != nil {
		return nil, err
	}
	if _, err := s.store.Chat().GetConversation(ctx, c.BotID, convID); err != nil {
		return nil, orNotFound(err, "Conversation", convID)
	}
	in, err := s.store.Chat().IsParticipant(ctx, c.BotID, convID, userID)
	if err != nil {
		return nil, err
	}
	if !in {
		return nil, notFound("Participant", userID)
	}
	u, err := s.store.Chat().GetUser(ctx, c.BotID, userID)
	return u, orNotFound(err, "Participant", userID)
}

// RemoveParticipant removes a user from a conversation.
func (s *Conversations) RemoveParticipant(ctx context.Context, c *Caller, convID, userID string) error {
	if err := c.require("removeParticipant"); err != nil {
		return err
	}
	if _, err := s.GetParticipant(ctx, BotCaller(c.BotID), convID, userID); err != nil {
		return err
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalParticipantRemoved,
		Data: wire.ParticipantData(convID, userID), CreatedAt: model.Now()}
	err := s.commit.Commit(ctx, &store.Write{Signal: sig, Apply: func(ctx context.Context, tx store.Store) error {
		return tx.Chat().RemoveParticipant(ctx, c.BotID, convID, userID)
	}})
	s.participantsChanged(c.BotID)
	return orNotFound(err, "Participant", userID)
}

// ListParticipants lists a conversation's participants, in the order they
// were added.
func (s *Conversations) ListParticipants(ctx context.Context, c *Caller, convID, token string, size int) ([]*model.ChatUser, string, error) {
	if err := c.require("listParticipants"); err != nil {
		return nil, "", err
	}
	if _, err := s.store.Chat().GetConversation(ctx, c.BotID, convID); err != nil {
		return nil, "", orNotFound(err, "Conversation", convID)
	}
	return s.store.Chat().ListParticipants(ctx, c.BotID, convID, page(token, size))
}

// RequestHandoff is Parley's requestHandoff for bots over HTTP (the
// sandbox's client.requestHandoff does the same within a turn): the
// conversation waits for an operator and the bot's turns in it are skipped
// until an operator hands it back. Asking again while the conversation is
// in handoff changes nothing; the handoff it is in is returned.
func (s *Conversations) RequestHandoff(ctx context.Context, c *Caller, convID, reason string) (*model.Handoff, error) {
	if err := c.require("requestHandoff"); err != nil {
		return nil, err
	}
	if len(reason) > model.HandoffReasonMax {
		return nil, model.Invalid("reason: at most %d characters", model.HandoffReasonMax)
	}
	if _, err := s.store.Chat().GetConversation(ctx, c.BotID, convID); err != nil {
		return nil, orNotFound(err, "Conversation", convID)
	}
	h := &model.Handoff{BotID: c.BotID, ConversationID: convID, Status: model.HandoffWaiting, Reason: reason,
		RequestedBy: "bot", RequestedAt: model.Now()}
	created, err := s.store.Handoffs().Request(ctx, h)
	if err != nil || created {
		return h, err
	}
	return s.store.Handoffs().Get(ctx, c.BotID, convID)
}
