// Package chat serves the Chat API (contracts/chat-api.md) of every bot at
// /chat/{webhookId}/...: the 21 operations of @botpress/chat 0.5.5, the
// /hello/ connection probe and the SSE listen stream.
package chat

import (
	"context"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/service"
)

// MaxBody is the Chat API's request body limit (SPEC: 1 MB).
const MaxBody = 1 << 20

type handler struct {
	svc *service.Service
	hub *realtime.Hub
}

// NewHandler returns the Chat API handler. It expects full paths, with the
// /chat/ prefix: mount it with mux.Handle("/chat/", h), behind FoldSlashes
// at the top (a ServeMux redirects paths holding "//" before a mounted
// handler sees them).
func NewHandler(svc *service.Service, hub *realtime.Hub) http.Handler {
	h := &handler{svc: svc, hub: hub}
	mux := http.NewServeMux()
	const p = "/chat/{wh}"
	mux.HandleFunc("GET "+p+"/hello/{$}", h.hello)
	mux.HandleFunc("GET "+p+"/hello", h.hello)

	mux.HandleFunc("POST "+p+"/users", h.scoped(h.createUser))
	mux.HandleFunc("GET "+p+"/users/me", h.authed(h.getUser))
	mux.HandleFunc("POST "+p+"/users/get-or-create", h.authed(h.getOrCreateUser))
	mux.HandleFunc("PUT "+p+"/users/me", h.authed(h.updateUser))
	mux.HandleFunc("DELETE "+p+"/users/me", h.authed(h.deleteUser))

	mux.HandleFunc("POST "+p+"/conversations", h.authed(h.createConversation))
	mux.HandleFunc("GET "+p+"/conversations", h.authed(h.listConversations))
	mux.HandleFunc("POST "+p+"/conversations/get-or-create", h.authed(h.getOrCreateConversation))
	mux.HandleFunc("GET "+p+"/conversations/{id}", h.authed(h.getConversation))
	mux.HandleFunc("DELETE "+p+"/conversations/{id}", h.authed(h.deleteConversation))
	mux.HandleFunc("GET "+p+"/conversations/{id}/messages", h.authed(h.listMessages))
	mux.HandleFunc("GET "+p+"/conversations/{id}/listen", h.authed(h.listen))
	// The SSE URL is not encoded by the client: an id may span segments.
	mux.HandleFunc("GET "+p+"/conversations/{rest...}", h.authed(h.listen))
	mux.HandleFunc("POST "+p+"/conversations/{id}/participants", h.authed(h.addParticipant))
	mux.HandleFunc("GET "+p+"/conversations/{id}/participants", h.authed(h.listParticipants))
	mux.HandleFunc("GET "+p+"/conversations/{id}/participants/{userId}", h.authed(h.getParticipant))
	mux.HandleFunc("DELETE "+p+"/conversations/{id}/participants/{userId}", h.authed(h.removeParticipant))

	mux.HandleFunc("POST "+p+"/messages", h.authed(h.createMessage))
	mux.HandleFunc("GET "+p+"/messages/{id}", h.authed(h.getMessage))
	mux.HandleFunc("DELETE "+p+"/messages/{id}", h.authed(h.deleteMessage))

	mux.HandleFunc("POST "+p+"/events", h.authed(h.createEvent))
	mux.HandleFunc("GET "+p+"/events/{id}", h.authed(h.getEvent))

	mux.HandleFunc(p+"/", h.scoped(func(w http.ResponseWriter, r *http.Request, _ *service.ChatScope) {
		httpx.NoRoute(w, r)
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, model.Errorf(model.ErrNotFound, "no chat integration with this webhook id"))
	})
	return httpx.CORS(FoldSlashes(httpx.LimitBody(MaxBody, mux)))
}

// FoldSlashes folds repeated slashes in the path: the client joins the
// base URL and "/hello/" or the listen path by plain string concatenation,
// so an apiUrl ending in "/" yields "//".
func FoldSlashes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "//") {
			next.ServeHTTP(w, r)
			return
		}
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = fold(u.Path)
		u.RawPath = fold(u.RawPath)
		r2.URL = &u
		next.ServeHTTP(w, r2)
	})
}

func fold(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	return p
}

type scopedFunc func(w http.ResponseWriter, r *http.Request, sc *service.ChatScope)
type authedFunc func(w http.ResponseWriter, r *http.Request, c *service.ChatCaller)

// scoped resolves the webhook id first: an unknown one is 404 on any path.
func (h *handler) scoped(fn scopedFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sc, err := h.svc.ChatScope(r.Context(), r.PathValue("wh"))
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		fn(w, r, sc)
	}
}

// authed also requires a valid x-user-key.
func (h *handler) authed(fn authedFunc) http.HandlerFunc {
	return h.scoped(func(w http.ResponseWriter, r *http.Request, sc *service.ChatScope) {
		c, err := h.svc.ChatAuthenticate(sc, r.Header.Get("x-user-key"))
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		fn(w, r, c)
	})
}

func (h *handler) hello(w http.ResponseWriter, r *http.Request) {
	if _, err := h.svc.ChatScope(r.Context(), r.PathValue("wh")); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Hello from Parley's Chat API"))
}

// decode reads a JSON body (httpx.Decode refuses malformed JSON and any
// bytes after the object).
func decode(r *http.Request, dst any, strict bool) error { return httpx.Decode(r, dst, strict) }

type userBody struct {
	User service.ChatUserView `json:"user"`
}

type nextMeta struct {
	NextToken string `json:"nextToken,omitempty"`
}

func (h *handler) createUser(w http.ResponseWriter, r *http.Request, sc *service.ChatScope) {
	var in service.ChatUserInput
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, key, err := h.svc.ChatCreateUser(r.Context(), sc, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, struct {
		User service.ChatUserView `json:"user"`
		Key  string               `json:"key"`
	}{service.ChatUser(u), key})
}

func (h *handler) getUser(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	u, err := h.svc.ChatGetUser(r.Context(), c)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, userBody{service.ChatUser(u)})
}

// userFields is the body of getOrCreateUser and updateUser: the id is the
// key's, not the body's.
type userFields struct {
	Name       *string `json:"name"`
	PictureURL *string `json:"pictureUrl"`
	Profile    *string `json:"profile"`
}

func (f userFields) input() service.ChatUserInput {
	return service.ChatUserInput{Name: f.Name, PictureURL: f.PictureURL, Profile: f.Profile}
}

func (h *handler) getOrCreateUser(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in userFields
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, err := h.svc.ChatGetOrCreateUser(r.Context(), c, in.input())
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, userBody{service.ChatUser(u)})
}

func (h *handler) updateUser(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in userFields
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, err := h.svc.ChatUpdateUser(r.Context(), c, in.input())
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, userBody{service.ChatUser(u)})
}

func (h *handler) deleteUser(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatDeleteUser(r.Context(), c))
}

type convBody struct {
	Conversation service.ChatConversationView `json:"conversation"`
}

type idBody struct {
	ID *string `json:"id"`
}

func (h *handler) createConversation(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in idBody
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	conv, err := h.svc.ChatCreateConversation(r.Context(), c, in.ID)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, convBody{service.ChatConversation(conv)})
}

func (h *handler) getOrCreateConversation(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in idBody
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	conv, err := h.svc.ChatGetOrCreateConversation(r.Context(), c, in.ID)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, convBody{service.ChatConversation(conv)})
}

func (h *handler) getConversation(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	conv, err := h.svc.ChatGetConversation(r.Context(), c, r.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, convBody{service.ChatConversation(conv)})
}

func (h *handler) deleteConversation(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatDeleteConversation(r.Context(), c, r.PathValue("id")))
}

func (h *handler) listConversations(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	list, next, err := h.svc.ChatListConversations(r.Context(), c, r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	out := make([]service.ChatConversationView, len(list))
	for i, conv := range list {
		out[i] = service.ChatConversation(conv)
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Conversations []service.ChatConversationView `json:"conversations"`
		Meta          nextMeta                       `json:"meta"`
	}{out, nextMeta{next}})
}

func (h *handler) listMessages(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	list, next, err := h.svc.ChatListMessages(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	out := make([]service.ChatMessageView, len(list))
	for i, m := range list {
		out[i] = service.ChatMessage(m)
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Messages []service.ChatMessageView `json:"messages"`
		Meta     nextMeta                  `json:"meta"`
	}{out, nextMeta{next}})
}

// listen serves GET /conversations/{id}/listen. Refusals are 4xx only and
// sent before any stream byte: on a 5xx the Node client reconnects every
// second, forever.
func (h *handler) listen(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	id := r.PathValue("id")
	if rest := r.PathValue("rest"); rest != "" || id == "" {
		// Everything between /conversations/ and the final /listen.
		var ok bool
		if id, ok = strings.CutSuffix(rest, "/listen"); !ok || id == "" {
			httpx.NoRoute(w, r)
			return
		}
	}
	err := h.hub.Serve(w, r, realtime.StreamRequest{BotID: c.BotID, ConversationID: id, UserID: c.UserID,
		LastEventID: r.Header.Get("Last-Event-ID")}, func(ctx context.Context) error {
		return h.svc.ChatAuthorizeListen(ctx, c, id)
	})
	if err != nil {
		if httpx.Status(err) >= 500 {
			err = model.Errorf(model.ErrRateLimited, "the conversation cannot be listened to right now; retry later")
		}
		httpx.WriteError(w, r, err)
	}
}

type participantBody struct {
	Participant service.ChatUserView `json:"participant"`
}

func (h *handler) addParticipant(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in struct {
		UserID *string `json:"userId"`
	}
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	u, err := h.svc.ChatAddParticipant(r.Context(), c, r.PathValue("id"), in.UserID)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, participantBody{service.ChatUser(u)})
}

func (h *handler) removeParticipant(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatRemoveParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId")))
}

func (h *handler) getParticipant(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	u, err := h.svc.ChatGetParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, participantBody{service.ChatUser(u)})
}

func (h *handler) listParticipants(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	list, next, err := h.svc.ChatListParticipants(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	out := make([]service.ChatUserView, len(list))
	for i, u := range list {
		out[i] = service.ChatUser(u)
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Participants []service.ChatUserView `json:"participants"`
		Meta         nextMeta               `json:"meta"`
	}{out, nextMeta{next}})
}

type messageBody struct {
	Message service.ChatMessageView `json:"message"`
}

func (h *handler) createMessage(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in service.ChatMessageInput
	if err := decode(r, &in, false); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	m, err := h.svc.ChatCreateMessage(r.Context(), c, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, messageBody{service.ChatMessage(m)})
}

func (h *handler) getMessage(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	m, err := h.svc.ChatGetMessage(r.Context(), c, r.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, messageBody{service.ChatMessage(m)})
}

func (h *handler) deleteMessage(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	httpx.Reply(w, r, http.StatusOK, httpx.Empty, h.svc.ChatDeleteMessage(r.Context(), c, r.PathValue("id")))
}

type eventBody struct {
	Event service.ChatEventView `json:"event"`
}

func (h *handler) createEvent(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	var in service.ChatEventInput
	// SPEC: no other properties are allowed on the body.
	if err := decode(r, &in, true); err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	e, err := h.svc.ChatCreateEvent(r.Context(), c, in)
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, eventBody{service.ChatEvent(e)})
}

func (h *handler) getEvent(w http.ResponseWriter, r *http.Request, c *service.ChatCaller) {
	e, err := h.svc.ChatGetEvent(r.Context(), c, r.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, eventBody{service.ChatEvent(e)})
}
