// Package webchat serves the Webchat API (contracts/webchat-api.md) that the
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
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/service"
)

// MaxBody is the limit of JSON request bodies (SPEC: Chat, 1 MB).
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

type handler struct {
	svc  *service.Service
	hub  Streamer
	opts Options

	mu     sync.Mutex
	starts map[startKey]map[chan struct{}]struct{}
}

type startKey struct{ bot, conv string }

// NewHandler returns the Webchat API handler; mount it at "/webchat/".
func NewHandler(svc *service.Service, hub Streamer, opts Options) http.Handler {
	if opts.StartWait <= 0 {
		opts.StartWait = 1500 * time.Millisecond
	}
	h := &handler{svc: svc, hub: hub, opts: opts, starts: map[startKey]map[chan struct{}]struct{}{}}
	mux := http.NewServeMux()
	const p = "/webchat/{cid}"
	mux.HandleFunc("GET "+p+"/initialize", h.scoped(h.initialize))

	mux.HandleFunc("POST "+p+"/users", h.scoped(h.createUser))
	mux.HandleFunc("POST "+p+"/users/key", h.scoped(h.generateUserKey))
	mux.HandleFunc("GET "+p+"/users/me", h.authed(h.getUser))
	mux.HandleFunc("PUT "+p+"/users/me", h.authed(h.updateUser))
	mux.HandleFunc("DELETE "+p+"/users/me", h.authed(h.deleteUser))

	mux.HandleFunc("GET "+p+"/conversations", h.scoped(h.listConversations))
	mux.HandleFunc("POST "+p+"/conversations", h.authed(h.createConversation))
	mux.HandleFunc("GET "+p+"/conversations/{id}", h.authed(h.getConversation))
	mux.HandleFunc("DELETE "+p+"/conversations/{id}", h.authed(h.deleteConversation))
	mux.HandleFunc("GET "+p+"/conversations/{id}/messages", h.authed(h.listMessages))
	mux.HandleFunc("GET "+p+"/conversations/{id}/listen", h.authed(h.listen))
	mux.HandleFunc("GET "+p+"/conversations/{id}/participants", h.authed(h.listParticipants))
	mux.HandleFunc("POST "+p+"/conversations/{id}/participants", h.authed(h.addParticipant))
	mux.HandleFunc("GET "+p+"/conversations/{id}/participants/{userId}", h.authed(h.getParticipant))
	mux.HandleFunc("DELETE "+p+"/conversations/{id}/participants/{userId}", h.authed(h.removeParticipant))

	mux.HandleFunc("POST "+p+"/messages", h.authed(h.createMessage))
	mux.HandleFunc("GET "+p+"/messages/{id}", h.authed(h.getMessage))
	mux.HandleFunc("PUT "+p+"/messages/{id}", h.authed(h.updateMessage))
	mux.HandleFunc("DELETE "+p+"/messages/{id}", h.authed(h.deleteMessage))
	mux.HandleFunc("PUT "+p+"/messages/{id}/feedback", h.authed(h.addFeedback))
	mux.HandleFunc("DELETE "+p+"/messages/{id}/feedback", h.authed(h.removeFeedback))
	mux.HandleFunc("PUT "+p+"/messages/{id}/select", h.authed(h.getMessage))

	mux.HandleFunc("POST "+p+"/events", h.authed(h.createEvent))
	mux.HandleFunc("GET "+p+"/events/{id}", h.authed(h.getEvent))

	mux.HandleFunc("POST "+p+"/files", h.authed(h.createFile))
	mux.HandleFunc("PUT "+p+"/files/{id}/upload", h.scoped(h.uploadFile))
	mux.HandleFunc("GET "+p+"/files/{id}/{token}/{name}", h.scoped(h.readFile))

	mux.HandleFunc("POST "+p+"/p", func(w http.ResponseWriter, r *http.Request) { httpx.WriteJSON(w, http.StatusOK, httpx.Empty) })
	mux.HandleFunc(p+"/", h.scoped(func(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope) {
		httpx.WriteError(w, r, model.Errorf(model.ErrNotFound, "no webchat operation %s %s", r.Method, r.URL.Path))
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, model.Errorf(model.ErrNotFound, "[Webhook Handler] no webchat with this client id"))
	})
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
// (contract §1.3).
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

type scopedFunc func(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope)
type authedFunc func(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope, c *service.ChatCaller)

func (h *handler) scoped(fn scopedFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sc, err := h.svc.WebchatScope(r.Context(), r.PathValue("cid"))
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		fn(w, r, sc)
	}
}

func (h *handler) authed(fn authedFunc) http.HandlerFunc {
	return h.scoped(func(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
		c, err := h.svc.WebchatAuthenticate(r.Context(), sc, r.Header.Get("x-user-key"))
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		fn(w, r, sc, c)
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

// ---- wire shapes (contract §2.3)

type userView struct {
	ID         string            `json:"id"`
	Name       string            `json:"name,omitempty"`
	PictureURL string            `json:"pictureUrl,omitempty"`
	Data       map[string]any    `json:"data,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	CreatedAt  string            `json:"createdAt"`
	UpdatedAt  string            `json:"updatedAt"`
}

func renderUser(u *model.ChatUser) userView {
	p := service.ParseWebchatProfile(u.Profile)
	return userView{ID: u.ID, Name: u.Name, PictureURL: u.PictureURL, Data: p.Data, Attributes: p.Attributes,
		CreatedAt: model.FormatTime(u.CreatedAt), UpdatedAt: model.FormatTime(u.UpdatedAt)}
}

func renderUsers(us []*model.ChatUser, botID string) []userView {
	out := make([]userView, 0, len(us))
	for _, u := range us {
		if u.ID == botID {
			continue // the bot is named by the page's botName, not as a participant
		}
		out = append(out, renderUser(u))
	}
	return out
}

type messageView struct {
	ID             string                   `json:"id"`
	CreatedAt      string                   `json:"createdAt"`
	ConversationID string                   `json:"conversationId"`
	UserID         string                   `json:"userId"`
	Payload        json.RawMessage          `json:"payload"`
	Metadata       json.RawMessage          `json:"metadata,omitempty"`
	Feedback       *service.MessageFeedback `json:"feedback,omitempty"`
}

func renderMessage(m *model.Message, fb *service.MessageFeedback) messageView {
	return messageView{ID: m.ID, CreatedAt: model.FormatTime(m.CreatedAt), ConversationID: m.ConversationID,
		UserID: m.UserID, Payload: service.NestBloc(m.Payload), Metadata: m.Metadata, Feedback: fb}
}

func renderMessages(ms []*model.Message, fb map[string]*service.MessageFeedback) []messageView {
	out := make([]messageView, 0, len(ms))
	for _, m := range ms {
		out = append(out, renderMessage(m, fb[m.ID]))
	}
	return out
}

type conversationView struct {
	ID          string       `json:"id"`
	CreatedAt   string       `json:"createdAt"`
	UpdatedAt   string       `json:"updatedAt"`
	LastMessage *messageView `json:"lastMessage,omitempty"`
}

func renderConversation(c *model.Conversation, last *model.Message) conversationView {
	v := conversationView{ID: c.ID, CreatedAt: model.FormatTime(c.CreatedAt), UpdatedAt: model.FormatTime(c.UpdatedAt)}
	if last != nil {
		m := renderMessage(last, nil)
		v.LastMessage = &m
		if last.CreatedAt.After(c.UpdatedAt) {
			v.UpdatedAt = m.CreatedAt // the history list sorts on updatedAt
		}
	}
	return v
}

type eventView struct {
	ID             string          `json:"id"`
	CreatedAt      string          `json:"createdAt"`
	ConversationID string          `json:"conversationId"`
	UserID         string          `json:"userId"`
	Payload        json.RawMessage `json:"payload"`
}

// renderEvent gives an event in the webchat's {type, data} payload form.
func renderEvent(e *model.Event, isInitial *bool) eventView {
	var payload json.RawMessage
	switch e.Type {
	case service.WebchatConversationStarted:
		initial := false
		if isInitial != nil {
			initial = *isInitial
		}
		payload, _ = json.Marshal(map[string]any{"type": "conversation_started",
			"data": map[string]any{"status": map[string]any{"isInitial": initial}}})
	default:
		payload, _ = json.Marshal(map[string]any{"type": "custom", "data": e.Payload})
	}
	return eventView{ID: e.ID, CreatedAt: model.FormatTime(e.CreatedAt), ConversationID: e.ConversationID,
		UserID: e.UserID, Payload: payload}
}

type meta struct {
	NextToken string `json:"nextToken,omitempty"`
}

// ---- users

func (h *handler) createUser(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
	var in service.WebchatUserInput
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, key, err := h.svc.WebchatCreateUser(r.Context(), sc, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"user": renderUser(u), "key": key})
}

func (h *handler) generateUserKey(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	key, err := h.svc.WebchatUserKey(sc, r.Header.Get("x-admin-secret"), in.ID)
	httpx.Reply(w, r, http.StatusOK, map[string]string{"key": key}, err)
}

func (h *handler) getUser(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	u, err := h.svc.ChatGetUser(r.Context(), c)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"user": renderUser(u)})
}

func (h *handler) updateUser(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	var in service.WebchatUserInput
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, err := h.svc.WebchatUpdateUser(r.Context(), c, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"user": renderUser(u)})
}

func (h *handler) deleteUser(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatDeleteUser(r.Context(), c))
}

// ---- conversations

// listConversations must never fail (a failure replaces the whole chat
// with an error screen): anything wrong gives an empty list.
func (h *handler) listConversations(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
	empty := map[string]any{"conversations": []conversationView{}, "meta": meta{}}
	c, err := h.svc.WebchatAuthenticate(r.Context(), sc, r.Header.Get("x-user-key"))
	if err != nil {
		httpx.WriteJSON(w, http.StatusOK, empty)
		return
	}
	convs, next, err := h.svc.WebchatListConversations(r.Context(), c, r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.Logger(r.Context()).Warn("webchat: listing conversations failed", "err", err)
		httpx.WriteJSON(w, http.StatusOK, empty)
		return
	}
	out := make([]conversationView, 0, len(convs))
	for _, wc := range convs {
		out = append(out, renderConversation(wc.Conversation, wc.LastMessage))
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"conversations": out, "meta": meta{next}})
}

func (h *handler) createConversation(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	conv, err := h.svc.ChatCreateConversation(r.Context(), c, nil)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"conversation": renderConversation(conv, nil)})
}

func (h *handler) getConversation(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	conv, err := h.svc.ChatGetConversation(r.Context(), c, r.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"conversation": renderConversation(conv, nil)})
}

func (h *handler) deleteConversation(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatDeleteConversation(r.Context(), c, r.PathValue("id")))
}

func (h *handler) listMessages(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	ms, next, err := h.svc.ChatListMessages(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	fb, err := h.svc.WebchatFeedbackFor(r.Context(), c, ms)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"messages": renderMessages(ms, fb), "meta": meta{next}})
}

func (h *handler) listParticipants(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	us, next, err := h.svc.ChatListParticipants(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"participants": renderUsers(us, c.BotID), "meta": meta{next}})
}

func (h *handler) addParticipant(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	var in struct {
		UserID *string `json:"userId"`
	}
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, err := h.svc.ChatAddParticipant(r.Context(), c, r.PathValue("id"), in.UserID)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"participant": renderUser(u)})
}

func (h *handler) getParticipant(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	u, err := h.svc.ChatGetParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"participant": renderUser(u)})
}

func (h *handler) removeParticipant(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatRemoveParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId")))
}

// ---- messages

func (h *handler) createMessage(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	var in service.ChatMessageInput
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	m, err := h.svc.WebchatCreateMessage(r.Context(), c, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"message": renderMessage(m, nil)})
}

func (h *handler) getMessage(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	m, err := h.svc.ChatGetMessage(r.Context(), c, r.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	fb, err := h.svc.WebchatFeedbackFor(r.Context(), c, []*model.Message{m})
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"message": renderMessage(m, fb[m.ID])})
}

// updateMessage: messages are immutable in Parley (the Chat API has no
// update either); the call is refused with a clear error.
func (h *handler) updateMessage(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	if _, err := h.svc.ChatGetMessage(r.Context(), c, r.PathValue("id")); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteError(w, r, model.Invalid("messages cannot be edited on this server"))
}

func (h *handler) deleteMessage(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatDeleteMessage(r.Context(), c, r.PathValue("id")))
}

func (h *handler) addFeedback(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	var in struct {
		Value   *string `json:"value"`
		Comment string  `json:"comment"`
	}
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if in.Value == nil {
		httpx.WriteError(w, r, model.Invalid("value: required (positive or negative)"))
		return
	}
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.WebchatFeedback(r.Context(), c, r.PathValue("id"), in.Value, in.Comment))
}

func (h *handler) removeFeedback(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.WebchatFeedback(r.Context(), c, r.PathValue("id"), nil, ""))
}

// ---- events

func (h *handler) createEvent(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	var in service.WebchatEventInput
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	res, err := h.svc.WebchatCreateEvent(r.Context(), c, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	if res.Started {
		h.started(c.BotID, res.Event.ConversationID)
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"event": renderEvent(res.Event, &res.IsInitial)})
}

func (h *handler) getEvent(w http.ResponseWriter, r *http.Request, _ *service.WebchatScope, c *service.ChatCaller) {
	e, err := h.svc.ChatGetEvent(r.Context(), c, r.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"event": renderEvent(e, nil)})
}

// ---- files

func (h *handler) fileBase(sc *service.WebchatScope) string {
	return h.svc.PublicURL() + "/webchat/" + sc.Webchat.WebhookID
}

func (h *handler) createFile(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope, c *service.ChatCaller) {
	var in service.FileInput
	if err := decode(w, r, &in); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	f, err := h.svc.WebchatCreateFile(r.Context(), c, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"file": h.svc.RenderFile(sc, h.fileBase(sc), f)})
}

// uploadFile receives a file's bytes (the component's PUT {uploadUrl},
// sent without x-user-key: the URL's token is the credential).
func (h *handler) uploadFile(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
	id, token := r.PathValue("id"), r.URL.Query().Get("token")
	if r.ContentLength > service.MaxFileSize {
		h.svc.WebchatDeleteUpload(r.Context(), sc, id, token)
		httpx.WriteError(w, r, model.Errorf(model.ErrPayloadTooLarge,
			"the file is %d bytes; files may be at most 1 MB (%d bytes); the upload was refused and the file deleted",
			r.ContentLength, service.MaxFileSize))
		return
	}
	f, err := h.svc.WebchatUploadFile(r.Context(), sc, id, token, r.Body)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"file": h.svc.RenderFile(sc, h.fileBase(sc), f)})
}

// inlineTypes are served inline; anything else is a download. Scripts and
// markup (HTML, SVG) never render on Parley's origin, and the sandbox CSP
// keeps even a mislabelled file inert.
func inline(ct string) bool {
	ct = strings.ToLower(ct)
	if strings.HasPrefix(ct, "image/svg") {
		return false
	}
	return strings.HasPrefix(ct, "image/") || strings.HasPrefix(ct, "audio/") || strings.HasPrefix(ct, "video/") ||
		strings.HasPrefix(ct, "text/plain") || ct == "application/pdf"
}

func (h *handler) readFile(w http.ResponseWriter, r *http.Request, sc *service.WebchatScope) {
	f, data, err := h.svc.WebchatReadFile(r.Context(), sc, r.PathValue("id"), r.PathValue("token"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.ContentType)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	hd.Set("Cache-Control", "private, max-age=86400")
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	disp := "attachment"
	if inline(f.ContentType) {
		disp = "inline"
	}
	hd.Set("Content-Disposition", disp+"; filename*=UTF-8''"+url.PathEscape(r.PathValue("name")))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}
