package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// The Runtime API's objects (@botpress/client's User, Conversation,
// Message, Event, State, Workflow and Task), rendered for the HTTP Runtime
// API, the events SDK bots receive and the sandbox's `client`.

// RuntimeUser is the Runtime API User.
type RuntimeUser struct {
	ID         string            `json:"id"`
	CreatedAt  string            `json:"createdAt"`
	UpdatedAt  string            `json:"updatedAt"`
	Tags       map[string]string `json:"tags"`
	Name       string            `json:"name,omitempty"`
	PictureURL string            `json:"pictureUrl,omitempty"`
}

// NewRuntimeUser renders a user.
func NewRuntimeUser(u *model.ChatUser) RuntimeUser {
	return RuntimeUser{ID: u.ID, CreatedAt: model.FormatTime(u.CreatedAt), UpdatedAt: model.FormatTime(u.UpdatedAt),
		Tags: tagsOf(u.Tags), Name: u.Name, PictureURL: u.PictureURL}
}

// RuntimeConversation is the Runtime API Conversation.
type RuntimeConversation struct {
	ID           string            `json:"id"`
	CreatedAt    string            `json:"createdAt"`
	UpdatedAt    string            `json:"updatedAt"`
	Channel      string            `json:"channel"`
	Integration  string            `json:"integration"`
	Tags         map[string]string `json:"tags"`
	MessageCount int               `json:"messageCount"`
}

// NewRuntimeConversation renders a conversation with its message count.
func NewRuntimeConversation(c *model.Conversation, messageCount int) RuntimeConversation {
	return RuntimeConversation{ID: c.ID, CreatedAt: model.FormatTime(c.CreatedAt), UpdatedAt: model.FormatTime(c.UpdatedAt),
		Channel: c.Channel, Integration: c.Integration, Tags: tagsOf(c.Tags), MessageCount: messageCount}
}

// RuntimeMessage is the Runtime API Message: the stored (Chat API, flat)
// payload {type, ...fields} is split into type and payload.
type RuntimeMessage struct {
	ID             string            `json:"id"`
	CreatedAt      string            `json:"createdAt"`
	UpdatedAt      string            `json:"updatedAt"`
	Type           string            `json:"type"`
	Payload        json.RawMessage   `json:"payload"`
	Direction      string            `json:"direction"`
	UserID         string            `json:"userId"`
	ConversationID string            `json:"conversationId"`
	Tags           map[string]string `json:"tags"`
}

// NewRuntimeMessage renders a message.
func NewRuntimeMessage(m *model.Message) RuntimeMessage {
	typ, payload := SplitPayload(m.Payload)
	updated := m.UpdatedAt
	if updated.IsZero() {
		updated = m.CreatedAt
	}
	return RuntimeMessage{ID: m.ID, CreatedAt: model.FormatTime(m.CreatedAt), UpdatedAt: model.FormatTime(updated),
		Type: typ, Payload: payload, Direction: m.Direction, UserID: m.UserID, ConversationID: m.ConversationID,
		Tags: tagsOf(m.Tags)}
}

// SplitPayload splits a stored flat payload {type, ...fields} into its type
// and the Runtime API payload {...fields}.
func SplitPayload(stored json.RawMessage) (string, json.RawMessage) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(stored, &fields); err != nil || fields == nil {
		return "", json.RawMessage("{}")
	}
	var typ string
	_ = json.Unmarshal(fields["type"], &typ)
	delete(fields, "type")
	b, _ := json.Marshal(fields)
	return typ, b
}

// JoinPayload builds the stored flat payload from a Runtime API type and
// payload object (the payload's own "type", if any, is replaced).
func JoinPayload(typ string, payload json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil || fields == nil {
		return nil, model.Invalid("payload: must be an object")
	}
	t, _ := json.Marshal(typ)
	fields["type"] = t
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return nil, model.Invalid("payload: %v", err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// RuntimeEvent is the Runtime API Event.
type RuntimeEvent struct {
	ID             string          `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	Type           string          `json:"type"`
	Payload        json.RawMessage `json:"payload"`
	ConversationID string          `json:"conversationId,omitempty"`
	UserID         string          `json:"userId,omitempty"`
	MessageID      string          `json:"messageId,omitempty"`
	Status         string          `json:"status"`
	FailureReason  *string         `json:"failureReason"`
}

// NewRuntimeEvent renders an event.
func NewRuntimeEvent(e *model.Event) RuntimeEvent {
	v := RuntimeEvent{ID: e.ID, CreatedAt: model.FormatTime(e.CreatedAt), Type: e.Type, Payload: e.Payload,
		ConversationID: e.ConversationID, UserID: e.UserID, MessageID: e.MessageID, Status: e.Status}
	if len(v.Payload) == 0 || string(v.Payload) == "null" {
		v.Payload = json.RawMessage("{}")
	}
	if v.Status == "" {
		v.Status = model.EventProcessed
	}
	if e.FailureReason != "" {
		r := e.FailureReason
		v.FailureReason = &r
	}
	return v
}

// State is the Runtime API State.
type State struct {
	ID             string          `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	UpdatedAt      string          `json:"updatedAt"`
	BotID          string          `json:"botId"`
	ConversationID string          `json:"conversationId,omitempty"`
	UserID         string          `json:"userId,omitempty"`
	Name           string          `json:"name"`
	Type           string          `json:"type"`
	Payload        json.RawMessage `json:"payload"`
	Expiry         *int64          `json:"expiry,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
}

// NewState renders a state.
func NewState(s *model.State) State {
	v := State{ID: s.ID, CreatedAt: model.FormatTime(s.CreatedAt), UpdatedAt: model.FormatTime(s.UpdatedAt),
		BotID: s.BotID, Name: s.Name, Type: s.Type, Payload: s.Payload}
	switch s.Type {
	case "conversation":
		v.ConversationID = s.OwnerID
	case "user":
		v.UserID = s.OwnerID
	}
	if s.Expiry > 0 {
		e := s.Expiry
		v.Expiry = &e
	}
	if !s.ExpiresAt.IsZero() {
		v.ExpiresAt = model.FormatTime(s.ExpiresAt)
	}
	return v
}

// Workflow is the Runtime API Workflow.
type Workflow struct {
	ID               string            `json:"id"`
	Name             string            `json:"name"`
	Status           string            `json:"status"`
	Input            json.RawMessage   `json:"input"`
	Output           json.RawMessage   `json:"output"`
	ParentWorkflowID string            `json:"parentWorkflowId,omitempty"`
	ConversationID   string            `json:"conversationId,omitempty"`
	UserID           string            `json:"userId,omitempty"`
	CreatedAt        string            `json:"createdAt"`
	UpdatedAt        string            `json:"updatedAt"`
	CompletedAt      string            `json:"completedAt,omitempty"`
	FailureReason    string            `json:"failureReason,omitempty"`
	TimeoutAt        string            `json:"timeoutAt"`
	Tags             map[string]string `json:"tags"`
}

// NewWorkflow renders a workflow.
func NewWorkflow(w *model.Workflow) Workflow {
	return Workflow{ID: w.ID, Name: w.Name, Status: w.Status, Input: obj(w.Input), Output: obj(w.Output),
		ParentWorkflowID: w.ParentWorkflowID, ConversationID: w.ConversationID, UserID: w.UserID,
		CreatedAt: model.FormatTime(w.CreatedAt), UpdatedAt: model.FormatTime(w.UpdatedAt),
		CompletedAt: timeOrEmpty(w.CompletedAt), FailureReason: w.FailureReason, TimeoutAt: model.FormatTime(w.TimeoutAt),
		Tags: tagsOf(w.Tags)}
}

// Task is the Task of client 1.35.0.
type Task struct {
	ID             string            `json:"id"`
	Title          string            `json:"title"`
	Description    string            `json:"description"`
	Type           string            `json:"type"`
	Data           json.RawMessage   `json:"data"`
	Status         string            `json:"status"`
	ParentTaskID   string            `json:"parentTaskId,omitempty"`
	ConversationID string            `json:"conversationId,omitempty"`
	UserID         string            `json:"userId,omitempty"`
	TimeoutAt      string            `json:"timeoutAt"`
	CreatedAt      string            `json:"createdAt"`
	UpdatedAt      string            `json:"updatedAt"`
	FailureReason  string            `json:"failureReason,omitempty"`
	Tags           map[string]string `json:"tags"`
}

// NewTask renders a task.
func NewTask(t *model.Task) Task {
	return Task{ID: t.ID, Title: t.Title, Description: t.Description, Type: t.Type, Data: obj(t.Data), Status: t.Status,
		ParentTaskID: t.ParentTaskID, ConversationID: t.ConversationID, UserID: t.UserID,
		TimeoutAt: model.FormatTime(t.TimeoutAt), CreatedAt: model.FormatTime(t.CreatedAt),
		UpdatedAt: model.FormatTime(t.UpdatedAt), FailureReason: t.FailureReason, Tags: tagsOf(t.Tags)}
}

func tagsOf(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return t
}

func obj(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return json.RawMessage("{}")
	}
	return r
}

func timeOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return model.FormatTime(t)
}

// DescribeFailure renders a failed call to an @botpress/sdk handler (a
// bot or an integration) for logs and issues: the Runtime error's message
// when the handler sent one (the SDK answers `{ type, message }`), else the
// start of the body.
func DescribeFailure(status int, body []byte) string {
	var e struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Message != "" || e.Error != "") {
		msg := e.Message
		if msg == "" {
			msg = e.Error
		}
		if e.Type != "" {
			return fmt.Sprintf("status %d, %s error: %s", status, e.Type, msg)
		}
		return fmt.Sprintf("status %d: %s", status, msg)
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return fmt.Sprintf("status %d: %s", status, s)
}
