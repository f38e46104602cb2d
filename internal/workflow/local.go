package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
)

// Local runs a workflow bot in process with in-memory data: one user in one
// conversation. `parley bot test` and the engine's tests use it.
type Local struct {
	Engine    *runtime.Engine
	Bot       *Bot
	BotID     string
	VersionID string
	Host      *LocalHost
	States    runtime.States
	Dialog    *Dialog
	// Now gives the turn's time (default time.Now).
	Now func() time.Time
	// Knowledge answers queryKnowledgeBase cards (nil: they find nothing).
	Knowledge Knowledge

	Logs     []model.LogEntry
	Issues   []Issue
	Problems []*runtime.Problem
	Triggers []*runtime.Trigger
}

// NewLocal returns a local session of b on engine.
func NewLocal(engine *runtime.Engine, b *Bot) *Local {
	return &Local{Engine: engine, Bot: b, BotID: "local-bot", VersionID: "local-" + model.NewID(),
		Host: &LocalHost{BotID: "local-bot", UserID: "local-user", ConversationID: "local-conversation"}}
}

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Say sends a text message and returns the payloads the bot sent.
func (l *Local) Say(ctx context.Context, text string) ([]map[string]any, error) {
	return l.Message(ctx, map[string]any{"type": "text", "text": text})
}

// Message sends a message payload and returns what the bot sent.
func (l *Local) Message(ctx context.Context, payload map[string]any) ([]map[string]any, error) {
	now := l.now()
	ev := runtime.Event{BotID: l.BotID, ConversationID: l.Host.ConversationID, CreatedOn: now,
		Direction: model.DirectionIncoming, ID: model.NewID(), Integration: model.IntegrationChat,
		MessageID: model.NewID(), Payload: payload, Preview: runtime.Preview(payload),
		Tags: runtime.NewTags(nil, nil, nil), UserID: l.Host.UserID}
	ev.Type, _ = payload["type"].(string)
	msg := map[string]any{"id": ev.MessageID, "createdAt": model.FormatTime(now), "payload": payload,
		"userId": l.Host.UserID, "conversationId": l.Host.ConversationID}
	return l.turn(ctx, ev, msg, nil)
}

// Event sends a custom event (type chat:custom).
func (l *Local) Event(ctx context.Context, payload map[string]any) ([]map[string]any, error) {
	return l.turn(ctx, l.event("chat:custom", payload), nil, nil)
}

// Timeout runs the turn the inactivity timer queues.
func (l *Local) Timeout(ctx context.Context) ([]map[string]any, error) {
	return l.turn(ctx, l.event(TimeoutEventType, map[string]any{}), nil, nil)
}

// Schedule runs a schedule trigger's turn (no conversation).
func (l *Local) Schedule(ctx context.Context, t *Trigger) ([]map[string]any, error) {
	ev := l.event(ScheduleEventType, map[string]any{"trigger": t.ID})
	ev.ConversationID, ev.UserID = "", ""
	return l.turn(ctx, ev, nil, t)
}

func (l *Local) event(typ string, payload map[string]any) runtime.Event {
	return runtime.Event{BotID: l.BotID, ConversationID: l.Host.ConversationID, CreatedOn: l.now(),
		Direction: model.DirectionIncoming, ID: model.NewID(), Integration: model.IntegrationChat,
		Payload: payload, Preview: runtime.Preview(payload), Tags: runtime.NewTags(nil, nil, nil),
		Type: typ, UserID: l.Host.UserID}
}

func (l *Local) turn(ctx context.Context, ev runtime.Event, msg map[string]any, trig *Trigger) ([]map[string]any, error) {
	before := len(l.Host.Sent())
	in := runtime.TurnInput{BotID: l.BotID, VersionID: l.VersionID, Event: ev, Message: msg,
		User: map[string]any{"id": l.Host.UserID}, Conversation: map[string]any{"id": l.Host.ConversationID},
		States: l.States, Host: l.Host}
	dialog := l.Dialog
	if trig != nil {
		dialog = nil
	}
	res := RunTurn(ctx, l.Engine, l.Bot, in, dialog, trig, ev.CreatedOn, l.Knowledge)
	if res.Err != nil {
		return nil, res.Err
	}
	l.Logs = append(l.Logs, res.Logs...)
	if res.Problem != nil {
		l.Problems = append(l.Problems, res.Problem)
	}
	if res.Trigger != nil {
		l.Triggers = append(l.Triggers, res.EventTrigger)
	}
	if res.Problem == nil {
		for _, s := range []struct {
			dst *json.RawMessage
			src json.RawMessage
		}{{&l.States.User, res.States.User}, {&l.States.Conversation, res.States.Conversation}, {&l.States.Bot, res.States.Bot}} {
			if s.src != nil {
				*s.dst = s.src
			}
		}
	}
	if res.Outcome != nil {
		l.Issues = append(l.Issues, res.Outcome.Issues...)
		if trig == nil {
			l.Dialog = res.Outcome.Dialog
		}
	}
	sent := l.Host.Sent()[before:]
	out := make([]map[string]any, len(sent))
	for i, m := range sent {
		out[i], _ = m["payload"].(map[string]any)
	}
	return out, nil
}

// LocalHost is an in-memory runtime.Host for one user and conversation.
type LocalHost struct {
	BotID, UserID, ConversationID string

	mu     sync.Mutex
	sent   []map[string]any
	events []map[string]any
}

// Sent returns the messages the bot sent, oldest first.
func (h *LocalHost) Sent() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.sent...)
}

// CreateMessage implements runtime.Host.
func (h *LocalHost) CreateMessage(_ context.Context, conv string, payload, metadata json.RawMessage, _ map[string]string) (func() map[string]any, error) {
	if _, err := model.ValidateMessagePayload(payload); err != nil {
		return nil, err
	}
	if conv != h.ConversationID {
		return nil, model.NotFound(fmt.Sprintf("Conversation %q", conv))
	}
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, model.Invalid("payload: %v", err)
	}
	m := map[string]any{"id": model.NewID(), "createdAt": model.FormatTime(model.Now()), "payload": p,
		"userId": h.BotID, "conversationId": conv}
	if metadata != nil {
		var md map[string]any
		if err := json.Unmarshal(metadata, &md); err != nil {
			return nil, model.Invalid("metadata: %v", err)
		}
		m["metadata"] = md
	}
	h.mu.Lock()
	h.sent = append(h.sent, m)
	h.mu.Unlock()
	return func() map[string]any { return m }, nil
}

// CreateEvent implements runtime.Host.
func (h *LocalHost) CreateEvent(_ context.Context, conv string, payload map[string]any) (map[string]any, error) {
	e := map[string]any{"id": nil, "createdAt": model.FormatTime(model.Now()), "payload": payload, "conversationId": conv, "userId": h.BotID}
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
	return e, nil
}

// GetMessage implements runtime.Host.
func (h *LocalHost) GetMessage(_ context.Context, id string) (map[string]any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.sent {
		if m["id"] == id {
			return m, nil
		}
	}
	return nil, model.NotFound(fmt.Sprintf("Message %q", id))
}

// ListMessages implements runtime.Host.
func (h *LocalHost) ListMessages(_ context.Context, conv, _ string) ([]map[string]any, string, error) {
	return h.Sent(), "", nil
}

// GetUser implements runtime.Host.
func (h *LocalHost) GetUser(_ context.Context, id string) (map[string]any, error) {
	return map[string]any{"id": id}, nil
}

// GetConversation implements runtime.Host.
func (h *LocalHost) GetConversation(_ context.Context, id string) (map[string]any, error) {
	return map[string]any{"id": id}, nil
}

// Call is not offered to local runs (workflow code does not use the
// Runtime API's other operations).
func (h *LocalHost) Call(_ context.Context, op string, _ map[string]any) (map[string]any, error) {
	return nil, model.Errorf(model.ErrMethodNotFound, "client.%s is not available in a local run", op)
}
