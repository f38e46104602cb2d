package webchat

import (
	"encoding/json"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/wire"
)

// The Webchat API's JSON shapes (those @botpress/webchat-client 0.7.3 reads).

type userView struct {
	ID         string            `json:"id"`
	Name       string            `json:"name,omitempty"`
	PictureURL string            `json:"pictureUrl,omitempty"`
	Data       map[string]any    `json:"data,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	CreatedAt  string            `json:"createdAt"`
	UpdatedAt  string            `json:"updatedAt"`
}

func renderUser(u *model.ChatUser) userView {
	p := conversations.ParseWebchatProfile(u.Profile)
	return userView{ID: u.ID, Name: u.Name, PictureURL: u.PictureURL, Data: p.Data, Attributes: p.Attributes,
		CreatedAt: model.FormatTime(u.CreatedAt), UpdatedAt: model.FormatTime(u.UpdatedAt)}
}

func renderUsers(us []*model.ChatUser, botID string) []userView {
	out := make([]userView, 0, len(us))
	for _, u := range us {
		if u.ID == botID {
			continue // the bot is named by the page's botName, not as a participant
		}
		out = append(out, renderUser(u))
	}
	return out
}

type messageView struct {
	ID             string                         `json:"id"`
	CreatedAt      string                         `json:"createdAt"`
	ConversationID string                         `json:"conversationId"`
	UserID         string                         `json:"userId"`
	Payload        json.RawMessage                `json:"payload"`
	Metadata       json.RawMessage                `json:"metadata,omitempty"`
	Feedback       *conversations.MessageFeedback `json:"feedback,omitempty"`
}

func renderMessage(m *model.Message, fb *conversations.MessageFeedback) messageView {
	return messageView{ID: m.ID, CreatedAt: model.FormatTime(m.CreatedAt), ConversationID: m.ConversationID,
		UserID: m.UserID, Payload: wire.NestBloc(m.Payload), Metadata: m.Metadata, Feedback: fb}
}

func renderMessages(ms []*model.Message, fb map[string]*conversations.MessageFeedback) []messageView {
	out := make([]messageView, 0, len(ms))
	for _, m := range ms {
		out = append(out, renderMessage(m, fb[m.ID]))
	}
	return out
}

type conversationView struct {
	ID          string       `json:"id"`
	CreatedAt   string       `json:"createdAt"`
	UpdatedAt   string       `json:"updatedAt"`
	LastMessage *messageView `json:"lastMessage,omitempty"`
}

func renderConversation(c *model.Conversation, last *model.Message) conversationView {
	v := conversationView{ID: c.ID, CreatedAt: model.FormatTime(c.CreatedAt), UpdatedAt: model.FormatTime(c.UpdatedAt)}
	if last != nil {
		m := renderMessage(last, nil)
		v.LastMessage = &m
		if last.CreatedAt.After(c.UpdatedAt) {
			v.UpdatedAt = m.CreatedAt // the history list sorts on updatedAt
		}
	}
	return v
}

type eventView struct {
	ID             string          `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	ConversationID string          `json:"conversationId"`
	UserID         string          `json:"userId"`
	Payload        json.RawMessage `json:"payload"`
}

// renderEvent gives an event in the webchat's {type, data} payload form.
func renderEvent(e *model.Event, isInitial *bool) eventView {
	var payload json.RawMessage
	switch e.Type {
	case model.WebchatConversationStarted:
		initial := false
		if isInitial != nil {
			initial = *isInitial
		}
		payload, _ = json.Marshal(map[string]any{"type": "conversation_started",
			"data": map[string]any{"status": map[string]any{"isInitial": initial}}})
	default:
		payload, _ = json.Marshal(map[string]any{"type": "custom", "data": e.Payload})
	}
	return eventView{ID: e.ID, CreatedAt: model.FormatTime(e.CreatedAt), ConversationID: e.ConversationID,
		UserID: e.UserID, Payload: payload}
}

type meta struct {
	NextToken string `json:"nextToken,omitempty"`
}
