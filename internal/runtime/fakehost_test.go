package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/parley-bots/parley/internal/model"
)

// fakeHost is an in-memory Host: messages stored in a slice.
type fakeHost struct {
	mu       sync.Mutex
	messages []map[string]any
	events   []map[string]any
	n        int
}

func newFakeHost() *fakeHost { return &fakeHost{} }

// Call echoes the operation and its input.
func (h *fakeHost) Call(ctx context.Context, op string, input map[string]any) (map[string]any, error) {
	if op == "getState" && input["name"] == "missing" {
		return nil, model.NotFound("State \"missing\"")
	}
	return map[string]any{"op": op, "input": input}, nil
}

func (h *fakeHost) CreateMessage(ctx context.Context, conv string, rawPayload, rawMetadata json.RawMessage, tags map[string]string) (func() map[string]any, error) {
	var payload, metadata map[string]any
	if err := json.Unmarshal(rawPayload, &payload); err != nil {
		return nil, fmt.Errorf("payload %s: %w", rawPayload, err)
	}
	if rawMetadata != nil {
		if err := json.Unmarshal(rawMetadata, &metadata); err != nil {
			return nil, fmt.Errorf("metadata %s: %w", rawMetadata, err)
		}
	}
	if t, _ := payload["type"].(string); t == "" {
		return nil, model.Invalid("payload.type is required")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	m := map[string]any{"id": fmt.Sprintf("msg_%d", h.n), "createdAt": "2025-03-01T10:00:00.000Z", "payload": payload, "userId": "bot", "conversationId": conv}
	if metadata != nil {
		m["metadata"] = metadata
	}
	h.messages = append(h.messages, m)
	return func() map[string]any { return m }, nil
}

func (h *fakeHost) CreateEvent(ctx context.Context, conv string, payload map[string]any) (map[string]any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	ev := map[string]any{"id": fmt.Sprintf("evt_%d", h.n), "createdAt": "2025-03-01T10:00:00.000Z", "payload": payload, "userId": "bot", "conversationId": conv}
	h.events = append(h.events, ev)
	return ev, nil
}

func (h *fakeHost) GetMessage(ctx context.Context, id string) (map[string]any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.messages {
		if m["id"] == id {
			return m, nil
		}
	}
	return nil, model.NotFound("Message")
}

func (h *fakeHost) ListMessages(ctx context.Context, conv, next string) ([]map[string]any, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, m := range h.messages {
		if m["conversationId"] == conv {
			out = append(out, m)
		}
	}
	return out, "", nil
}

func (h *fakeHost) GetUser(ctx context.Context, id string) (map[string]any, error) {
	if id == "boom" {
		return nil, fmt.Errorf("database is on fire")
	}
	return map[string]any{"id": id, "createdAt": "2025-03-01T10:00:00.000Z", "updatedAt": "2025-03-01T10:00:00.000Z"}, nil
}

func (h *fakeHost) GetConversation(ctx context.Context, id string) (map[string]any, error) {
	return map[string]any{"id": id, "createdAt": "2025-03-01T10:00:00.000Z", "updatedAt": "2025-03-01T10:00:00.000Z"}, nil
}

func (h *fakeHost) sent() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.messages...)
}
