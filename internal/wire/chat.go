// Package wire holds the Chat API's JSON shapes, rendered identically
// wherever they appear: REST responses (Chat and Webchat APIs, the Admin
// API's conversation browsing), the durable signals streamed over SSE, and
// the objects bot code reads. The client's e2e tests compare them with
// deep equality, so there is one renderer per shape.
//
// Naming: a type is the API object (Message); New<Type> renders it from
// its model; <Event>Data renders a signal's data.
package wire

import (
	"encoding/json"

	"github.com/parley-bots/parley/internal/model"
)

// User is the Chat API User (and Participant).
type User struct {
	ID         string `json:"id"`
	Name       string `json:"name,omitempty"`
	PictureURL string `json:"pictureUrl,omitempty"`
	Profile    string `json:"profile,omitempty"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
}

// NewUser renders a user.
func NewUser(u *model.ChatUser) User {
	return User{ID: u.ID, Name: u.Name, PictureURL: u.PictureURL, Profile: u.Profile,
		CreatedAt: model.FormatTime(u.CreatedAt), UpdatedAt: model.FormatTime(u.UpdatedAt)}
}

// Conversation is the Chat API Conversation: exactly three keys.
type Conversation struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

// NewConversation renders a conversation.
func NewConversation(c *model.Conversation) Conversation {
	return Conversation{ID: c.ID, CreatedAt: model.FormatTime(c.CreatedAt), UpdatedAt: model.FormatTime(c.UpdatedAt)}
}

// Message is the Chat API Message; IsBot is set only in signals and
// Metadata is omitted when the message has none (never null).
type Message struct {
	ID             string          `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	Payload        json.RawMessage `json:"payload"`
	UserID         string          `json:"userId"`
	ConversationID string          `json:"conversationId"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	IsBot          *bool           `json:"isBot,omitempty"`
}

// NewMessage renders a message for REST.
func NewMessage(m *model.Message) Message {
	return Message{ID: m.ID, CreatedAt: model.FormatTime(m.CreatedAt), Payload: m.Payload,
		UserID: m.UserID, ConversationID: m.ConversationID, Metadata: m.Metadata}
}

// Event is the Chat API Event. In signals ID is null for bot events
// (which have no stored event) and IsBot is set.
type Event struct {
	ID             *string         `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	Payload        json.RawMessage `json:"payload"`
	ConversationID string          `json:"conversationId"`
	UserID         string          `json:"userId"`
	IsBot          *bool           `json:"isBot,omitempty"`
}

// NewEvent renders a stored event for REST.
func NewEvent(e *model.Event) Event {
	id := e.ID
	return Event{ID: &id, CreatedAt: model.FormatTime(e.CreatedAt), Payload: e.Payload,
		ConversationID: e.ConversationID, UserID: e.UserID}
}

// MessageCreatedData is the data of a message_created signal.
func MessageCreatedData(m *model.Message, isBot bool) json.RawMessage {
	v := NewMessage(m)
	v.IsBot = &isBot
	b, _ := json.Marshal(v)
	return b
}

// EventCreatedData is the data of an event_created signal; a bot event
// (no stored row, empty id) has id null.
func EventCreatedData(e *model.Event, isBot bool) json.RawMessage {
	v := NewEvent(e)
	if e.ID == "" {
		v.ID = nil
	}
	v.IsBot = &isBot
	b, _ := json.Marshal(v)
	return b
}

// MessageDeleted is the data of a message_deleted signal.
type MessageDeleted struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversationId"`
	UserID         string `json:"userId"`
}

// MessageDeletedData renders a message_deleted signal's data.
func MessageDeletedData(m *model.Message) json.RawMessage {
	b, _ := json.Marshal(MessageDeleted{m.ID, m.ConversationID, m.UserID})
	return b
}

// Participant is the data of participant_added and participant_removed
// signals.
type Participant struct {
	ConversationID string `json:"conversationId"`
	ParticipantID  string `json:"participantId"`
}

// ParticipantData renders a participant signal's data.
func ParticipantData(convID, userID string) json.RawMessage {
	b, _ := json.Marshal(Participant{convID, userID})
	return b
}
