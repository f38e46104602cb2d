package conversations

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Webchat implements the Webchat API's operations (those the official @botpress/webchat component calls; docs/webchat.md).
// The webchat is another door to the same conversational data as the Chat
// API: a webchat user is a chat user of the bot, its key is a Chat API user
// key (signed with the chat integration's encryption key), and every write
// goes through the Chat API's use cases, so the rules (participants,
// signals, turns) are the same whichever door a message came through.
type Webchat struct {
	chat      *Chat
	store     store.Store
	publicURL string
}

// NewWebchat returns the Webchat API's use cases; publicURL is the base of
// the URLs given to the component.
func NewWebchat(chat *Chat, publicURL string) *Webchat {
	return &Webchat{chat: chat, store: chat.store, publicURL: strings.TrimRight(publicURL, "/")}
}

// Scope is a bot's Webchat API, resolved from its client id.
type WebchatScope struct {
	*Scope
	Bot     *model.Bot
	Webchat *model.Integration
}

// webchatNotFound carries "[Webhook Handler]" so that the component shows
// its "Invalid Client ID" screen rather than a generic error.
func webchatNotFound() error {
	return model.Errorf(model.ErrNotFound, "[Webhook Handler] no webchat with this client id")
}

// Scope resolves a client id. Unknown, disabled, or a bot whose
// chat integration has no key: ResourceNotFound.
func (s *Webchat) Scope(ctx context.Context, clientID string) (*WebchatScope, error) {
	if clientID == "" {
		return nil, webchatNotFound()
	}
	in, err := s.store.Bots().IntegrationByWebhook(ctx, clientID)
	if model.IsNotFound(err) || (err == nil && (in.Name != model.IntegrationWebchat || !in.Enabled)) {
		return nil, webchatNotFound()
	}
	if err != nil {
		return nil, err
	}
	b, err := s.store.Bots().GetByID(ctx, in.BotID)
	if model.IsNotFound(err) {
		return nil, webchatNotFound()
	}
	if err != nil {
		return nil, err
	}
	ins, err := s.store.Bots().Integrations(ctx, in.BotID)
	if err != nil {
		return nil, err
	}
	var chatIn *model.Integration
	for _, i := range ins {
		if i.Name == model.IntegrationChat {
			chatIn = i
		}
	}
	if chatIn == nil {
		return nil, webchatNotFound()
	}
	key, _ := chatIn.Configuration[model.ChatEncryptionKey].(string)
	if key == "" {
		return nil, webchatNotFound()
	}
	return &WebchatScope{Scope: &Scope{BotID: in.BotID, Integration: chatIn, key: key}, Bot: b, Webchat: in}, nil
}

// WebchatPage is what the hosted chat page needs to mount the component.
type WebchatPage struct {
	ClientID      string         `json:"clientId"`
	APIURL        string         `json:"apiUrl"`
	BotName       string         `json:"botName"`
	Configuration map[string]any `json:"configuration"`
}

// webchatConfigKeys are the webchat integration configuration keys passed
// to the component (docs/webchat.md); everything else stays server-side.
var webchatConfigKeys = []string{"botName", "botAvatar", "botDescription", "composerPlaceholder", "color",
	"themeMode", "variant", "headerVariant", "radius", "additionalStylesheet", "footer", "feedbackEnabled",
	"allowFileUpload", "soundEnabled", "conversationHistory", "storageLocation", "email", "phone", "website",
	"termsOfService", "privacyPolicy"}

// PageConfig returns the hosted page's configuration for a client
// id: the bot's name, the defaults Parley chooses (feedback, file upload
// and history on) and the integration's configuration on top.
func (s *Webchat) PageConfig(ctx context.Context, clientID string) (*WebchatPage, error) {
	sc, err := s.Scope(ctx, clientID)
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{"botName": sc.Bot.Name, "feedbackEnabled": true, "allowFileUpload": true,
		"conversationHistory": true, "composerPlaceholder": "Type a message…"}
	if sc.Bot.Description != "" {
		cfg["botDescription"] = sc.Bot.Description
	}
	for _, k := range webchatConfigKeys {
		if v, ok := sc.Webchat.Configuration[k]; ok && v != nil {
			cfg[k] = v
		}
	}
	name, _ := cfg["botName"].(string)
	return &WebchatPage{ClientID: clientID, APIURL: s.publicURL + "/webchat", BotName: name, Configuration: cfg}, nil
}

// Authenticate resolves an x-user-key. The user must exist.
func (s *Webchat) Authenticate(ctx context.Context, sc *WebchatScope, userKey string) (*Caller, error) {
	c, err := s.chat.Authenticate(sc.Scope, userKey)
	if err != nil {
		return nil, err
	}
	if _, err := s.chat.chatUser(ctx, c.BotID, c.UserID); model.IsNotFound(err) {
		return nil, model.Unauthorized("Invalid user key")
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// WebchatSession is the outcome of /initialize: who the user is (with a
// key), which conversation the stream follows, and its current content.
type WebchatSession struct {
	Caller       *Caller
	User         *model.ChatUser
	UserKey      string
	Conversation *model.Conversation
	// Messages are newest first, as the init signal wants them.
	Messages     []*model.Message
	Participants []*model.ChatUser
	Feedback     map[string]*MessageFeedback
	// Created is true when this call created the conversation.
	Created bool
}

// Initialize implements the /initialize decision table (contract
// documented in docs/webchat.md): a missing or bad key gets a new user; a conversation the user
// takes part in is resumed; anything else gets a new conversation. It
// never fails for the caller's input.
func (s *Webchat) Initialize(ctx context.Context, sc *WebchatScope, userKey, conversationID string) (*WebchatSession, error) {
	sess := &WebchatSession{}
	if userKey != "" {
		if c, err := s.chat.Authenticate(sc.Scope, userKey); err == nil {
			u, err := s.store.Chat().GetUser(ctx, c.BotID, c.UserID)
			if err == nil {
				sess.Caller, sess.User, sess.UserKey = c, u, userKey
			} else if !model.IsNotFound(err) {
				return nil, err
			}
		}
	}
	if sess.Caller == nil {
		u, key, err := s.chat.CreateUser(ctx, sc.Scope, UserInput{})
		if err != nil {
			return nil, err
		}
		sess.Caller = &Caller{Scope: sc.Scope, UserID: u.ID}
		sess.User, sess.UserKey = u, key
	}
	c := sess.Caller
	if conversationID != "" {
		ok, err := s.store.Chat().IsParticipant(ctx, c.BotID, conversationID, c.UserID)
		if err != nil {
			return nil, err
		}
		if ok {
			if sess.Conversation, err = s.chat.conversation(ctx, c.BotID, conversationID); err != nil && !model.IsNotFound(err) {
				return nil, err
			}
		}
	}
	if sess.Conversation == nil {
		conv, err := s.chat.createConversation(ctx, c, model.NewID(), model.IntegrationWebchat)
		if err != nil {
			return nil, err
		}
		sess.Conversation, sess.Created = conv, true
	}
	var err error
	if sess.Messages, _, err = s.store.Chat().ListMessages(ctx, c.BotID, sess.Conversation.ID, store.Page{Size: 100}); err != nil {
		return nil, err
	}
	if sess.Participants, _, err = s.store.Chat().ListParticipants(ctx, c.BotID, sess.Conversation.ID, store.Page{Size: 100}); err != nil {
		return nil, err
	}
	if sess.Feedback, err = s.feedbackFor(ctx, c.BotID, c.UserID, sess.Messages); err != nil {
		return nil, err
	}
	return sess, nil
}

// WebchatEventInput is the body of the webchat's createEvent.
type WebchatEventInput struct {
	ConversationID   *string         `json:"conversationId"`
	Payload          json.RawMessage `json:"payload"`
	BindConversation *bool           `json:"bindConversation"`
	BindUser         *bool           `json:"bindUser"`
}

// WebchatEventResult is a created event and, for conversation_started,
// whether this was the conversation's first start.
type WebchatEventResult struct {
	Event     *model.Event
	Started   bool // a conversation_started event
	IsInitial bool
}

// conversationStartedID is the id of a conversation's one
// conversation_started event: deterministic, so that a second start finds
// the first instead of creating another (and the bot's start logic runs
// once per conversation, whatever the number of reloads and reconnects).
func conversationStartedID(botID, convID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("parley:webchat:started:"+botID+"/"+convID)).String()
}

// CreateEvent handles the webchat's events: conversation_started
// (stored and run by the bot once per conversation) and custom events
// (like Chat API custom events, with the type webchat:custom).
func (s *Webchat) CreateEvent(ctx context.Context, c *Caller, in WebchatEventInput) (*WebchatEventResult, error) {
	if in.ConversationID == nil || *in.ConversationID == "" {
		return nil, model.Invalid("conversationId: required")
	}
	if in.Payload == nil {
		return nil, model.Invalid("payload: required")
	}
	var p struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(in.Payload, &p); err != nil {
		return nil, model.Invalid("payload: must be an object {type, data}")
	}
	convID := *in.ConversationID
	if err := s.chat.requireParticipant(ctx, c, convID); err != nil {
		return nil, err
	}
	switch p.Type {
	case "conversation_started":
		return s.conversationStarted(ctx, c, convID)
	case "custom":
		data := p.Data
		if len(data) == 0 || string(data) == "null" {
			data = json.RawMessage(`{}`)
		}
		payload, err := model.ValidateEventPayload(data)
		if err != nil {
			return nil, model.Invalid("payload.data: must be a JSON object")
		}
		e := &model.Event{BotID: c.BotID, ID: model.NewID(), ConversationID: convID, UserID: c.UserID,
			Type: model.WebchatCustomEventType, Payload: payload, CreatedAt: model.Now()}
		if err := s.storeEvent(ctx, e); err != nil {
			return nil, err
		}
		return &WebchatEventResult{Event: e}, nil
	}
	return nil, model.Invalid("payload.type: must be conversation_started or custom")
}

func (s *Webchat) conversationStarted(ctx context.Context, c *Caller, convID string) (*WebchatEventResult, error) {
	id := conversationStartedID(c.BotID, convID)
	if e, err := s.store.Chat().GetEvent(ctx, c.BotID, id); err == nil {
		return &WebchatEventResult{Event: e, Started: true}, nil
	} else if !model.IsNotFound(err) {
		return nil, err
	}
	e := &model.Event{BotID: c.BotID, ID: id, ConversationID: convID, UserID: c.UserID,
		Type: model.WebchatConversationStarted, Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
	err := s.storeEvent(ctx, e)
	if model.TypeOf(err) == model.ErrAlreadyExists {
		// Started concurrently (two tabs): the other call was first.
		if e, err := s.store.Chat().GetEvent(ctx, c.BotID, id); err == nil {
			return &WebchatEventResult{Event: e, Started: true}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return &WebchatEventResult{Event: e, Started: true, IsInitial: true}, nil
}

// storeWebchatEvent stores a user's event with its event_created signal and
// the bot's turn.
func (s *Webchat) storeEvent(ctx context.Context, e *model.Event) error {
	turn := &model.Turn{BotID: e.BotID, ConversationID: e.ConversationID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: e.UserID, CreatedAt: e.CreatedAt}
	sig := &model.Signal{BotID: e.BotID, ConversationID: e.ConversationID, Type: model.SignalEventCreated,
		Data: wire.EventCreatedData(e, false), CreatedAt: e.CreatedAt}
	return s.chat.commitSignal(ctx, sig, turn, func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateEvent(ctx, e) })
}

// Wait is Chat.Wait: the door's line while the bots are behind.
func (s *Webchat) Wait(ctx context.Context) (context.Context, error) { return s.chat.Wait(ctx) }

// CreateMessage stores a user's message sent by the webchat, like
// the Chat API's (same checks, signal and turn) with the webchat's payload
// rules (WebchatMessageInput.Validate).

func (s *Webchat) CreateMessage(ctx context.Context, c *Caller, in WebchatMessageInput) (*model.Message, error) {
	msg, err := in.Validate()
	if err != nil {
		return nil, err
	}
	return s.chat.createIncomingMessage(ctx, c, msg)
}

// WebchatConversation is a conversation with its last message, for the
// webchat's history list.
type WebchatConversation struct {
	Conversation *model.Conversation
	LastMessage  *model.Message
}

// ListConversations lists the caller's conversations with their
// last message.
func (s *Webchat) ListConversations(ctx context.Context, c *Caller, token string) ([]WebchatConversation, string, error) {
	convs, next, err := s.chat.ListConversations(ctx, c, token)
	if err != nil {
		return nil, "", err
	}
	out := make([]WebchatConversation, 0, len(convs))
	for _, conv := range convs {
		wc := WebchatConversation{Conversation: conv}
		ms, _, err := s.store.Chat().ListMessages(ctx, c.BotID, conv.ID, store.Page{Size: 1})
		if err != nil {
			return nil, "", err
		}
		if len(ms) > 0 {
			wc.LastMessage = ms[0]
		}
		out = append(out, wc)
	}
	return out, next, nil
}

// WebchatUserInput is the body of the webchat's updateUser and createUser.
// userData and attributes are kept in the chat user's profile as JSON.
type WebchatUserInput struct {
	Name       *string         `json:"name"`
	PictureURL *string         `json:"pictureUrl"`
	UserData   json.RawMessage `json:"userData"`
	Attributes json.RawMessage `json:"attributes"`
}

// WebchatProfile is what the webchat keeps in a chat user's profile.
type WebchatProfile struct {
	Data       map[string]any    `json:"data,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// ParseWebchatProfile reads a profile written by the webchat; other
// profiles give an empty one.
func ParseWebchatProfile(profile string) WebchatProfile {
	var p WebchatProfile
	if strings.HasPrefix(profile, "{") {
		_ = json.Unmarshal([]byte(profile), &p)
	}
	return p
}

// chatInput converts the webchat's user fields to the Chat API's. A JWT
// string for userData or attributes (signed user data) is refused: Parley
// has no key to verify it with.
func (in WebchatUserInput) chatInput(current string) (UserInput, error) {
	out := UserInput{Name: in.Name, PictureURL: in.PictureURL}
	if in.UserData == nil && in.Attributes == nil {
		return out, nil
	}
	p := ParseWebchatProfile(current)
	if in.UserData != nil {
		switch t := strings.TrimSpace(string(in.UserData)); {
		case t == "null":
			p.Data = nil
		case strings.HasPrefix(t, "{"):
			p.Data = nil
			if err := json.Unmarshal(in.UserData, &p.Data); err != nil {
				return out, model.Invalid("userData: must be an object")
			}
		default:
			return out, model.Invalid("userData: must be an object (signed user data is not supported)")
		}
	}
	if in.Attributes != nil {
		var attrs map[string]*string
		if err := json.Unmarshal(in.Attributes, &attrs); err != nil {
			return out, model.Invalid("attributes: must be an object of strings (signed attributes are not supported)")
		}
		if p.Attributes == nil {
			p.Attributes = map[string]string{}
		}
		for k, v := range attrs {
			if v == nil {
				delete(p.Attributes, k)
			} else {
				p.Attributes[k] = *v
			}
		}
	}
	b, _ := json.Marshal(p)
	profile := string(b)
	out.Profile = &profile
	return out, nil
}

// UpdateUser updates the caller.
func (s *Webchat) UpdateUser(ctx context.Context, c *Caller, in WebchatUserInput) (*model.ChatUser, error) {
	u, err := s.chat.chatUser(ctx, c.BotID, c.UserID)
	if err != nil {
		return nil, err
	}
	ci, err := in.chatInput(u.Profile)
	if err != nil {
		return nil, err
	}
	return s.chat.UpdateUser(ctx, c, ci)
}

// CreateUser creates a user for a host back-end (module function
// createUser) and returns its key.
func (s *Webchat) CreateUser(ctx context.Context, sc *WebchatScope, in WebchatUserInput) (*model.ChatUser, string, error) {
	ci, err := in.chatInput("")
	if err != nil {
		return nil, "", err
	}
	return s.chat.CreateUser(ctx, sc.Scope, ci)
}

// UserKey signs a key for a user id (generateUserKey). It needs the
// admin secret: the chat integration's encryption key itself, which only
// the bot's owners see.
func (s *Webchat) UserKey(sc *WebchatScope, adminSecret, userID string) (string, error) {
	if adminSecret == "" || adminSecret != sc.key {
		return "", model.Unauthorized("invalid admin secret: send the chat integration's encryption key as x-admin-secret")
	}
	if err := model.ValidateFID("id", userID); err != nil {
		return "", err
	}
	return auth.SignUserKey(sc.key, userID)
}

// FeedbackFor returns the caller's feedback on these messages.
func (s *Webchat) FeedbackFor(ctx context.Context, c *Caller, ms []*model.Message) (map[string]*MessageFeedback, error) {
	return s.feedbackFor(ctx, c.BotID, c.UserID, ms)
}

// User returns a user of the bot (for participant_added signals).
func (s *Webchat) User(ctx context.Context, botID, id string) (*model.ChatUser, error) {
	return s.chat.chatUser(ctx, botID, id)
}
