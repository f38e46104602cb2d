package wire

import "encoding/json"

// The webchat component writes and reads bloc items in the bot form
// {type, payload:{...}}; the Chat API (and storage) keeps them flat,
// {type, ...}. These convert between the two.

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

// NestBloc is the inverse of FlattenBloc, for the webchat component.
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
