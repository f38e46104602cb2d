package runtime

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Event is the bot-side event object (documented in docs/runtime.md, type
// IncomingEvent) as Go data. Its JSON form has exactly the documented fields:
// required ones always, optional ones only when set. Inside bot code the
// runtime builds the same object with createdOn as a JS Date.
type Event struct {
	BotID          string
	ConversationID string // optional
	CreatedOn      time.Time
	Direction      string // model.DirectionIncoming or model.DirectionOutgoing
	ID             string
	Integration    string // optional; "chat" for the Chat API
	KB             *KB    // only when knowledge bases were queried
	MessageID      string // messages only
	Payload        map[string]any
	Preview        string
	State          EventState // in bot code, the turn's live state objects
	Tags           *Tags
	Trigger        *Trigger // only when a workflow trigger started the turn
	Type           string
	UserID         string // optional
}

// KB is event.kb: the knowledge bases queried for the event and the
// passages found (an array, empty when none scored; package turns fills
// both, docs/files-api.md).
type KB struct {
	Included []any `json:"included"`
	Results  []any `json:"results"`
}

// EventState is event.state: the user, conversation and bot state objects
// (nil shown as {}). RunTurn ignores it and shows TurnInput.States instead.
type EventState struct {
	User         map[string]any
	Conversation map[string]any
	Bot          map[string]any
}

// MarshalJSON renders the three states in this order, nil as {}.
func (s EventState) MarshalJSON() ([]byte, error) {
	orEmpty := func(m map[string]any) map[string]any {
		if m == nil {
			return map[string]any{}
		}
		return m
	}
	return json.Marshal(struct {
		User         map[string]any `json:"user"`
		Conversation map[string]any `json:"conversation"`
		Bot          map[string]any `json:"bot"`
	}{orEmpty(s.User), orEmpty(s.Conversation), orEmpty(s.Bot)})
}

// Tags are the tags linked to the event. All three maps are always shown
// (as {} when empty) so bot code can read event.tags.user.x without guards.
type Tags struct {
	Conversation map[string]string `json:"conversation"`
	Message      map[string]string `json:"message"`
	User         map[string]string `json:"user"`
}

// Trigger is the workflow trigger that started the turn.
type Trigger struct {
	ConversationID string `json:"conversationId,omitempty"`
	EventName      string `json:"eventName,omitempty"`
	FlowID         string `json:"flowId"`
	Integration    string `json:"integration,omitempty"`
	NodeID         string `json:"nodeId"`
	UserID         string `json:"userId,omitempty"`
}

// eventJSON fixes the wire form: the documented order, createdOn as an ISO string with
// milliseconds (what JS Date.prototype.toJSON prints).
type eventJSON struct {
	BotID          string         `json:"botId"`
	ConversationID string         `json:"conversationId,omitempty"`
	CreatedOn      string         `json:"createdOn"`
	Direction      string         `json:"direction"`
	ID             string         `json:"id"`
	Integration    string         `json:"integration,omitempty"`
	KB             *KB            `json:"kb,omitempty"`
	MessageID      string         `json:"messageId,omitempty"`
	Payload        map[string]any `json:"payload"`
	Preview        string         `json:"preview"`
	State          EventState     `json:"state"`
	Tags           *Tags          `json:"tags,omitempty"`
	Trigger        *Trigger       `json:"trigger,omitempty"`
	Type           string         `json:"type"`
	UserID         string         `json:"userId,omitempty"`
}

// MarshalJSON renders the documented JSON form of the event.
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{
		BotID: e.BotID, ConversationID: e.ConversationID, CreatedOn: model.FormatTime(e.CreatedOn),
		Direction: e.Direction, ID: e.ID, Integration: e.Integration, KB: e.KB, MessageID: e.MessageID,
		Payload: e.Payload, Preview: e.Preview, State: e.State, Tags: e.Tags.normalized(), Trigger: e.Trigger,
		Type: e.Type, UserID: e.UserID,
	}
	if j.Payload == nil {
		j.Payload = map[string]any{}
	}
	return json.Marshal(j)
}

func (t *Tags) normalized() *Tags {
	if t == nil {
		return nil
	}
	n := *t
	for _, m := range []*map[string]string{&n.Conversation, &n.Message, &n.User} {
		if *m == nil {
			*m = map[string]string{}
		}
	}
	return &n
}

// NewTags returns the event tags; nil maps become empty ones.
func NewTags(conversation, message, user map[string]string) *Tags {
	t := &Tags{Conversation: conversation, Message: message, User: user}
	for _, m := range []*map[string]string{&t.Conversation, &t.Message, &t.User} {
		if *m == nil {
			*m = map[string]string{}
		}
	}
	return t
}

// NewMessageEvent builds the event of a stored message: type is the payload
// type, preview its plain-text rendering, messageId the message's id. The
// event id is new; tags carry the message's tags (the turns package adds the user's
// and conversation's, which the model does not hold).
func NewMessageEvent(integration string, m model.Message) (Event, error) {
	var payload map[string]any
	if err := json.Unmarshal(m.Payload, &payload); err != nil || payload == nil {
		return Event{}, model.Invalid("message %s: payload is not a JSON object", m.ID)
	}
	dir := m.Direction
	if dir == "" {
		dir = model.DirectionIncoming
	}
	typ, _ := payload["type"].(string)
	return Event{
		BotID:          m.BotID,
		ConversationID: m.ConversationID,
		CreatedOn:      m.CreatedAt,
		Direction:      dir,
		ID:             model.NewID(),
		Integration:    integration,
		MessageID:      m.ID,
		Payload:        payload,
		Preview:        Preview(payload),
		Tags:           NewTags(nil, m.Tags, nil),
		Type:           typ,
		UserID:         m.UserID,
	}, nil
}

// NewCustomEvent builds the event of a stored custom event: type is
// "<integration>:<name>", name being ev.Type or "custom" (so "chat:custom"
// for the Chat API's POST /events).
func NewCustomEvent(integration string, ev model.Event) (Event, error) {
	var payload map[string]any
	if err := json.Unmarshal(ev.Payload, &payload); err != nil || payload == nil {
		return Event{}, model.Invalid("event %s: payload is not a JSON object", ev.ID)
	}
	name := ev.Type
	if name == "" {
		name = "custom"
	}
	id := ev.ID
	if id == "" {
		id = model.NewID()
	}
	return Event{
		BotID:          ev.BotID,
		ConversationID: ev.ConversationID,
		CreatedOn:      ev.CreatedAt,
		Direction:      model.DirectionIncoming,
		ID:             id,
		Integration:    integration,
		Payload:        payload,
		Preview:        Preview(payload),
		Tags:           NewTags(nil, nil, nil),
		Type:           integration + ":" + name,
		UserID:         ev.UserID,
	}, nil
}

// maxFallbackPreview caps the JSON rendering of payloads that are not a
// known message variant; known variants are rendered in full.
const maxFallbackPreview = 1000

// Preview renders a payload as plain text. The table is in docs/runtime.md:
// text → the text; markdown → the markdown source; image/audio/video →
// "[image] <url>"; file → "[file] <title> (<url>)" or "[file] <url>";
// location → "[location] <title>, <address> (<lat>, <lon>)"; card → title,
// subtitle and "[label]"s on lines; carousel → cards separated by a blank
// line; choice/dropdown → text and "[label]"s; bloc → items on lines;
// anything else → compact JSON of the payload (at most 1000 bytes).
func Preview(p map[string]any) string {
	var b strings.Builder
	preview(&b, p, true)
	return b.String()
}

func preview(b *strings.Builder, p map[string]any, top bool) {
	typ, _ := p["type"].(string)
	// Botpress bloc items may nest their fields under "payload".
	if inner, ok := p["payload"].(map[string]any); ok && !top {
		p = inner
	}
	switch typ {
	case "text":
		b.WriteString(str(p, "text"))
	case "markdown":
		b.WriteString(str(p, "markdown"))
	case "image", "audio", "video":
		b.WriteString("[" + typ + "] " + str(p, typ+"Url"))
	case "file":
		b.WriteString("[file] ")
		if t := str(p, "title"); t != "" {
			b.WriteString(t + " (" + str(p, "fileUrl") + ")")
		} else {
			b.WriteString(str(p, "fileUrl"))
		}
	case "location":
		b.WriteString("[location] ")
		var parts []string
		for _, k := range []string{"title", "address"} {
			if s := str(p, k); s != "" {
				parts = append(parts, s)
			}
		}
		if len(parts) > 0 {
			b.WriteString(strings.Join(parts, ", ") + " ")
		}
		b.WriteString("(" + num(p["latitude"]) + ", " + num(p["longitude"]) + ")")
	case "card":
		lines(b, str(p, "title"), str(p, "subtitle"), labels(p["actions"]))
	case "carousel":
		for i, it := range maps(p["items"]) {
			if i > 0 {
				b.WriteString("\n\n")
			}
			preview(b, it, false)
		}
	case "choice", "dropdown":
		lines(b, str(p, "text"), labels(p["options"]))
	case "bloc":
		for i, it := range maps(p["items"]) {
			if i > 0 {
				b.WriteString("\n")
			}
			preview(b, it, false)
		}
	default:
		j, _ := json.Marshal(p)
		if len(j) > maxFallbackPreview {
			j = append(j[:maxFallbackPreview:maxFallbackPreview], "…"...)
		}
		b.Write(j)
	}
}

func lines(b *strings.Builder, ls ...string) {
	first := true
	for _, l := range ls {
		if l == "" {
			continue
		}
		if !first {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		first = false
	}
}

func labels(v any) string {
	var out []string
	for _, m := range maps(v) {
		if l := str(m, "label"); l != "" {
			out = append(out, "["+l+"]")
		}
	}
	return strings.Join(out, " ")
}

func maps(v any) []map[string]any {
	arr, _ := v.([]any)
	out := make([]map[string]any, 0, len(arr))
	for _, x := range arr {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func str(p map[string]any, k string) string {
	s, _ := p[k].(string)
	return s
}

func num(v any) string {
	switch n := v.(type) {
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(n, 10)
	case int:
		return strconv.Itoa(n)
	case json.Number:
		return n.String()
	}
	return "?"
}
