package service

import (
	"context"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Chat API use cases (contracts/chat-api.md §2.1). Every create stores what
// it creates, its signal and (for user input) the bot's incoming turn in one
// transaction; the signal is published and the dispatcher notified only
// after the commit, so nothing announced can be lost.

// chatState is the Service's Chat API state.
type chatState struct {
	mu     sync.RWMutex
	bots   BotResolver
	commit committer  // group commit of chat writes (chat_commit.go)
	cache  chatCaches // read caches of the hot path (chat_cache.go)
}

// MaxProfileLength is upstream's limit on a chat user's profile.
const MaxProfileLength = 1000

// ChatScope is a bot's Chat API, resolved from its webhook id.
type ChatScope struct {
	BotID       string
	Integration *model.Integration
	key         string
}

// ChatCaller is a request authenticated by a user key. The user may not
// exist (yet): operations that need the stored user load it.
type ChatCaller struct {
	*ChatScope
	UserID string
}

// ChatScope resolves a webhook id. Unknown or disabled → ResourceNotFound.
// Resolved scopes are cached (chat_cache.go).
func (s *Service) ChatScope(ctx context.Context, webhookID string) (*ChatScope, error) {
	if webhookID == "" {
		return nil, chatWebhookNotFound()
	}
	c := &s.chat.cache.scopes
	if sc, ok := c.get(webhookID); ok {
		return sc, nil
	}
	gen := c.generation()
	in, err := s.store.Bots().IntegrationByWebhook(ctx, webhookID)
	if model.IsNotFound(err) || (err == nil && (in.Name != model.IntegrationChat || !in.Enabled)) {
		return nil, chatWebhookNotFound()
	}
	if err != nil {
		return nil, err
	}
	key, _ := in.Configuration[ChatEncryptionKey].(string)
	if key == "" {
		// Never accept keys signed with an empty secret.
		return nil, chatWebhookNotFound()
	}
	sc := &ChatScope{BotID: in.BotID, Integration: in, key: key}
	c.put(webhookID, sc, gen, chatCacheTTL)
	return sc, nil
}

// ChatAuthenticate verifies an x-user-key: an HS256 JWT signed with the
// integration's encryption key, with a string claim id.
func (s *Service) ChatAuthenticate(sc *ChatScope, userKey string) (*ChatCaller, error) {
	if userKey == "" {
		return nil, model.Unauthorized("missing user key: send the x-user-key header")
	}
	// Verified keys are cached by (encryption key, user key): a rotated
	// encryption key never matches an entry verified with the old one.
	c := &s.chat.cache.keys
	k := userKeyKey{sc.key, userKey}
	if id, ok := c.get(k); ok {
		return &ChatCaller{ChatScope: sc, UserID: id}, nil
	}
	gen := c.generation()
	id, err := auth.VerifyUserKey(sc.key, userKey)
	if err != nil {
		return nil, model.Unauthorized("Invalid user key")
	}
	if cacheableUserKey(userKey) {
		c.put(k, id, gen, chatCacheTTL)
	}
	return &ChatCaller{ChatScope: sc, UserID: id}, nil
}

// ChatUserInput is the body of createUser, getOrCreateUser and updateUser;
// nil fields were not sent.
type ChatUserInput struct {
	ID         *string `json:"id"`
	Name       *string `json:"name"`
	PictureURL *string `json:"pictureUrl"`
	Profile    *string `json:"profile"`
}

func (in *ChatUserInput) validate() error {
	if in.Profile != nil && utf8.RuneCountInString(*in.Profile) > MaxProfileLength {
		return model.Invalid("profile: at most %d characters", MaxProfileLength)
	}
	return nil
}

func (in *ChatUserInput) apply(u *model.ChatUser) {
	if in.Name != nil {
		u.Name = *in.Name
	}
	if in.PictureURL != nil {
		u.PictureURL = *in.PictureURL
	}
	if in.Profile != nil {
		u.Profile = *in.Profile
	}
}

// checkNewUserID applies the foreign-id rule to an id being created; the
// bot's own id is reserved (bot replies are authored by it).
func checkNewUserID(sc *ChatScope, id string) error {
	if err := model.ValidateFID("id", id); err != nil {
		return err
	}
	if id == sc.BotID {
		return model.Conflict("User %q already exists", id)
	}
	return nil
}

// ChatCreateUser creates a user (unauthenticated) and issues its key.
func (s *Service) ChatCreateUser(ctx context.Context, sc *ChatScope, in ChatUserInput) (*model.ChatUser, string, error) {
	if err := in.validate(); err != nil {
		return nil, "", err
	}
	id := model.NewID()
	if in.ID != nil {
		if err := checkNewUserID(sc, *in.ID); err != nil {
			return nil, "", err
		}
		id = *in.ID
	}
	now := model.Now()
	u := &model.ChatUser{BotID: sc.BotID, ID: id, CreatedAt: now, UpdatedAt: now}
	in.apply(u)
	if err := s.store.Chat().CreateUser(ctx, u); err != nil {
		if model.TypeOf(err) == model.ErrAlreadyExists {
			return nil, "", model.Conflict("User %q already exists", id)
		}
		return nil, "", err
	}
	key, err := auth.SignUserKey(sc.key, id)
	if err != nil {
		return nil, "", err
	}
	return u, key, nil
}

// ChatGetOrCreateUser returns the key's user, creating it on first sight
// (keys may be minted by the integrator for users never seen). Given fields
// update an existing user, as upstream does.
func (s *Service) ChatGetOrCreateUser(ctx context.Context, c *ChatCaller, in ChatUserInput) (*model.ChatUser, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	for range 3 {
		u, err := s.store.Chat().GetUser(ctx, c.BotID, c.UserID)
		if err == nil {
			if in.Name == nil && in.PictureURL == nil && in.Profile == nil {
				return u, nil
			}
			in.apply(u)
			u.UpdatedAt = model.Now()
			return u, s.store.Chat().UpdateUser(ctx, u)
		}
		if !model.IsNotFound(err) {
			return nil, err
		}
		if err := checkNewUserID(c.ChatScope, c.UserID); err != nil {
			return nil, err
		}
		now := model.Now()
		u = &model.ChatUser{BotID: c.BotID, ID: c.UserID, CreatedAt: now, UpdatedAt: now}
		in.apply(u)
		err = s.store.Chat().CreateUser(ctx, u)
		if model.TypeOf(err) == model.ErrAlreadyExists {
			continue // created concurrently: read it
		}
		return u, err
	}
	return nil, model.Errorf(model.ErrRelationConflict, "user %q is being created concurrently; retry", c.UserID)
}

func (s *Service) chatUser(ctx context.Context, botID, id string) (*model.ChatUser, error) {
	u, err := s.store.Chat().GetUser(ctx, botID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound("User " + quote(id))
	}
	return u, err
}

// ChatGetUser returns the caller.
func (s *Service) ChatGetUser(ctx context.Context, c *ChatCaller) (*model.ChatUser, error) {
	return s.chatUser(ctx, c.BotID, c.UserID)
}

// ChatUpdateUser changes the caller's name, picture or profile.
func (s *Service) ChatUpdateUser(ctx context.Context, c *ChatCaller, in ChatUserInput) (*model.ChatUser, error) {
	if in.ID != nil {
		return nil, model.Invalid("id: cannot be changed")
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	u, err := s.chatUser(ctx, c.BotID, c.UserID)
	if err != nil {
		return nil, err
	}
	in.apply(u)
	u.UpdatedAt = model.Now()
	if err := s.store.Chat().UpdateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

// ChatDeleteUser deletes the caller (and frees its id).
func (s *Service) ChatDeleteUser(ctx context.Context, c *ChatCaller) error {
	err := s.store.Chat().DeleteUser(ctx, c.BotID, c.UserID)
	s.invalidateParticipants()
	if model.IsNotFound(err) {
		return model.NotFound("User " + quote(c.UserID))
	}
	return err
}

// ChatCreateConversation creates a conversation owned by the caller, its
// first participant. The bot posts nothing on creation.
func (s *Service) ChatCreateConversation(ctx context.Context, c *ChatCaller, id *string) (*model.Conversation, error) {
	cid := model.NewID()
	if id != nil {
		if err := model.ValidateFID("id", *id); err != nil {
			return nil, err
		}
		cid = *id
	}
	if _, err := s.chatUser(ctx, c.BotID, c.UserID); err != nil {
		return nil, err
	}
	return s.createConversation(ctx, c, cid)
}

func (s *Service) createConversation(ctx context.Context, c *ChatCaller, id string) (*model.Conversation, error) {
	now := model.Now()
	conv := &model.Conversation{BotID: c.BotID, ID: id, OwnerID: c.UserID, CreatedAt: now, UpdatedAt: now}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Chat().CreateConversation(ctx, conv); err != nil {
			return err
		}
		return tx.Chat().AddParticipant(ctx, c.BotID, id, c.UserID, now)
	})
	if model.TypeOf(err) == model.ErrAlreadyExists {
		return nil, model.Conflict("Conversation %q already exists", id)
	}
	if err != nil {
		return nil, err
	}
	return conv, nil
}

// ChatGetOrCreateConversation returns the conversation with this id,
// creating it for the caller; an existing one must be the caller's.
func (s *Service) ChatGetOrCreateConversation(ctx context.Context, c *ChatCaller, id *string) (*model.Conversation, error) {
	if id == nil {
		return nil, model.Invalid("id: required")
	}
	if err := model.ValidateFID("id", *id); err != nil {
		return nil, err
	}
	for range 3 {
		conv, err := s.store.Chat().GetConversation(ctx, c.BotID, *id)
		if err == nil {
			if conv.OwnerID != c.UserID {
				return nil, model.Forbidden("You are not the owner of this conversation")
			}
			return conv, nil
		}
		if !model.IsNotFound(err) {
			return nil, err
		}
		if _, err := s.chatUser(ctx, c.BotID, c.UserID); err != nil {
			return nil, err
		}
		conv, err = s.createConversation(ctx, c, *id)
		if model.TypeOf(err) == model.ErrAlreadyExists {
			continue
		}
		return conv, err
	}
	return nil, model.Errorf(model.ErrRelationConflict, "conversation %q is being created concurrently; retry", *id)
}

// ChatGetConversation returns a conversation the caller takes part in.
func (s *Service) ChatGetConversation(ctx context.Context, c *ChatCaller, id string) (*model.Conversation, error) {
	conv, err := s.conversation(ctx, c.BotID, id)
	if err != nil {
		return nil, err
	}
	if err := s.requireParticipant(ctx, c, id); err != nil {
		return nil, err
	}
	return conv, nil
}

// ChatDeleteConversation deletes a conversation (owner only) with its
// messages, and ends its streams.
func (s *Service) ChatDeleteConversation(ctx context.Context, c *ChatCaller, id string) error {
	if _, err := s.requireOwner(ctx, c, id); err != nil {
		return err
	}
	err := s.store.Chat().DeleteConversation(ctx, c.BotID, id)
	s.invalidateParticipants()
	if err != nil {
		if model.IsNotFound(err) {
			return model.NotFound("Conversation " + quote(id))
		}
		return err
	}
	if cc, ok := s.pub.(conversationCloser); ok {
		cc.CloseConversation(c.BotID, id)
	}
	return nil
}

// conversationCloser is a Publisher that can end a conversation's streams.
type conversationCloser interface {
	CloseConversation(botID, conversationID string)
}

// ChatListConversations lists the conversations the caller owns.
func (s *Service) ChatListConversations(ctx context.Context, c *ChatCaller, token string) ([]*model.Conversation, string, error) {
	return s.store.Chat().ListConversations(ctx, c.BotID, c.UserID, store.Page{Token: token})
}

// ChatListMessages lists a conversation's messages, the bot's included.
func (s *Service) ChatListMessages(ctx context.Context, c *ChatCaller, convID, token string) ([]*model.Message, string, error) {
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListMessages(ctx, c.BotID, convID, store.Page{Token: token})
}

// ChatAuthorizeListen checks the caller may listen to a conversation.
func (s *Service) ChatAuthorizeListen(ctx context.Context, c *ChatCaller, convID string) error {
	return s.requireParticipant(ctx, c, convID)
}

// ChatAddParticipant adds an existing user to a conversation (owner only)
// and signals participant_added. Adding a participant again changes
// nothing.
func (s *Service) ChatAddParticipant(ctx context.Context, c *ChatCaller, convID string, userID *string) (*model.ChatUser, error) {
	if userID == nil || *userID == "" {
		return nil, model.Invalid("userId: required")
	}
	if _, err := s.requireOwner(ctx, c, convID); err != nil {
		return nil, err
	}
	u, err := s.chatUser(ctx, c.BotID, *userID)
	if err != nil {
		return nil, err
	}
	if ok, err := s.store.Chat().IsParticipant(ctx, c.BotID, convID, u.ID); err != nil || ok {
		return u, err
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalParticipantAdded,
		Data: participantData(convID, u.ID), CreatedAt: model.Now()}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Chat().AddParticipant(ctx, c.BotID, convID, u.ID, sig.CreatedAt); err != nil {
			return err
		}
		return tx.Chat().AppendSignal(ctx, sig)
	})
	if model.TypeOf(err) == model.ErrAlreadyExists {
		return u, nil
	}
	if err != nil {
		return nil, err
	}
	s.pub.Publish(sig)
	return u, nil
}

// ChatRemoveParticipant removes a participant (owner only; never the owner)
// and signals participant_removed; the hub ends that user's streams of the
// conversation as it publishes the signal.
func (s *Service) ChatRemoveParticipant(ctx context.Context, c *ChatCaller, convID, userID string) error {
	conv, err := s.requireOwner(ctx, c, convID)
	if err != nil {
		return err
	}
	if userID == conv.OwnerID {
		return model.Invalid("The owner of a conversation cannot be removed from it")
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalParticipantRemoved,
		Data: participantData(convID, userID), CreatedAt: model.Now()}
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Chat().RemoveParticipant(ctx, c.BotID, convID, userID); err != nil {
			return err
		}
		return tx.Chat().AppendSignal(ctx, sig)
	})
	s.invalidateParticipants()
	if model.IsNotFound(err) {
		return model.NotFound("Participant " + quote(userID))
	}
	if err != nil {
		return err
	}
	s.pub.Publish(sig)
	return nil
}

// ChatGetParticipant returns a participant (owner only, as upstream).
func (s *Service) ChatGetParticipant(ctx context.Context, c *ChatCaller, convID, userID string) (*model.ChatUser, error) {
	if _, err := s.requireOwner(ctx, c, convID); err != nil {
		return nil, err
	}
	ok, err := s.store.Chat().IsParticipant(ctx, c.BotID, convID, userID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, model.NotFound("Participant " + quote(userID))
	}
	return s.chatUser(ctx, c.BotID, userID)
}

// ChatListParticipants lists participants (participants only).
func (s *Service) ChatListParticipants(ctx context.Context, c *ChatCaller, convID, token string) ([]*model.ChatUser, string, error) {
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListParticipants(ctx, c.BotID, convID, store.Page{Token: token})
}

// ChatMessageInput is the body of createMessage.
type ChatMessageInput struct {
	ConversationID *string         `json:"conversationId"`
	Payload        json.RawMessage `json:"payload"`
	Metadata       json.RawMessage `json:"metadata"`
}

// ChatCreateMessage stores a participant's message with its
// message_created signal and the bot's turn, then publishes.
func (s *Service) ChatCreateMessage(ctx context.Context, c *ChatCaller, in ChatMessageInput) (*model.Message, error) {
	return s.createIncomingMessage(ctx, c, in, model.ValidateMessagePayload)
}

// createIncomingMessage stores a user's message with its signal and turn;
// validate is the payload rule of the interface it came through.
func (s *Service) createIncomingMessage(ctx context.Context, c *ChatCaller, in ChatMessageInput, validate func(json.RawMessage) (json.RawMessage, error)) (*model.Message, error) {
	if in.ConversationID == nil || *in.ConversationID == "" {
		return nil, model.Invalid("conversationId: required")
	}
	if in.Payload == nil {
		return nil, model.Invalid("payload: required")
	}
	payload, err := validate(in.Payload)
	if err != nil {
		return nil, err
	}
	var meta json.RawMessage
	if in.Metadata != nil {
		if meta, err = model.ValidateMetadata(in.Metadata); err != nil {
			return nil, err
		}
	}
	convID := *in.ConversationID
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, err
	}
	m := &model.Message{BotID: c.BotID, ID: model.NewID(), ConversationID: convID, UserID: c.UserID,
		Payload: payload, Metadata: meta, Direction: model.DirectionIncoming, CreatedAt: model.Now()}
	turn := &model.Turn{BotID: c.BotID, ConversationID: convID, Kind: model.TurnMessage, RefID: m.ID,
		UserID: c.UserID, CreatedAt: m.CreatedAt}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalMessageCreated,
		Data: messageCreatedData(m, false), CreatedAt: m.CreatedAt}
	if err := s.commitSignal(ctx, sig, turn, func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateMessage(ctx, m) }); err != nil {
		return nil, err
	}
	return m, nil
}

// commitWithSignal runs write, appends sig and enqueues turn (if any) in
// one transaction; after the commit it publishes sig and wakes the turn
// dispatcher. The transaction is a group commit shared with concurrent
// writes (chat_commit.go); write must be re-runnable.
func (s *Service) commitWithSignal(ctx context.Context, sig *model.Signal, turn *model.Turn, write func(tx store.Store) error) error {
	return s.commitSignal(ctx, sig, turn, func(_ context.Context, tx store.Store) error { return write(tx) })
}

// commitSignal is commitWithSignal with write run under the batch's
// context.
func (s *Service) commitSignal(ctx context.Context, sig *model.Signal, turn *model.Turn, write func(ctx context.Context, tx store.Store) error) error {
	w := &commitWrite{write: write, sig: sig, turn: turn}
	if turn != nil {
		w.notify = &model.ConversationRef{BotID: turn.BotID, ConversationID: turn.ConversationID}
	}
	return s.commit(ctx, w)
}

// ChatGetMessage returns a message of a conversation the caller is in.
func (s *Service) ChatGetMessage(ctx context.Context, c *ChatCaller, id string) (*model.Message, error) {
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

// ChatDeleteMessage deletes the caller's own message and signals
// message_deleted.
func (s *Service) ChatDeleteMessage(ctx context.Context, c *ChatCaller, id string) error {
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
	sig := &model.Signal{BotID: c.BotID, ConversationID: m.ConversationID, Type: model.SignalMessageDeleted,
		Data: messageDeletedData(m), CreatedAt: model.Now()}
	err = s.commitSignal(ctx, sig, nil, func(ctx context.Context, tx store.Store) error { return tx.Chat().DeleteMessage(ctx, c.BotID, id) })
	if model.IsNotFound(err) {
		return model.NotFound("Message " + quote(id))
	}
	return err
}

// ChatEventInput is the body of createEvent; no other property is allowed.
type ChatEventInput struct {
	ConversationID *string         `json:"conversationId"`
	Payload        json.RawMessage `json:"payload"`
}

// CustomEventType is the bot-side type of a Chat API custom event.
const CustomEventType = "chat:custom"

// ChatCreateEvent stores a custom event with its event_created signal and
// the bot's turn, then publishes.
func (s *Service) ChatCreateEvent(ctx context.Context, c *ChatCaller, in ChatEventInput) (*model.Event, error) {
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
		Type: CustomEventType, Payload: payload, CreatedAt: model.Now()}
	turn := &model.Turn{BotID: c.BotID, ConversationID: convID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: c.UserID, CreatedAt: e.CreatedAt}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalEventCreated,
		Data: eventCreatedData(e, false), CreatedAt: e.CreatedAt}
	if err := s.commitSignal(ctx, sig, turn, func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateEvent(ctx, e) }); err != nil {
		return nil, err
	}
	return e, nil
}

// ChatGetEvent returns an event of a conversation the caller is in.
func (s *Service) ChatGetEvent(ctx context.Context, c *ChatCaller, id string) (*model.Event, error) {
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

func (s *Service) conversation(ctx context.Context, botID, id string) (*model.Conversation, error) {
	conv, err := s.store.Chat().GetConversation(ctx, botID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound("Conversation " + quote(id))
	}
	return conv, err
}

// requireParticipant is at most one read on the hot path (a participant
// implies the conversation exists), none when the participation is cached
// (chat_cache.go); only a refusal reads the conversation, to tell 404 from
// 403.
func (s *Service) requireParticipant(ctx context.Context, c *ChatCaller, convID string) error {
	pc := &s.chat.cache.participants
	k := participantKey{c.BotID, convID, c.UserID}
	if _, ok := pc.get(k); ok {
		return nil
	}
	gen := pc.generation()
	ok, err := s.store.Chat().IsParticipant(ctx, c.BotID, convID, c.UserID)
	if err != nil {
		return err
	}
	if ok {
		pc.put(k, true, gen, chatCacheTTL)
		return nil
	}
	if _, err := s.conversation(ctx, c.BotID, convID); err != nil {
		return err
	}
	return model.Forbidden("You are not a participant in this conversation")
}

func (s *Service) requireOwner(ctx context.Context, c *ChatCaller, convID string) (*model.Conversation, error) {
	conv, err := s.conversation(ctx, c.BotID, convID)
	if err != nil {
		return nil, err
	}
	if conv.OwnerID != c.UserID {
		return nil, model.Forbidden("Only the owner of this conversation can do this")
	}
	return conv, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
