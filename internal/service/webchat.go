package service

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Webchat API use cases (contracts/webchat-api.md). The webchat is another
// door to the same conversational data as the Chat API: a webchat user is a
// chat user of the bot, its key is a Chat API user key (signed with the chat
// integration's encryption key), and every write goes through the Chat API
// use cases, so the rules (participants, payload validation, signals, turns)
// are the same whichever door a message came through.

// WebchatScope is a bot's Webchat API, resolved from its client id.
type WebchatScope struct {
	*ChatScope
	Bot     *model.Bot
	Webchat *model.Integration
}

// WebchatConversationStarted is the bot-side type of the event the webchat
// sends when it opens a conversation; the bot sees it once per
// conversation.
const WebchatConversationStarted = "webchat:conversationStarted"

// WebchatCustomEventType is the bot-side type of a webchat custom event.
const WebchatCustomEventType = "webchat:custom"

// webchatNotFound carries "[Webhook Handler]" so that the component shows
// its "Invalid Client ID" screen rather than a generic error.
func webchatNotFound() error {
	return model.Errorf(model.ErrNotFound, "[Webhook Handler] no webchat with this client id")
}

// WebchatScope resolves a client id. Unknown, disabled, or a bot whose
// chat integration has no key: ResourceNotFound.
func (s *Service) WebchatScope(ctx context.Context, clientID string) (*WebchatScope, error) {
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
	key, _ := chatIn.Configuration[ChatEncryptionKey].(string)
	if key == "" {
		return nil, webchatNotFound()
	}
	return &WebchatScope{ChatScope: &ChatScope{BotID: in.BotID, Integration: chatIn, key: key}, Bot: b, Webchat: in}, nil
}

// WebchatPage is what the hosted chat page needs to mount the component.
type WebchatPage struct {
	ClientID      string         `json:"clientId"`
	APIURL        string         `json:"apiUrl"`
	BotName       string         `json:"botName"`
	Configuration map[string]any `json:"configuration"`
}

// webchatConfigKeys are the webchat integration configuration keys passed
// to the component (contract §5.2); everything else stays server-side.
var webchatConfigKeys = []string{"botName", "botAvatar", "botDescription", "composerPlaceholder", "color",
	"themeMode", "variant", "headerVariant", "radius", "additionalStylesheet", "footer", "feedbackEnabled",
	"allowFileUpload", "soundEnabled", "conversationHistory", "storageLocation", "email", "phone", "website",
	"termsOfService", "privacyPolicy"}

// WebchatPageConfig returns the hosted page's configuration for a client
// id: the bot's name, the defaults Parley chooses (feedback, file upload
// and history on) and the integration's configuration on top.
func (s *Service) WebchatPageConfig(ctx context.Context, clientID string) (*WebchatPage, error) {
	sc, err := s.WebchatScope(ctx, clientID)
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

// WebchatAuthenticate resolves an x-user-key. The user must exist.
func (s *Service) WebchatAuthenticate(ctx context.Context, sc *WebchatScope, userKey string) (*ChatCaller, error) {
	c, err := s.ChatAuthenticate(sc.ChatScope, userKey)
	if err != nil {
		return nil, err
	}
	if _, err := s.chatUser(ctx, c.BotID, c.UserID); model.IsNotFound(err) {
		return nil, model.Unauthorized("Invalid user key")
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// WebchatSession is the outcome of /initialize: who the user is (with a
// key), which conversation the stream follows, and its current content.
type WebchatSession struct {
	Caller       *ChatCaller
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

// WebchatInitialize implements the /initialize decision table (contract
// §2.4): a missing or bad key gets a new user; a conversation the user
// takes part in is resumed; anything else gets a new conversation. It
// never fails for the caller's input.
func (s *Service) WebchatInitialize(ctx context.Context, sc *WebchatScope, userKey, conversationID string) (*WebchatSession, error) {
	sess := &WebchatSession{}
	if userKey != "" {
		if c, err := s.ChatAuthenticate(sc.ChatScope, userKey); err == nil {
			u, err := s.store.Chat().GetUser(ctx, c.BotID, c.UserID)
			if err == nil {
				sess.Caller, sess.User, sess.UserKey = c, u, userKey
			} else if !model.IsNotFound(err) {
				return nil, err
			}
		}
	}
	if sess.Caller == nil {
		u, key, err := s.ChatCreateUser(ctx, sc.ChatScope, ChatUserInput{})
		if err != nil {
			return nil, err
		}
		sess.Caller = &ChatCaller{ChatScope: sc.ChatScope, UserID: u.ID}
		sess.User, sess.UserKey = u, key
	}
	c := sess.Caller
	if conversationID != "" {
		ok, err := s.store.Chat().IsParticipant(ctx, c.BotID, conversationID, c.UserID)
		if err != nil {
			return nil, err
		}
		if ok {
			if sess.Conversation, err = s.conversation(ctx, c.BotID, conversationID); err != nil && !model.IsNotFound(err) {
				return nil, err
			}
		}
	}
	if sess.Conversation == nil {
		conv, err := s.createConversation(ctx, c, model.NewID())
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

// WebchatCreateEvent handles the webchat's events: conversation_started
// (stored and run by the bot once per conversation) and custom events
// (like Chat API custom events, with the type webchat:custom).
func (s *Service) WebchatCreateEvent(ctx context.Context, c *ChatCaller, in WebchatEventInput) (*WebchatEventResult, error) {
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
	if err := s.requireParticipant(ctx, c, convID); err != nil {
		return nil, err
	}
	switch p.Type {
	case "conversation_started":
		return s.webchatConversationStarted(ctx, c, convID)
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
			Type: WebchatCustomEventType, Payload: payload, CreatedAt: model.Now()}
		if err := s.storeWebchatEvent(ctx, e); err != nil {
			return nil, err
		}
		return &WebchatEventResult{Event: e}, nil
	}
	return nil, model.Invalid("payload.type: must be conversation_started or custom")
}

func (s *Service) webchatConversationStarted(ctx context.Context, c *ChatCaller, convID string) (*WebchatEventResult, error) {
	id := conversationStartedID(c.BotID, convID)
	if e, err := s.store.Chat().GetEvent(ctx, c.BotID, id); err == nil {
		return &WebchatEventResult{Event: e, Started: true}, nil
	} else if !model.IsNotFound(err) {
		return nil, err
	}
	e := &model.Event{BotID: c.BotID, ID: id, ConversationID: convID, UserID: c.UserID,
		Type: WebchatConversationStarted, Payload: json.RawMessage(`{}`), CreatedAt: model.Now()}
	err := s.storeWebchatEvent(ctx, e)
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
func (s *Service) storeWebchatEvent(ctx context.Context, e *model.Event) error {
	turn := &model.Turn{BotID: e.BotID, ConversationID: e.ConversationID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: e.UserID, CreatedAt: e.CreatedAt}
	sig := &model.Signal{BotID: e.BotID, ConversationID: e.ConversationID, Type: model.SignalEventCreated,
		Data: eventCreatedData(e, false), CreatedAt: e.CreatedAt}
	return s.commitWithSignal(ctx, sig, turn, func(tx store.Store) error { return tx.Chat().CreateEvent(ctx, e) })
}

// WebchatCreateMessage stores a user's message sent by the webchat, like
// ChatCreateMessage (same checks, signal and turn) except for its payload
// rules: bloc items arrive in the bot form {type, payload:{...}} and are
// flattened to the Chat API form; file payloads lose their fileId (the URL
// is kept); and a text payload keeps the `value` of the button the user
// clicked ({type:"text", text:<label>, value:<value>}, contract §4.3), so
// that bots see event.payload.value and workflow choices match the value
// before the label.
func (s *Service) WebchatCreateMessage(ctx context.Context, c *ChatCaller, in ChatMessageInput) (*model.Message, error) {
	return s.createIncomingMessage(ctx, c, in, func(p json.RawMessage) (json.RawMessage, error) {
		return model.ValidateWebchatMessagePayload(FlattenBloc(p))
	})
}

// FlattenBloc turns bloc items of the form {type, payload:{...}} into the
// Chat API's flat {type, ...}; other payloads are returned unchanged.
func FlattenBloc(raw json.RawMessage) json.RawMessage {
	var p struct {
		Type  string            `json:"type"`
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Type != "bloc" {
		return raw
	}
	items := make([]json.RawMessage, 0, len(p.Items))
	for _, it := range p.Items {
		var nested struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		if json.Unmarshal(it, &nested) == nil && nested.Payload != nil {
			nested.Payload["type"] = nested.Type
			b, _ := json.Marshal(nested.Payload)
			items = append(items, b)
			continue
		}
		items = append(items, it)
	}
	b, _ := json.Marshal(map[string]any{"type": "bloc", "items": items})
	return b
}

// NestBloc is the inverse of FlattenBloc, for the webchat component, which
// reads bloc items as {type, payload}.
func NestBloc(raw json.RawMessage) json.RawMessage {
	var p struct {
		Type  string           `json:"type"`
		Items []map[string]any `json:"items"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Type != "bloc" {
		return raw
	}
	items := make([]map[string]any, 0, len(p.Items))
	for _, it := range p.Items {
		t, _ := it["type"].(string)
		delete(it, "type")
		items = append(items, map[string]any{"type": t, "payload": it})
	}
	b, _ := json.Marshal(map[string]any{"type": "bloc", "items": items})
	return b
}

// WebchatConversation is a conversation with its last message, for the
// webchat's history list.
type WebchatConversation struct {
	Conversation *model.Conversation
	LastMessage  *model.Message
}

// WebchatListConversations lists the caller's conversations with their
// last message.
func (s *Service) WebchatListConversations(ctx context.Context, c *ChatCaller, token string) ([]WebchatConversation, string, error) {
	convs, next, err := s.ChatListConversations(ctx, c, token)
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
func (in WebchatUserInput) chatInput(current string) (ChatUserInput, error) {
	out := ChatUserInput{Name: in.Name, PictureURL: in.PictureURL}
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

// WebchatUpdateUser updates the caller.
func (s *Service) WebchatUpdateUser(ctx context.Context, c *ChatCaller, in WebchatUserInput) (*model.ChatUser, error) {
	u, err := s.chatUser(ctx, c.BotID, c.UserID)
	if err != nil {
		return nil, err
	}
	ci, err := in.chatInput(u.Profile)
	if err != nil {
		return nil, err
	}
	return s.ChatUpdateUser(ctx, c, ci)
}

// WebchatCreateUser creates a user for a host back-end (module function
// createUser) and returns its key.
func (s *Service) WebchatCreateUser(ctx context.Context, sc *WebchatScope, in WebchatUserInput) (*model.ChatUser, string, error) {
	ci, err := in.chatInput("")
	if err != nil {
		return nil, "", err
	}
	return s.ChatCreateUser(ctx, sc.ChatScope, ci)
}

// WebchatUserKey signs a key for a user id (generateUserKey). It needs the
// admin secret: the chat integration's encryption key itself, which only
// the bot's owners see.
func (s *Service) WebchatUserKey(sc *WebchatScope, adminSecret, userID string) (string, error) {
	if adminSecret == "" || adminSecret != sc.key {
		return "", model.Unauthorized("invalid admin secret: send the chat integration's encryption key as x-admin-secret")
	}
	if err := model.ValidateFID("id", userID); err != nil {
		return "", err
	}
	return auth.SignUserKey(sc.key, userID)
}

// WebchatFeedbackFor returns the caller's feedback on these messages.
func (s *Service) WebchatFeedbackFor(ctx context.Context, c *ChatCaller, ms []*model.Message) (map[string]*MessageFeedback, error) {
	return s.feedbackFor(ctx, c.BotID, c.UserID, ms)
}

// WebchatUser returns a user of the bot (for participant_added signals).
func (s *Service) WebchatUser(ctx context.Context, botID, id string) (*model.ChatUser, error) {
	return s.chatUser(ctx, botID, id)
}
