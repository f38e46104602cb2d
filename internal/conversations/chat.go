package conversations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Chat implements the Chat API's operations (the 21 of @botpress/chat 0.5.5)
// on a bot's conversational data. Every create stores what it creates, its
// signal and (for user input) the bot's incoming turn in one write of the
// store's Committer: the signal is published and the turn dispatcher woken
// only after the commit (the Committer's after-commit hook), so nothing
// announced can be lost.
type Chat struct {
	store   store.Store
	commit  store.Committer
	streams StreamCloser
	door    Door
	folder  Folder
	cache   caches // read caches of the hot path, and the peers told of changes (cache.go)
}

// Door admits users' messages that give the bot a turn (turns.Door):
// Wait waits in the door's line while the bots are behind, and returns a
// context with which Admit does not wait again; release is called once
// the message is stored or failed; an error (RateLimited, with Metadata
// "retryAfter") refuses the message before anything is stored. Nil admits
// everything.
type Door interface {
	Wait(ctx context.Context) (context.Context, error)
	Admit(ctx context.Context) (release func(), err error)
}

// Wait waits at the door while the bots are behind: the message handlers
// call it before reading the request's body, and pass the context it
// returns on (nil error: come in).
func (s *Chat) Wait(ctx context.Context) (context.Context, error) {
	if s.door == nil {
		return ctx, nil
	}
	return s.door.Wait(ctx)
}

// StreamCloser ends live streams (the realtime hub): those of a deleted
// conversation, and those of a bot authenticated with a credential
// (Scope.KeyID) that is no longer valid.
type StreamCloser interface {
	CloseConversation(botID, conversationID string)
	EndBotStreams(botID string, keep func(credential string) bool)
}

// NewChat returns the Chat API's use cases; door (may be nil) bounds the
// turns waiting for the bots; peers (may be nil) are the other nodes
// sharing the database, told of the changes to what they cache.
func NewChat(st store.Store, commit store.Committer, streams StreamCloser, door Door, folder Folder, peers Peers) *Chat {
	return &Chat{store: st, commit: commit, streams: streams, door: door, folder: folder, cache: caches{peers: peers}}
}

// Folder commits a user's message with its bot's answer when the bot
// answers at once (turns.Queue.Fold); ok is false when it did nothing,
// and the message is committed as any write. Nil: always so.
type Folder interface {
	Fold(ctx context.Context, w *store.Write, m *model.Message) (ok bool, err error)
}

// BotChanged forgets what the caches hold of a bot whose integrations
// changed or that was deleted (administration calls it after the commit):
// a rotated encryption key or a disabled Chat API takes effect for the
// next request on this node.
//
// It also ends the bot's streams opened with user keys signed by another
// encryption key than the current one (a rotation), or all of them when
// the Chat API is disabled or the bot is gone. The other nodes are told,
// and do the same (Changed).
func (s *Chat) BotChanged(botID string) {
	s.botChanged(botID)
	s.cache.tell(ChangedBot, botID, "")
}

// botChanged is BotChanged on this node.
func (s *Chat) botChanged(botID string) {
	s.cache.forgetAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	current := ""
	ins, err := s.store.Bots().Integrations(ctx, botID)
	if err != nil && !model.IsNotFound(err) {
		return // keep the streams: the next change retries
	}
	for _, in := range ins {
		if in.Name == model.IntegrationChat && in.Enabled {
			if key, _ := in.Configuration[model.ChatEncryptionKey].(string); key != "" {
				current = keyID(key)
			}
		}
	}
	s.streams.EndBotStreams(botID, func(cred string) bool { return current != "" && cred == current })
}

// keyID fingerprints an encryption key (never the key itself).
func keyID(key string) string {
	h := sha256.Sum256([]byte("parley-key-id:" + key))
	return hex.EncodeToString(h[:12])
}

// MaxProfileLength is upstream's limit on a chat user's profile.
const MaxProfileLength = 1000

// Scope is a bot's Chat API, resolved from its webhook id.
type Scope struct {
	BotID       string
	Integration *model.Integration
	key         string
}

// KeyID fingerprints the scope's encryption key: the credential of the
// streams opened in this scope (realtime.StreamRequest.Credential).
func (sc *Scope) KeyID() string { return keyID(sc.key) }

// SigningKey is the chat integration's encryption key: the HS256 secret of
// user keys, and of the URLs of the files uploaded through the webchat.
func (sc *Scope) SigningKey() string { return sc.key }

// Caller is a request authenticated by a user key. The user may not
// exist (yet): operations that need the stored user load it.
type Caller struct {
	*Scope
	UserID string
}

// Scope resolves a webhook id. Unknown or disabled → ResourceNotFound.
// Resolved scopes are cached (cache.go).
func (s *Chat) Scope(ctx context.Context, webhookID string) (*Scope, error) {
	if webhookID == "" {
		return nil, chatWebhookNotFound()
	}
	c := &s.cache.scopes
	if sc, ok := c.Get(webhookID); ok {
		return sc, nil
	}
	gen := c.Generation()
	in, err := s.store.Bots().IntegrationByWebhook(ctx, webhookID)
	if model.IsNotFound(err) || (err == nil && (in.Name != model.IntegrationChat || !in.Enabled)) {
		return nil, chatWebhookNotFound()
	}
	if err != nil {
		return nil, err
	}
	key, _ := in.Configuration[model.ChatEncryptionKey].(string)
	if key == "" {
		// Never accept keys signed with an empty secret.
		return nil, chatWebhookNotFound()
	}
	sc := &Scope{BotID: in.BotID, Integration: in, key: key}
	c.Put(webhookID, sc, gen, s.cache.ttl())
	return sc, nil
}

// Authenticate verifies an x-user-key: an HS256 JWT signed with the
// integration's encryption key, with a string claim id.
func (s *Chat) Authenticate(sc *Scope, userKey string) (*Caller, error) {
	if userKey == "" {
		return nil, model.Unauthorized("missing user key: send the x-user-key header")
	}
	// Verified keys are cached by (encryption key, user key): a rotated
	// encryption key never matches an entry verified with the old one.
	c := &s.cache.keys
	k := userKeyKey{sc.key, userKey}
	if id, ok := c.Get(k); ok {
		return &Caller{Scope: sc, UserID: id}, nil
	}
	gen := c.Generation()
	id, err := auth.VerifyUserKey(sc.key, userKey)
	if err != nil {
		return nil, model.Unauthorized("Invalid user key")
	}
	if cacheableUserKey(userKey) {
		c.Put(k, id, gen, s.cache.ttl())
	}
	return &Caller{Scope: sc, UserID: id}, nil
}

// UserInput is the body of createUser, getOrCreateUser and updateUser;
// nil fields were not sent.
type UserInput struct {
	ID         *string `json:"id"`
	Name       *string `json:"name"`
	PictureURL *string `json:"pictureUrl"`
	Profile    *string `json:"profile"`
}

func (in *UserInput) validate() error {
	if in.Profile != nil && utf8.RuneCountInString(*in.Profile) > MaxProfileLength {
		return model.Invalid("profile: at most %d characters", MaxProfileLength)
	}
	return nil
}

func (in *UserInput) apply(u *model.ChatUser) {
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
func checkNewUserID(sc *Scope, id string) error {
	if err := model.ValidateFID("id", id); err != nil {
		return err
	}
	if id == sc.BotID {
		return model.Conflict("User %q already exists", id)
	}
	return nil
}

// CreateUser creates a user (unauthenticated) and issues its key.
func (s *Chat) CreateUser(ctx context.Context, sc *Scope, in UserInput) (*model.ChatUser, string, error) {
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

// GetOrCreateUser returns the key's user, creating it on first sight
// (keys may be minted by the integrator for users never seen). Given fields
// update an existing user, as upstream does.
func (s *Chat) GetOrCreateUser(ctx context.Context, c *Caller, in UserInput) (*model.ChatUser, error) {
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
		if err := checkNewUserID(c.Scope, c.UserID); err != nil {
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

func (s *Chat) chatUser(ctx context.Context, botID, id string) (*model.ChatUser, error) {
	u, err := s.store.Chat().GetUser(ctx, botID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound("User " + quote(id))
	}
	return u, err
}

// GetUser returns the caller.
func (s *Chat) GetUser(ctx context.Context, c *Caller) (*model.ChatUser, error) {
	return s.chatUser(ctx, c.BotID, c.UserID)
}

// UpdateUser changes the caller's name, picture or profile.
func (s *Chat) UpdateUser(ctx context.Context, c *Caller, in UserInput) (*model.ChatUser, error) {
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

// DeleteUser deletes the caller (and frees its id).
func (s *Chat) DeleteUser(ctx context.Context, c *Caller) error {
	err := s.store.Chat().DeleteUser(ctx, c.BotID, c.UserID)
	s.cache.participantsChanged(c.BotID)
	if model.IsNotFound(err) {
		return model.NotFound("User " + quote(c.UserID))
	}
	return err
}

// CreateConversation creates a conversation owned by the caller, its
// first participant. The bot posts nothing on creation.
func (s *Chat) CreateConversation(ctx context.Context, c *Caller, id *string) (*model.Conversation, error) {
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
	return s.createConversation(ctx, c, cid, model.IntegrationChat)
}

// createConversation creates a conversation of integration (chat or
// webchat: the integration the bot's events name) owned by the caller.
func (s *Chat) createConversation(ctx context.Context, c *Caller, id, integration string) (*model.Conversation, error) {
	now := model.Now()
	conv := &model.Conversation{BotID: c.BotID, ID: id, OwnerID: c.UserID, Integration: integration, CreatedAt: now, UpdatedAt: now}
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

// GetOrCreateConversation returns the conversation with this id,
// creating it for the caller; an existing one must be the caller's.
func (s *Chat) GetOrCreateConversation(ctx context.Context, c *Caller, id *string) (*model.Conversation, error) {
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
		conv, err = s.createConversation(ctx, c, *id, model.IntegrationChat)
		if model.TypeOf(err) == model.ErrAlreadyExists {
			continue
		}
		return conv, err
	}
	return nil, model.Errorf(model.ErrRelationConflict, "conversation %q is being created concurrently; retry", *id)
}

// GetConversation returns a conversation the caller takes part in.
func (s *Chat) GetConversation(ctx context.Context, c *Caller, id string) (*model.Conversation, error) {
	conv, err := s.conversation(ctx, c.BotID, id)
	if err != nil {
		return nil, err
	}
	if err := s.requireParticipant(ctx, c, id); err != nil {
		return nil, err
	}
	return conv, nil
}

// DeleteConversation deletes a conversation (owner only) with its
// messages, and ends its streams.
func (s *Chat) DeleteConversation(ctx context.Context, c *Caller, id string) error {
	if _, err := s.requireOwner(ctx, c, id); err != nil {
		return err
	}
	err := s.store.Chat().DeleteConversation(ctx, c.BotID, id)
	if err != nil {
		s.cache.participants.Invalidate()
		if model.IsNotFound(err) {
			return model.NotFound("Conversation " + quote(id))
		}
		return err
	}
	s.ConversationDeleted(c.BotID, id)
	return nil
}

// ConversationDeleted is told that a conversation was deleted (here, or
// by another API, the Runtime API): its streams end and the participant
// cache forgets it, here and on the other nodes.
func (s *Chat) ConversationDeleted(botID, conversationID string) {
	s.conversationDeleted(botID, conversationID)
	s.cache.tell(ChangedConversation, botID, conversationID)
}

// conversationDeleted is ConversationDeleted on this node.
func (s *Chat) conversationDeleted(botID, conversationID string) {
	s.cache.participants.Invalidate()
	s.streams.CloseConversation(botID, conversationID)
}

// ParticipantsChanged is told that another API removed a participant of
// one of a bot's conversations or deleted one of its users: the
// participant cache forgets what it knew, here and on the other nodes.
func (s *Chat) ParticipantsChanged(botID string) { s.cache.participantsChanged(botID) }

// ListConversations lists the conversations the caller owns.
func (s *Chat) ListConversations(ctx context.Context, c *Caller, token string) ([]*model.Conversation, string, error) {
	return s.store.Chat().ListConversations(ctx, c.BotID, c.UserID, store.Page{Token: token})
}

// ListMessages lists a conversation's messages, the bot's included.
func (s *Chat) ListMessages(ctx context.Context, c *Caller, convID, token string) ([]*model.Message, string, error) {
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListMessages(ctx, c.BotID, convID, store.Page{Token: token})
}

// AuthorizeListen checks the caller may listen to a conversation.
func (s *Chat) AuthorizeListen(ctx context.Context, c *Caller, convID string) error {
	return s.requireParticipant(ctx, c, convID)
}

// AddParticipant adds an existing user to a conversation (owner only)
// and signals participant_added. Adding a participant again changes
// nothing.
func (s *Chat) AddParticipant(ctx context.Context, c *Caller, convID string, userID *string) (*model.ChatUser, error) {
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
		Data: wire.ParticipantData(convID, u.ID), CreatedAt: model.Now()}
	err = s.commitSignal(ctx, sig, nil, func(ctx context.Context, tx store.Store) error {
		return tx.Chat().AddParticipant(ctx, c.BotID, convID, u.ID, sig.CreatedAt)
	})
	if model.TypeOf(err) == model.ErrAlreadyExists {
		return u, nil
	}
	if err != nil {
		return nil, err
	}
	return u, nil
}

// RemoveParticipant removes a participant (owner only; never the owner)
// and signals participant_removed; the hub ends that user's streams of the
// conversation as it publishes the signal.
func (s *Chat) RemoveParticipant(ctx context.Context, c *Caller, convID, userID string) error {
	conv, err := s.requireOwner(ctx, c, convID)
	if err != nil {
		return err
	}
	if userID == conv.OwnerID {
		return model.Invalid("The owner of a conversation cannot be removed from it")
	}
	sig := &model.Signal{BotID: c.BotID, ConversationID: convID, Type: model.SignalParticipantRemoved,
		Data: wire.ParticipantData(convID, userID), CreatedAt: model.Now()}
	err = s.commitSignal(ctx, sig, nil, func(ctx context.Context, tx store.Store) error {
		return tx.Chat().RemoveParticipant(ctx, c.BotID, convID, userID)
	})
	s.cache.participantsChanged(c.BotID)
	if model.IsNotFound(err) {
		return model.NotFound("Participant " + quote(userID))
	}
	return err
}

// GetParticipant returns a participant (owner only, as upstream).
func (s *Chat) GetParticipant(ctx context.Context, c *Caller, convID, userID string) (*model.ChatUser, error) {
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

// ListParticipants lists participants (participants only).
func (s *Chat) ListParticipants(ctx context.Context, c *Caller, convID, token string) ([]*model.ChatUser, string, error) {
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListParticipants(ctx, c.BotID, convID, store.Page{Token: token})
}

func (s *Chat) conversation(ctx context.Context, botID, id string) (*model.Conversation, error) {
	conv, err := s.store.Chat().GetConversation(ctx, botID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound("Conversation " + quote(id))
	}
	return conv, err
}

func (s *Chat) requireOwner(ctx context.Context, c *Caller, convID string) (*model.Conversation, error) {
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

func chatWebhookNotFound() error {
	return model.Errorf(model.ErrNotFound, "no chat integration with this webhook id")
}
