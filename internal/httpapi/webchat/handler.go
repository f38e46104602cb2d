// Package webchat serves the Webchat API (docs/webchat.md) that the
// official @botpress/webchat 4.5.2 React component talks to, at
// /webchat/{clientId}/...: the /initialize SSE stream, the REST operations
// of @botpress/webchat-client 0.7.3, file uploads and downloads.
//
// The data is the Chat API's: the handler goes through the service's Chat
// and Webchat use cases, and its stream is the realtime hub's signal stream
// of the conversation, re-framed for the component (stream.go).
package webchat

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/files"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
)

// MaxBody is the limit of JSON request bodies (1 MB, docs/architecture.md, Limits).
const MaxBody = 1 << 20

// Streamer is the realtime hub's SSE stream of a conversation.
type Streamer interface {
	Serve(w http.ResponseWriter, r *http.Request, req realtime.StreamRequest, authorize func(context.Context) error) error
}

// Options tune the handler.
type Options struct {
	// StartWait is how long signals queued after init wait for the
	// client's conversation_started before they are sent anyway
	// (default 1.5 s).
	StartWait time.Duration
}

// Deps are what the Webchat API is served by.
type Deps struct {
	Chat    *conversations.Chat
	Webchat *conversations.Webchat
	Files   *files.Files
	Hub     Streamer
	// PublicURL is the base of the file URLs given to the component.
	PublicURL string
	// Limits are the per-bot and per-user request rates (nil: none).
	Limits *httpx.Limits
}

type handler struct {
	chat      *conversations.Chat
	webchat   *conversations.Webchat
	files     *files.Files
	hub       Streamer
	publicURL string
	limits    *httpx.Limits
	opts      Options

	mu     sync.Mutex
	starts map[startKey]map[chan struct{}]struct{}
}

type startKey struct{ bot, conv string }

// NewHandler returns the Webchat API handler; mount it at "/webchat/".
func NewHandler(d Deps, opts Options) http.Handler {
	if opts.StartWait <= 0 {
		opts.StartWait = 1500 * time.Millisecond
	}
	h := &handler{chat: d.Chat, webchat: d.Webchat, files: d.Files, hub: d.Hub, publicURL: strings.TrimRight(d.PublicURL, "/"),
		limits: d.Limits, opts: opts, starts: map[startKey]map[chan struct{}]struct{}{}}
	mux := httpx.NewMux()
	const p = "/webchat/{cid}"
	mux.Handle("GET "+p+"/initialize", h.scoped(h.initialize))

	mux.Handle("POST "+p+"/users", h.scoped(h.createUser))
	mux.Handle("POST "+p+"/users/key", h.scoped(h.generateUserKey))
	mux.Handle("GET "+p+"/users/me", h.authed(h.getUser))
	mux.Handle("PUT "+p+"/users/me", h.authed(h.updateUser))
	mux.Handle("DELETE "+p+"/users/me", h.authed(h.deleteUser))

	mux.Handle("GET "+p+"/conversations", h.scoped(h.listConversations))
	mux.Handle("POST "+p+"/conversations", h.authed(h.createConversation))
	mux.Handle("GET "+p+"/conversations/{id}", h.authed(h.getConversation))
	mux.Handle("DELETE "+p+"/conversations/{id}", h.authed(h.deleteConversation))
	mux.Handle("GET "+p+"/conversations/{id}/messages", h.authed(h.listMessages))
	mux.Handle("GET "+p+"/conversations/{id}/listen", h.authed(h.listen))
	mux.Handle("GET "+p+"/conversations/{id}/participants", h.authed(h.listParticipants))
	mux.Handle("POST "+p+"/conversations/{id}/participants", h.authed(h.addParticipant))
	mux.Handle("GET "+p+"/conversations/{id}/participants/{userId}", h.authed(h.getParticipant))
	mux.Handle("DELETE "+p+"/conversations/{id}/participants/{userId}", h.authed(h.removeParticipant))

	mux.Handle("POST "+p+"/messages", h.authed(h.createMessage))
	mux.Handle("GET "+p+"/messages/{id}", h.authed(h.getMessage))
	mux.Handle("PUT "+p+"/messages/{id}", h.authed(h.updateMessage))
	mux.Handle("DELETE "+p+"/messages/{id}", h.authed(h.deleteMessage))
	mux.Handle("PUT "+p+"/messages/{id}/feedback", h.authed(h.addFeedback))
	mux.Handle("DELETE "+p+"/messages/{id}/feedback", h.authed(h.removeFeedback))
	mux.Handle("PUT "+p+"/messages/{id}/select", h.authed(h.getMessage))

	mux.Handle("POST "+p+"/events", h.authed(h.createEvent))
	mux.Handle("GET "+p+"/events/{id}", h.authed(h.getEvent))

	mux.Handle("POST "+p+"/files", h.authed(h.createFile))
	mux.Handle("PUT "+p+"/files/{id}/upload", h.scoped(h.uploadFile))
	mux.Handle("GET "+p+"/files/{id}/{token}/{name}", h.scoped(h.readFile))

	mux.HandleFunc("POST "+p+"/p", func(w http.ResponseWriter, r *http.Request) { httpx.WriteJSON(w, http.StatusOK, httpx.Empty) })
	mux.Handle(p+"/", h.scoped(func(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope) error {
		return model.Errorf(model.ErrNotFound, "no webchat operation %s %s", r.Method, r.URL.Path)
	}))
	mux.Handle("/", httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		return model.Errorf(model.ErrNotFound, "[Webhook Handler] no webchat with this client id")
	}))
	return cors(limit(mux))
}

// limit refuses a declared body above MaxBody at once, before any other
// check; uploads (up to MaxFileSize, same value) delete their file record
// when refused, so they are left to uploadFile.
func limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBody && !strings.HasSuffix(r.URL.Path, "/upload") {
			httpx.WriteError(w, r, httpx.TooLarge(MaxBody))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowHeaders are the request headers the component and its uploads send
// (as observed from @botpress/webchat 4.5.2).
const allowHeaders = "content-type, x-user-key, x-admin-secret, timeout, x-amz-tagging, cache-control, pragma"

// cors answers preflights on every route and lets any origin read every
// response. The component sends no cookies (fetch in same-origin
// credentials mode), so "*" is enough and nothing ambient is exposed.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", "*")
		hd.Set("Access-Control-Expose-Headers", "Content-Type, Retry-After")
		if r.Method == http.MethodOptions {
			hd.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			allow := allowHeaders
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				allow += ", " + req // clientHeaders a site adds
			}
			hd.Set("Access-Control-Allow-Headers", allow)
			hd.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type scopedFunc func(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error
type authedFunc func(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope, c *conversations.Caller) error

func (h *handler) scoped(fn scopedFunc) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := h.webchat.Scope(r.Context(), r.PathValue("cid"))
		if err != nil {
			return err
		}
		if err := h.limits.AllowBot(sc.BotID); err != nil {
			return err
		}
		return fn(w, r, sc)
	}
}

func (h *handler) authed(fn authedFunc) httpx.Handler {
	return h.scoped(func(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
		c, err := h.webchat.Authenticate(r.Context(), sc, r.Header.Get("x-user-key"))
		if err != nil {
			return err
		}
		if err := h.limits.AllowUser(c.BotID, c.UserID); err != nil {
			return err
		}
		return fn(w, r, sc, c)
	})
}

// decode reads a JSON body of at most MaxBody bytes.
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength > MaxBody {
		return httpx.TooLarge(MaxBody)
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	return httpx.Decode(r, dst, false)
}

// ---- users

func (h *handler) createUser(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
	var in conversations.WebchatUserInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	u, key, err := h.webchat.CreateUser(r.Context(), sc, in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, map[string]any{"user": renderUser(u), "key": key})
}

func (h *handler) generateUserKey(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
	var in struct {
		ID string `json:"id"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	key, err := h.webchat.UserKey(sc, r.Header.Get("x-admin-secret"), in.ID)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]string{"key": key})
}

func (h *handler) getUser(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	u, err := h.chat.GetUser(r.Context(), c)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"user": renderUser(u)})
}

func (h *handler) updateUser(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	var in conversations.WebchatUserInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	u, err := h.webchat.UpdateUser(r.Context(), c, in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"user": renderUser(u)})
}

func (h *handler) deleteUser(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	if err := h.chat.DeleteUser(r.Context(), c); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

// ---- conversations

// listConversations must never fail (a failure replaces the whole chat
// with an error screen): anything wrong gives an empty list.
func (h *handler) listConversations(w http.ResponseWriter, r *http.Request, sc *conversations.WebchatScope) error {
	empty := map[string]any{"conversations": []conversationView{}, "meta": meta{}}
	c, err := h.webchat.Authenticate(r.Context(), sc, r.Header.Get("x-user-key"))
	if err != nil {
		return httpx.JSON(w, http.StatusOK, empty)
	}
	convs, next, err := h.webchat.ListConversations(r.Context(), c, r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.Logger(r.Context()).Warn("webchat: listing conversations failed", "err", err)
		return httpx.JSON(w, http.StatusOK, empty)
	}
	out := make([]conversationView, 0, len(convs))
	for _, wc := range convs {
		out = append(out, renderConversation(wc.Conversation, wc.LastMessage))
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"conversations": out, "meta": meta{next}})
}

func (h *handler) createConversation(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	conv, err := h.chat.CreateConversation(r.Context(), c, nil)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, map[string]any{"conversation": renderConversation(conv, nil)})
}

func (h *handler) getConversation(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	conv, err := h.chat.GetConversation(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"conversation": renderConversation(conv, nil)})
}

func (h *handler) deleteConversation(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	if err := h.chat.DeleteConversation(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

func (h *handler) listMessages(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	ms, next, err := h.chat.ListMessages(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		return err
	}
	fb, err := h.webchat.FeedbackFor(r.Context(), c, ms)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"messages": renderMessages(ms, fb), "meta": meta{next}})
}

func (h *handler) listParticipants(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	us, next, err := h.chat.ListParticipants(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"participants": renderUsers(us, c.BotID), "meta": meta{next}})
}

func (h *handler) addParticipant(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	var in struct {
		UserID *string `json:"userId"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	u, err := h.chat.AddParticipant(r.Context(), c, r.PathValue("id"), in.UserID)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"participant": renderUser(u)})
}

func (h *handler) getParticipant(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	u, err := h.chat.GetParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"participant": renderUser(u)})
}

func (h *handler) removeParticipant(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	if err := h.chat.RemoveParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId")); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

// ---- messages

func (h *handler) createMessage(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	ctx, err := h.webchat.Wait(r.Context())
	if err != nil {
		return err // shed before the body is read
	}
	var in conversations.WebchatMessageInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	m, err := h.webchat.CreateMessage(ctx, c, in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, map[string]any{"message": renderMessage(m, nil)})
}

func (h *handler) getMessage(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	m, err := h.chat.GetMessage(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	fb, err := h.webchat.FeedbackFor(r.Context(), c, []*model.Message{m})
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"message": renderMessage(m, fb[m.ID])})
}

// updateMessage: messages are immutable in Parley (the Chat API has no
// update either); the call is refused with a clear error.
func (h *handler) updateMessage(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	if _, err := h.chat.GetMessage(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return model.Invalid("messages cannot be edited on this server")
}

func (h *handler) deleteMessage(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	if err := h.chat.DeleteMessage(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

func (h *handler) addFeedback(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	var in struct {
		Value   *string `json:"value"`
		Comment string  `json:"comment"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Value == nil {
		return model.Invalid("value: required (positive or negative)")
	}
	if err := h.webchat.Feedback(r.Context(), c, r.PathValue("id"), in.Value, in.Comment); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

func (h *handler) removeFeedback(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	if err := h.webchat.Feedback(r.Context(), c, r.PathValue("id"), nil, ""); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

// ---- events

func (h *handler) createEvent(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	var in conversations.WebchatEventInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	res, err := h.webchat.CreateEvent(r.Context(), c, in)
	if err != nil {
		return err
	}
	if res.Started {
		h.started(c.BotID, res.Event.ConversationID)
	}
	return httpx.JSON(w, http.StatusCreated, map[string]any{"event": renderEvent(res.Event, &res.IsInitial)})
}

func (h *handler) getEvent(w http.ResponseWriter, r *http.Request, _ *conversations.WebchatScope, c *conversations.Caller) error {
	e, err := h.chat.GetEvent(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"event": renderEvent(e, nil)})
}
