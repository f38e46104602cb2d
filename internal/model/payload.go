package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message payloads: the 12 variants @botpress/chat 0.5.5 knows (its
// message schemas). Listeners validate every signal against these schemas and turn a
// violation into an "unknown" event, so the server checks inputs against
// the same rules and stores only the listed fields: what a create returns
// is then exactly what listeners, getMessage and listMessages see.

// PayloadTypes lists the accepted message payload types.
var PayloadTypes = []string{"text", "markdown", "image", "audio", "video", "file", "location",
	"card", "carousel", "choice", "dropdown", "bloc"}

// fieldKind is the JSON type a payload field must have.
type fieldKind int

const (
	nonEmpty  fieldKind = iota // string of length >= 1
	anyString                  // string, may be empty
	number                     // JSON number
)

type field struct {
	name     string
	kind     fieldKind
	required bool
}

// flat describes the variants made only of scalar fields.
var flat = map[string][]field{
	"text":     {{"text", nonEmpty, true}},
	"markdown": {{"markdown", nonEmpty, true}},
	"image":    {{"imageUrl", nonEmpty, true}},
	"audio":    {{"audioUrl", nonEmpty, true}},
	"video":    {{"videoUrl", nonEmpty, true}},
	"file":     {{"fileUrl", nonEmpty, true}, {"title", nonEmpty, false}},
	"location": {{"latitude", number, true}, {"longitude", number, true}, {"address", anyString, false}, {"title", anyString, false}},
}

// blocItemTypes are the variants allowed inside a bloc.
var blocItemTypes = map[string]bool{"text": true, "markdown": true, "image": true, "audio": true,
	"video": true, "file": true, "location": true}

// ValidateMessagePayload checks a message payload and returns its
// normalised JSON: only the listed fields, keys in a fixed order. Errors
// are InvalidPayload naming the offending path.
func ValidateMessagePayload(raw json.RawMessage) (json.RawMessage, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, Invalid("payload: %v", err)
	}
	out, err := normalisePayload("payload", v, false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// ValidateWebchatMessagePayload is ValidateMessagePayload for the Webchat
// API, whose component sends a button click (choice, dropdown, card
// action) as {type: "text", text: <label>, value: <value>} (as
// @botpress/webchat 4.5.2 sends it): a text payload also keeps an optional `value`, a
// non-empty string, so that the bot's event.payload.value has it. The
// Chat API never accepts it (its payloads keep only the listed fields).
func ValidateWebchatMessagePayload(raw json.RawMessage) (json.RawMessage, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, Invalid("payload: %v", err)
	}
	out, err := normalisePayload("payload", v, false)
	if err != nil {
		return nil, err
	}
	if m := v.(map[string]any); out[0].v == "text" {
		if out, err = scalarFields("payload", m, []field{{"value", nonEmpty, false}}, out); err != nil {
			return nil, err
		}
	}
	return json.Marshal(out)
}

// ValidateEventPayload checks a custom event payload (any JSON object) and
// returns it compacted.
func ValidateEventPayload(raw json.RawMessage) (json.RawMessage, error) {
	return validateObject("payload", raw)
}

// ValidateMetadata checks message metadata: a JSON object whose values may
// be anything, never null itself (listeners reject a null metadata).
func ValidateMetadata(raw json.RawMessage) (json.RawMessage, error) {
	return validateObject("metadata", raw)
}

func validateObject(path string, raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, Invalid("%s: must be a JSON object", path)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, t); err != nil {
		return nil, Invalid("%s: malformed JSON", path)
	}
	return buf.Bytes(), nil
}

func decodeJSON(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as sent
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed JSON")
	}
	return v, nil
}

// orderedObject marshals its fields in insertion order, so normalised
// payloads always read "type" first, like the clients write them.
type orderedObject []kv

type kv struct {
	k string
	v any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func asObject(path string, v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, Invalid("%s: must be an object", path)
	}
	return m, nil
}

func typeOf(path string, m map[string]any) (string, error) {
	raw, ok := m["type"]
	if !ok {
		return "", Invalid("%s.type: required", path)
	}
	t, ok := raw.(string)
	if !ok {
		return "", Invalid("%s.type: must be a string", path)
	}
	return t, nil
}

// normalisePayload validates one payload (or bloc item when inBloc) and
// returns it with only its listed fields.
func normalisePayload(path string, v any, inBloc bool) (orderedObject, error) {
	m, err := asObject(path, v)
	if err != nil {
		return nil, err
	}
	t, err := typeOf(path, m)
	if err != nil {
		return nil, err
	}
	if inBloc && !blocItemTypes[t] {
		return nil, Invalid("%s.type: %q is not allowed in a bloc (allowed: text, markdown, image, audio, video, file, location)", path, t)
	}
	out := orderedObject{{"type", t}}
	if fields, ok := flat[t]; ok {
		return scalarFields(path, m, fields, out)
	}
	switch t {
	case "card":
		return card(path, m, out)
	case "carousel":
		items, err := array(path+".items", m["items"], true)
		if err != nil {
			return nil, err
		}
		cards := make([]orderedObject, 0, len(items))
		for i, it := range items {
			p := fmt.Sprintf("%s.items[%d]", path, i)
			im, err := asObject(p, it)
			if err != nil {
				return nil, err
			}
			if it, err := typeOf(p, im); err != nil {
				return nil, err
			} else if it != "card" {
				return nil, Invalid("%s.type: must be \"card\"", p)
			}
			c, err := card(p, im, orderedObject{{"type", "card"}})
			if err != nil {
				return nil, err
			}
			cards = append(cards, c)
		}
		return append(out, kv{"items", cards}), nil
	case "choice", "dropdown":
		out, err := scalarFields(path, m, []field{{"text", nonEmpty, true}}, out)
		if err != nil {
			return nil, err
		}
		list, err := objectList(path, "options", m["options"], []field{{"label", nonEmpty, true}, {"value", nonEmpty, true}})
		if err != nil {
			return nil, err
		}
		return append(out, kv{"options", list}), nil
	case "bloc":
		items, err := array(path+".items", m["items"], true)
		if err != nil {
			return nil, err
		}
		list := make([]orderedObject, 0, len(items))
		for i, it := range items {
			n, err := normalisePayload(fmt.Sprintf("%s.items[%d]", path, i), it, true)
			if err != nil {
				return nil, err
			}
			list = append(list, n)
		}
		return append(out, kv{"items", list}), nil
	}
	return nil, Invalid("%s.type: unknown payload type %q (expected one of %s)", path, t, strings.Join(PayloadTypes, ", "))
}

var actionKinds = map[string]bool{"postback": true, "url": true, "say": true}

func card(path string, m map[string]any, out orderedObject) (orderedObject, error) {
	out, err := scalarFields(path, m, []field{{"title", nonEmpty, true}, {"subtitle", nonEmpty, false}, {"imageUrl", nonEmpty, false}}, out)
	if err != nil {
		return nil, err
	}
	list, err := objectList(path, "actions", m["actions"], []field{{"action", nonEmpty, true}, {"label", nonEmpty, true}, {"value", nonEmpty, true}})
	if err != nil {
		return nil, err
	}
	for i, n := range list {
		if !actionKinds[n[0].v.(string)] {
			return nil, Invalid("%s.actions[%d].action: must be one of postback, url, say", path, i)
		}
	}
	return append(out, kv{"actions", list}), nil
}

// objectList validates a required array of objects with the given scalar
// fields (choice options, card actions), keeping only those fields.
func objectList(path, name string, v any, fields []field) ([]orderedObject, error) {
	items, err := array(path+"."+name, v, true)
	if err != nil {
		return nil, err
	}
	list := make([]orderedObject, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s.%s[%d]", path, name, i)
		om, err := asObject(p, it)
		if err != nil {
			return nil, err
		}
		n, err := scalarFields(p, om, fields, nil)
		if err != nil {
			return nil, err
		}
		list = append(list, n)
	}
	return list, nil
}

func array(path string, v any, required bool) ([]any, error) {
	if v == nil {
		if required {
			return nil, Invalid("%s: required", path)
		}
		return nil, nil
	}
	a, ok := v.([]any)
	if !ok {
		return nil, Invalid("%s: must be an array", path)
	}
	return a, nil
}

func scalarFields(path string, m map[string]any, fields []field, out orderedObject) (orderedObject, error) {
	for _, f := range fields {
		v, present := m[f.name]
		if !present {
			if f.required {
				return nil, Invalid("%s.%s: required", path, f.name)
			}
			continue
		}
		switch f.kind {
		case nonEmpty, anyString:
			s, ok := v.(string)
			if !ok {
				return nil, Invalid("%s.%s: must be a string", path, f.name)
			}
			if f.kind == nonEmpty && s == "" {
				return nil, Invalid("%s.%s: must not be empty", path, f.name)
			}
		case number:
			if _, ok := v.(json.Number); !ok {
				return nil, Invalid("%s.%s: must be a number", path, f.name)
			}
		}
		out = append(out, kv{f.name, v})
	}
	return out, nil
}
