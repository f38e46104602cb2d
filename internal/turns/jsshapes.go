package turns

import (
	"encoding/json"

	"github.com/parley-bots/parley/internal/wire"
)

// The Chat API shapes handed to bot code as Go maps (runtime.TurnInput,
// runtime.Host), built field by field: the same maps as encoding the wire
// value to JSON and decoding it into a map (toMap), which every turn did
// for its message, user and conversation and every createMessage for its
// answer, without encoding the whole value and parsing it back
// (TestShapesMatchJSON keeps them equal).

// messageMap is m as a map; payload, when not nil, is m.Payload already
// decoded (the event's, or the bot's own), else it is decoded here.
func messageMap(m *wire.Message, payload map[string]any) map[string]any {
	if payload == nil {
		payload = decodeObject(m.Payload)
	}
	out := map[string]any{"id": m.ID, "createdAt": m.CreatedAt, "payload": payload,
		"userId": m.UserID, "conversationId": m.ConversationID}
	if len(m.Metadata) > 0 {
		out["metadata"] = decodeValue(m.Metadata)
	}
	if m.IsBot != nil {
		out["isBot"] = *m.IsBot
	}
	return out
}

func userMap(u wire.User) map[string]any {
	out := map[string]any{"id": u.ID, "createdAt": u.CreatedAt, "updatedAt": u.UpdatedAt}
	if u.Name != "" {
		out["name"] = u.Name
	}
	if u.PictureURL != "" {
		out["pictureUrl"] = u.PictureURL
	}
	if u.Profile != "" {
		out["profile"] = u.Profile
	}
	return out
}

func conversationMap(c wire.Conversation) map[string]any {
	return map[string]any{"id": c.ID, "createdAt": c.CreatedAt, "updatedAt": c.UpdatedAt}
}

// decodeObject decodes a JSON object (nil when raw is not one).
func decodeObject(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// decodeValue decodes any JSON value (nil when raw is not JSON).
func decodeValue(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}
