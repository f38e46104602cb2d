package webchat

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/wire"
)

// The webchat's stream is the realtime hub's stream of the conversation
// (same durable signal log, replay and cross-node fan-out as the Chat
// API's), rendered for the component by an encoder (docs/webchat.md):
//
//   - the first message is the init signal, the stream's preamble, flushed
//     on its own; what the hub sends next is held (the stream's gate) until
//     the client's conversation_started for this conversation arrives (or
//     StartWait passes), because the component attaches its listeners only
//     after it has processed init;
//   - plain "data:" frames, no event: or id: lines;
//   - Chat API signals become webchat signals: message_created (bloc items
//     nested as {type, payload}), preceded for a user's message by
//     message_status_changed "processing" (the "Delivered" label) and
//     followed by typing_started (the bot is working on it); bot events
//     become custom signals; participant changes carry the user;
//   - idle pings are ": keepalive" comments.

func (h *handler) initialize(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
	sess, err := h.webchat.Initialize(r.Context(), sc, r.Header.Get("x-user-key"), r.URL.Query().Get("conversationId"))
	if err != nil {
		return err
	}
	user := struct {
		userView
		UserKey string `json:"userKey"`
	}{renderUser(sess.User), sess.UserKey}
	init := frame("init", map[string]any{
		"conversation": renderConversation(sess.Conversation, nil),
		"messages":     renderMessages(sess.Messages, sess.Feedback),
		"participants": renderUsers(sess.Participants, sc.BotID),
		"user":         user,
	})
	return h.stream(w, r, sess.Caller, sess.Conversation.ID, init)
}

// listen is listenConversation: the same stream without init.
func (h *handler) listen(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	convID := r.PathValue("id")
	if err := h.chat.AuthorizeListen(r.Context(), c, convID); err != nil {
		return err
	}
	return h.stream(w, r, c, convID, nil)
}

func (h *handler) stream(w http.ResponseWriter, r *http.Request, c *conversations.Caller, convID string, init []byte) error {
	req := realtime.StreamRequest{BotID: c.BotID, ConversationID: convID, UserID: c.UserID, Credential: c.KeyID(),
		Encoder: encoder{webchat: h.webchat, botID: c.BotID}, Preamble: init}
	if init != nil {
		wake := h.waitStart(c.BotID, convID)
		defer h.unwaitStart(c.BotID, convID, wake)
		gate := make(chan struct{})
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			defer close(gate)
			t := time.NewTimer(h.opts.StartWait)
			defer t.Stop()
			select {
			case <-wake:
				// Let the component finish handling init's aftermath.
				time.Sleep(50 * time.Millisecond)
			case <-t.C:
			case <-ctx.Done():
			}
		}()
		req.Gate = gate
	}
	return h.hub.Serve(w, r, req, func(ctx context.Context) error { return h.chat.AuthorizeListen(ctx, c, convID) })
}

// waitStart registers a stream waiting for its conversation's
// conversation_started event.
func (h *handler) waitStart(botID, convID string) chan struct{} {
	ch := make(chan struct{})
	k := startKey{botID, convID}
	h.mu.Lock()
	if h.starts[k] == nil {
		h.starts[k] = map[chan struct{}]struct{}{}
	}
	h.starts[k][ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *handler) unwaitStart(botID, convID string, ch chan struct{}) {
	k := startKey{botID, convID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := h.starts[k]; m != nil {
		if _, ok := m[ch]; ok {
			delete(m, ch)
			close(ch)
		}
		if len(m) == 0 {
			delete(h.starts, k)
		}
	}
}

// started wakes the streams of a conversation whose client has just posted
// conversation_started: their listeners are attached.
func (h *handler) started(botID, convID string) {
	k := startKey{botID, convID}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.starts[k] {
		close(ch)
	}
	delete(h.starts, k)
}

// frame renders one webchat signal.
func frame(typ string, data any) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

var keepalive = []byte(": keepalive\n\n")

// encoder renders the hub's signals as webchat frames
// (realtime.Encoder).
type encoder struct {
	webchat *conversations.Webchat
	botID   string
}

func (encoder) Ping(int64) []byte { return keepalive }

// Signal renders one signal; a participant_added reads the user it names
// (before the hub writes, bounded by ctx).
func (e encoder) Signal(ctx context.Context, sig *model.Signal) []byte {
	switch sig.Type {
	case model.SignalMessageCreated:
		var m struct {
			wire.Message
			IsBot bool `json:"isBot"`
		}
		if json.Unmarshal(sig.Data, &m) != nil {
			return nil
		}
		mv := messageView{ID: m.ID, CreatedAt: m.CreatedAt, ConversationID: m.ConversationID, UserID: m.UserID,
			Payload: wire.NestBloc(m.Payload), Metadata: m.Metadata}
		var out []byte
		if !m.IsBot {
			var md struct {
				ClientMessageID string `json:"clientMessageId"`
			}
			if m.Metadata != nil && json.Unmarshal(m.Metadata, &md) == nil && md.ClientMessageID != "" {
				out = append(out, frame("message_status_changed", map[string]any{"message": mv, "newStatus": "processing"})...)
			}
		}
		out = append(out, frame("message_created", mv)...)
		if !m.IsBot {
			out = append(out, frame("typing_started", map[string]any{"timeout": 5000})...)
		}
		return out
	case model.SignalEventCreated:
		var ev struct {
			Payload json.RawMessage `json:"payload"`
			IsBot   bool            `json:"isBot"`
		}
		if json.Unmarshal(sig.Data, &ev) != nil || !ev.IsBot {
			return nil
		}
		return frame("custom", map[string]any{"event": ev.Payload})
	case model.SignalParticipantAdded:
		var d wire.Participant
		if json.Unmarshal(sig.Data, &d) != nil || d.ParticipantID == e.botID {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		u, err := e.webchat.User(ctx, e.botID, d.ParticipantID)
		if err != nil {
			httpx.Logger(ctx).Warn("webchat: participant_added for an unreadable user", "err", err)
			return nil
		}
		return frame("participant_added", map[string]any{"conversationId": d.ConversationID, "participant": renderUser(u)})
	case model.SignalParticipantRemoved:
		var d wire.Participant
		if json.Unmarshal(sig.Data, &d) != nil {
			return nil
		}
		return frame("participant_removed", d)
	}
	return nil
}
