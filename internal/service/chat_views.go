package service

import (
	"encoding/json"

	"github.com/parley-bots/parley/internal/model"
)

// Chat API wire shapes. The REST responses and the signals are rendered by
// the same types, so a message looks identical in createMessage, getMessage,
// listMessages and its message_created signal (minus isBot), which the
// client's e2e tests check with deep equality.

// ChatUserView is the Chat API User (and Participant).
type ChatUserView struct {
	ID         string `json:"id"`
	Name       string `json:"name,omitempty"`
	PictureURL string `json:"pictureUrl,omitempty"`
	Profile    string `json:"profile,omitempty"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
}

// ChatUser renders a user.
func ChatUser(u *model.ChatUser) ChatUserView {
	return ChatUserView{ID: u.ID, Name: u.Name, PictureURL: u.PictureURL, Profile: u.Profile,
		CreatedAt: model.FormatTime(u.CreatedAt), UpdatedAt: model.FormatTime(u.UpdatedAt)}
}

// ChatConversationView is the Chat API Conversation: exactly three keys.
type ChatConversationView struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

// ChatConversation renders a conversation.
func ChatConversation(c *model.Conversation) ChatConversationView {
	return ChatConversationView{ID: c.ID, CreatedAt: model.FormatTime(c.CreatedAt), UpdatedAt: model.FormatTime(c.UpdatedAt)}
}

// ChatMessageView is the Chat API Message; IsBot is set only in signals and
// Metadata is omitted when the message has none (never null).
type ChatMessageView struct {
	ID             string          `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	Payload        json.RawMessage `json:"payload"`
	UserID         string          `json:"userId"`
	ConversationID string          `json:"conversationId"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	IsBot          *bool           `json:"isBot,omitempty"`
}

// ChatMessage renders a message for REST.
func ChatMessage(m *model.Message) ChatMessageView {
	return ChatMessageView{ID: m.ID, CreatedAt: model.FormatTime(m.CreatedAt), Payload: m.Payload,
		UserID: m.UserID, ConversationID: m.ConversationID, Metadata: m.Metadata}
}

// ChatEventView is the Chat API Event. In signals ID is null for bot events
// (which have no stored event) and IsBot is set.
type ChatEventView struct {
	ID             *string         `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	Payload        json.RawMessage `json:"payload"`
	ConversationID string          `json:"conversationId"`
	UserID         string          `json:"userId"`
	IsBot          *bool           `json:"isBot,omitempty"`
}

// ChatEvent renders a stored event for REST.
func ChatEvent(e *model.Event) ChatEventView {
	id := e.ID
	return ChatEventView{ID: &id, CreatedAt: model.FormatTime(e.CreatedAt), Payload: e.Payload,
		ConversationID: e.ConversationID, UserID: e.UserID}
}

func messageCreatedData(m *model.Message, isBot bool) json.RawMessage {
	v := ChatMessage(m)
	v.IsBot = &isBot
	b, _ := json.Marshal(v)
	return b
}

func eventCreatedData(e *model.Event, isBot bool) json.RawMessage {
	v := ChatEvent(e)
	if e.ID == "" {
		v.ID = nil
	}
	v.IsBot = &isBot
	b, _ := json.Marshal(v)
	return b
}

func messageDeletedData(m *model.Message) json.RawMessage {
	b, _ := json.Marshal(struct {
		ID             string `json:"id"`
		ConversationID string `json:"conversationId"`
		UserID         string `json:"userId"`
	}{m.ID, m.ConversationID, m.UserID})
	return b
}

func participantData(convID, userID string) json.RawMessage {
	b, _ := json.Marshal(struct {
		ConversationID string `json:"conversationId"`
		ParticipantID  string `json:"participantId"`
	}{convID, userID})
	return b
}
