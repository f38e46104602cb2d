// Package testbots holds Go bots the tests plug into a server in place of
// the JavaScript runtime (app.WithBots).
package testbots

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/turns"
)

// Echo is the "hello bot" the e2e tests of @botpress/chat assume, after
// the upstream echo bot:
//   - text "metadata": a reply carrying the message's metadata;
//   - text "bloc": a bloc of 3 items (text, image, audio);
//   - other text: Hi! You said: "<lowercased text>";
//   - other payloads: I only understand text messages;
//   - a custom event: its payload echoed as a bot event.
type Echo struct {
	// Delay postpones each reaction (0: none).
	Delay time.Duration
}

// HandleTurn implements Bot.
func (b Echo) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
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
		return out.CreateEvent(ctx, turns.OutgoingEvent{Payload: in.Event.Payload})
	}
	var p struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(in.Message.Payload, &p)
	reply := turns.OutgoingMessage{}
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

// Resolver runs every bot's turns with bot.
func Resolver(bot turns.Bot) turns.Resolver {
	return func(context.Context, string) (turns.Bot, error) { return bot, nil }
}

// Gate holds every turn of a message whose payload mentions "block"
// until Release is closed (telling Started as each one starts), and hands
// every turn to Then (the blocked ones once released): a way to keep the
// turn workers busy.
type Gate struct {
	Started chan struct{}
	Release chan struct{}
	Then    turns.Bot
}

// NewGate returns a Gate in front of then.
func NewGate(then turns.Bot) Gate {
	return Gate{Started: make(chan struct{}, 64), Release: make(chan struct{}), Then: then}
}

func (g Gate) HandleTurn(ctx context.Context, in *turns.TurnInput, out turns.BotOutput) error {
	if in.Message != nil && strings.Contains(string(in.Message.Payload), `"block"`) {
		g.Started <- struct{}{}
		select {
		case <-g.Release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Then.HandleTurn(ctx, in, out)
}
