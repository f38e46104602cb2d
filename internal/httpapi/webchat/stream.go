package webchat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/service"
)

// The webchat's stream is the realtime hub's stream of the conversation
// (same durable signal log, replay and cross-node fan-out as the Chat
// API's), written through an adapter that re-frames it for the component
// (contract §3):
//
//   - the first message is the init signal, flushed on its own; what the
//     hub sends next is held until the client's conversation_started for
//     this conversation arrives (or StartWait passes), because the
//     component attaches its listeners only after it has processed init;
//   - plain "data:" frames, no event: or id: lines;
//   - Chat API signals become webchat signals: message_created (bloc items
//     nested as {type, payload}), preceded for a user's message by
//     message_status_changed "processing" (the "Delivered" label) and
//     followed by typing_started (the bot is working on it); bot events
//     become custom signals; participant changes carry the user;
//   - the hub's idle "ping" frames become ": keepalive" comments.

func (h *handler) initialize(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
	sess, err := h.svc.WebchatInitialize(r.Context(), sc, r.Header.Get("x-user-key"), r.URL.Query().Get("conversationId"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
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
	h.stream(w, r, sess.Caller, sess.Conversation.ID, init)
}

// listen is listenConversation: the same stream without init.
func (h *handler) listen(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	convID := r.PathValue("id")
	if err := h.svc.ChatAuthorizeListen(r.Context(), c, convID); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	h.stream(w, r, c, convID, nil)
}

func (h *handler) stream(w http.ResponseWriter, r *http.Request, c *service.ChatCaller, convID string, init []byte) {
	if h.hub == nil {
		httpx.WriteError(w, r, errors.New("webchat: no realtime hub"))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	a := &adapter{w: w, rc: http.NewResponseController(w), h: h, ctx: ctx, botID: c.BotID, userID: c.UserID,
		init: init, open: init == nil, opened: make(chan struct{})}
	var wake chan struct{}
	if init != nil {
		wake = h.waitStart(c.BotID, convID)
		defer h.unwaitStart(c.BotID, convID, wake)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.gate(wake, h.opts.StartWait) }()
	defer wg.Wait()
	defer cancel()
	r = r.WithContext(ctx)
	err := h.hub.Serve(a, r, realtime.StreamRequest{BotID: c.BotID, ConversationID: convID, UserID: c.UserID},
		func(ctx context.Context) error { return h.svc.ChatAuthorizeListen(ctx, c, convID) })
	if err != nil && !a.wroteHeader() {
		httpx.WriteError(w, r, err)
	}
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

// adapter is the http.ResponseWriter the hub streams into.
type adapter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	h      *handler
	ctx    context.Context
	botID  string
	userID string

	mu       sync.Mutex
	init     []byte // written right after the headers, then nil
	header   bool
	open     bool // frames go straight out; else they wait in pending
	opened   chan struct{}
	pending  bytes.Buffer
	writeErr error
}

func (a *adapter) Header() http.Header { return a.w.Header() }

func (a *adapter) WriteHeader(code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.header = true
	a.w.WriteHeader(code)
}

func (a *adapter) wroteHeader() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.header
}

// Write takes one frame of the hub's stream.
func (a *adapter) Write(p []byte) (int, error) {
	out := a.transform(p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.header {
		a.header = true
	}
	if a.writeErr != nil {
		return 0, a.writeErr
	}
	if !a.open {
		a.pending.Write(out)
		return len(p), nil
	}
	if len(out) > 0 {
		if _, err := a.w.Write(out); err != nil {
			a.writeErr = err
			return 0, err
		}
	}
	return len(p), nil
}

// FlushError is what http.ResponseController.Flush calls. The first flush
// (the headers) is followed by the init frame, flushed on its own.
func (a *adapter) FlushError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.writeErr != nil {
		return a.writeErr
	}
	if !a.open && a.init == nil {
		return nil // held frames are flushed when the gate opens
	}
	if err := a.rc.Flush(); err != nil {
		a.writeErr = err
		return err
	}
	if a.init != nil {
		if _, err := a.w.Write(a.init); err != nil {
			a.writeErr = err
			return err
		}
		a.init = nil
		if err := a.rc.Flush(); err != nil {
			a.writeErr = err
			return err
		}
		close(a.opened) // starts the gate's clock
	}
	return nil
}

// SetWriteDeadline lets the hub bound its writes.
func (a *adapter) SetWriteDeadline(t time.Time) error { return a.rc.SetWriteDeadline(t) }

// gate opens the stream once the client is listening.
func (a *adapter) gate(wake chan struct{}, wait time.Duration) {
	if wake == nil {
		return
	}
	select {
	case <-a.opened:
	case <-a.ctx.Done():
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-wake:
		// Let the component finish handling init's aftermath.
		time.Sleep(50 * time.Millisecond)
	case <-t.C:
	case <-a.ctx.Done():
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open = true
	if a.writeErr != nil || a.pending.Len() == 0 {
		return
	}
	_ = a.rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := a.w.Write(a.pending.Bytes()); err != nil {
		a.writeErr = err
		return
	}
	a.pending.Reset()
	if err := a.rc.Flush(); err != nil {
		a.writeErr = err
	}
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

// transform re-frames one SSE event of the hub.
func (a *adapter) transform(p []byte) []byte {
	var data []byte
	for _, line := range bytes.Split(p, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	if data == nil {
		return nil
	}
	if string(data) == "ping" {
		return keepalive
	}
	var sig struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(data, &sig) != nil {
		return nil
	}
	switch sig.Type {
	case model.SignalMessageCreated:
		var m struct {
			service.ChatMessageView
			IsBot bool `json:"isBot"`
		}
		if json.Unmarshal(sig.Data, &m) != nil {
			return nil
		}
		mv := messageView{ID: m.ID, CreatedAt: m.CreatedAt, ConversationID: m.ConversationID, UserID: m.UserID,
			Payload: service.NestBloc(m.Payload), Metadata: m.Metadata}
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
		var e struct {
			Payload json.RawMessage `json:"payload"`
			IsBot   bool            `json:"isBot"`
		}
		if json.Unmarshal(sig.Data, &e) != nil || !e.IsBot {
			return nil
		}
		return frame("custom", map[string]any{"event": e.Payload})
	case model.SignalParticipantAdded:
		var d struct {
			ConversationID string `json:"conversationId"`
			ParticipantID  string `json:"participantId"`
		}
		if json.Unmarshal(sig.Data, &d) != nil || d.ParticipantID == a.botID {
			return nil
		}
		ctx, cancel := context.WithTimeout(a.ctx, 2*time.Second)
		defer cancel()
		u, err := a.h.svc.WebchatUser(ctx, a.botID, d.ParticipantID)
		if err != nil {
			return nil
		}
		return frame("participant_added", map[string]any{"conversationId": d.ConversationID, "participant": renderUser(u)})
	case model.SignalParticipantRemoved:
		var d struct {
			ConversationID string `json:"conversationId"`
			ParticipantID  string `json:"participantId"`
		}
		if json.Unmarshal(sig.Data, &d) != nil {
			return nil
		}
		return frame("participant_removed", d)
	}
	return nil
}
