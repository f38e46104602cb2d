package service

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// EchoBot is the "hello bot" the Chat API's e2e tests assume (contract
// §7.4), after the upstream echo bot:
//   - text "metadata": a reply carrying the message's metadata;
//   - text "bloc": a bloc of 3 items (text, image, audio);
//   - other text: Hi! You said: "<lowercased text>";
//   - other payloads: I only understand text messages;
//   - a custom event: its payload echoed as a bot event.
type EchoBot struct {
	// Delay postpones each reaction (0: none).
	Delay time.Duration
}

// HandleTurn implements Bot.
func (b EchoBot) HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error {
	if b.Delay > 0 {
		t := time.NewTimer(b.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if in.Message == nil {
		return out.CreateEvent(ctx, OutgoingEvent{Payload: in.Event.Payload})
	}
	var p struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(in.Message.Payload, &p)
	reply := OutgoingMessage{}
	switch {
	case p.Type != "text":
		reply.Payload = textPayload("I only understand text messages")
	case p.Text == "metadata":
		reply.Payload, reply.Metadata = textPayload("metadata"), in.Message.Metadata
	case p.Text == "bloc":
		reply.Payload = json.RawMessage(`{"type":"bloc","items":[` +
			`{"type":"text","text":"Hello, world!"},` +
			`{"type":"image","imageUrl":"https://upload.wikimedia.org/wikipedia/commons/4/47/PNG_transparency_demonstration_1.png"},` +
			`{"type":"audio","audioUrl":"https://upload.wikimedia.org/wikipedia/commons/c/c8/Example.ogg"}]}`)
	default:
		reply.Payload = textPayload(`Hi! You said: "` + strings.ToLower(p.Text) + `"`)
	}
	_, err := out.CreateMessage(ctx, reply)
	return err
}

func textPayload(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return b
}
