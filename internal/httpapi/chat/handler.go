// Package chat serves the Chat API (the operations of @botpress/chat 0.5.5) of every bot at
// /chat/{webhookId}/...: the 21 operations of @botpress/chat 0.5.5, the
// /hello/ connection probe and the SSE listen stream.
package chat

import (
	"context"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/wire"
)

// MaxBody is the Chat API's request body limit (1 MB, docs/architecture.md, Limits).
const MaxBody = 1 << 20

type handler struct {
	chat   *conversations.Chat
	hub    *realtime.Hub
	limits *httpx.Limits
}

// NewHandler returns the Chat API handler. It expects full paths, with the
// /chat/ prefix: mount it with mux.Handle("/chat/", h), behind FoldSlashes
// at the top (a ServeMux redirects paths holding "//" before a mounted
// handler sees them). limits (nil: none) are the per-bot and per-user
// request rates.
func NewHandler(chat *conversations.Chat, hub *realtime.Hub, limits *httpx.Limits) http.Handler {
	h := &handler{chat: chat, hub: hub, limits: limits}
	mux := httpx.NewMux()
	const p = "/chat/{wh}"
	mux.Handle("GET "+p+"/hello/{$}", httpx.Handler(h.hello))
	mux.Handle("GET "+p+"/hello", httpx.Handler(h.hello))

	mux.Handle("POST "+p+"/users", h.scoped(h.createUser))
	mux.Handle("GET "+p+"/users/me", h.authed(h.getUser))
	mux.Handle("POST "+p+"/users/get-or-create", h.authed(h.getOrCreateUser))
	mux.Handle("PUT "+p+"/users/me", h.authed(h.updateUser))
	mux.Handle("DELETE "+p+"/users/me", h.authed(h.deleteUser))

	mux.Handle("POST "+p+"/conversations", h.authed(h.createConversation))
	mux.Handle("GET "+p+"/conversations", h.authed(h.listConversations))
	mux.Handle("POST "+p+"/conversations/get-or-create", h.authed(h.getOrCreateConversation))
	mux.Handle("GET "+p+"/conversations/{id}", h.authed(h.getConversation))
	mux.Handle("DELETE "+p+"/conversations/{id}", h.authed(h.deleteConversation))
	mux.Handle("GET "+p+"/conversations/{id}/messages", h.authed(h.listMessages))
	mux.Handle("GET "+p+"/conversations/{id}/listen", h.authed(h.listen))
	// The SSE URL is not encoded by the client: an id may span segments.
	mux.Handle("GET "+p+"/conversations/{rest...}", h.authed(h.listen))
	mux.Handle("POST "+p+"/conversations/{id}/participants", h.authed(h.addParticipant))
	mux.Handle("GET "+p+"/conversations/{id}/participants", h.authed(h.listParticipants))
	mux.Handle("GET "+p+"/conversations/{id}/participants/{userId}", h.authed(h.getParticipant))
	mux.Handle("DELETE "+p+"/conversations/{id}/participants/{userId}", h.authed(h.removeParticipant))

	mux.Handle("POST "+p+"/messages", h.authed(h.createMessage))
	mux.Handle("GET "+p+"/messages/{id}", h.authed(h.getMessage))
	mux.Handle("DELETE "+p+"/messages/{id}", h.authed(h.deleteMessage))

	mux.Handle("POST "+p+"/events", h.authed(h.createEvent))
	mux.Handle("GET "+p+"/events/{id}", h.authed(h.getEvent))

	mux.Handle(p+"/", h.scoped(func(w http.ResponseWriter, r *http.Request, _ *conversations.Scope) error {
		return httpx.NoRouteError(r)
	}))
	mux.Handle("/", httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		return model.Errorf(model.ErrNotFound, "no chat integration with this webhook id")
	}))
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

type scopedFunc func(w http.ResponseWriter, r *http.Request, sc *conversations.Scope) error
type authedFunc func(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error

// scoped resolves the webhook id first: an unknown one is 404 on any path.
func (h *handler) scoped(fn scopedFunc) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		sc, err := h.chat.Scope(r.Context(), r.PathValue("wh"))
		if err != nil {
			return err
		}
		if err := h.limits.AllowBot(sc.BotID); err != nil {
			return err
		}
		return fn(w, r, sc)
	}
}

// authed also requires a valid x-user-key.
func (h *handler) authed(fn authedFunc) httpx.Handler {
	return h.scoped(func(w http.ResponseWriter, r *http.Request, sc *conversations.Scope) error {
		c, err := h.chat.Authenticate(sc, r.Header.Get("x-user-key"))
		if err != nil {
			return err
		}
		if err := h.limits.AllowUser(c.BotID, c.UserID); err != nil {
			return err
		}
		return fn(w, r, c)
	})
}

func (h *handler) hello(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.chat.Scope(r.Context(), r.PathValue("wh")); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Hello from Parley's Chat API"))
	return nil
}

// decode reads a JSON body (httpx.Decode refuses malformed JSON and any
// bytes after the object).
func decode(r *http.Request, dst any, strict bool) error { return httpx.Decode(r, dst, strict) }

type userBody struct {
	User wire.User `json:"user"`
}

type nextMeta struct {
	NextToken string `json:"nextToken,omitempty"`
}

func (h *handler) createUser(w http.ResponseWriter, r *http.Request, sc *conversations.Scope) error {
	var in conversations.UserInput
	if err := decode(r, &in, false); err != nil {
		return err
	}
	u, key, err := h.chat.CreateUser(r.Context(), sc, in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, struct {
		User wire.User `json:"user"`
		Key  string    `json:"key"`
	}{wire.NewUser(u), key})
}

func (h *handler) getUser(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	u, err := h.chat.GetUser(r.Context(), c)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, userBody{wire.NewUser(u)})
}

// userFields is the body of getOrCreateUser and updateUser: the id is the
// key's, not the body's.
type userFields struct {
	Name       *string `json:"name"`
	PictureURL *string `json:"pictureUrl"`
	Profile    *string `json:"profile"`
}

func (f userFields) input() conversations.UserInput {
	return conversations.UserInput{Name: f.Name, PictureURL: f.PictureURL, Profile: f.Profile}
}

func (h *handler) getOrCreateUser(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	var in userFields
	if err := decode(r, &in, false); err != nil {
		return err
	}
	u, err := h.chat.GetOrCreateUser(r.Context(), c, in.input())
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, userBody{wire.NewUser(u)})
}

func (h *handler) updateUser(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	var in userFields
	if err := decode(r, &in, false); err != nil {
		return err
	}
	u, err := h.chat.UpdateUser(r.Context(), c, in.input())
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, userBody{wire.NewUser(u)})
}

func (h *handler) deleteUser(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	if err := h.chat.DeleteUser(r.Context(), c); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

type convBody struct {
	Conversation wire.Conversation `json:"conversation"`
}

type idBody struct {
	ID *string `json:"id"`
}

func (h *handler) createConversation(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	var in idBody
	if err := decode(r, &in, false); err != nil {
		return err
	}
	conv, err := h.chat.CreateConversation(r.Context(), c, in.ID)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, convBody{wire.NewConversation(conv)})
}

func (h *handler) getOrCreateConversation(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	var in idBody
	if err := decode(r, &in, false); err != nil {
		return err
	}
	conv, err := h.chat.GetOrCreateConversation(r.Context(), c, in.ID)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, convBody{wire.NewConversation(conv)})
}

func (h *handler) getConversation(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	conv, err := h.chat.GetConversation(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, convBody{wire.NewConversation(conv)})
}

func (h *handler) deleteConversation(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	if err := h.chat.DeleteConversation(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

func (h *handler) listConversations(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	list, next, err := h.chat.ListConversations(r.Context(), c, r.URL.Query().Get("nextToken"))
	if err != nil {
		return err
	}
	out := make([]wire.Conversation, len(list))
	for i, conv := range list {
		out[i] = wire.NewConversation(conv)
	}
	return httpx.JSON(w, http.StatusOK, struct {
		Conversations []wire.Conversation `json:"conversations"`
		Meta          nextMeta            `json:"meta"`
	}{out, nextMeta{next}})
}

func (h *handler) listMessages(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	list, next, err := h.chat.ListMessages(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		return err
	}
	out := make([]wire.Message, len(list))
	for i, m := range list {
		out[i] = wire.NewMessage(m)
	}
	return httpx.JSON(w, http.StatusOK, struct {
		Messages []wire.Message `json:"messages"`
		Meta     nextMeta       `json:"meta"`
	}{out, nextMeta{next}})
}

// listen serves GET /conversations/{id}/listen. Refusals are 4xx only and
// sent before any stream byte: on a 5xx the Node client reconnects every
// second, forever.
func (h *handler) listen(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	id := r.PathValue("id")
	if rest := r.PathValue("rest"); rest != "" || id == "" {
		// Everything between /conversations/ and the final /listen.
		var ok bool
		if id, ok = strings.CutSuffix(rest, "/listen"); !ok || id == "" {
			return httpx.NoRouteError(r)
		}
	}
	err := h.hub.Serve(w, r, realtime.StreamRequest{BotID: c.BotID, ConversationID: id, UserID: c.UserID,
		Credential: c.KeyID(), LastEventID: r.Header.Get("Last-Event-ID")}, func(ctx context.Context) error {
		return h.chat.AuthorizeListen(ctx, c, id)
	})
	if err != nil && httpx.Status(err) >= 500 {
		err = model.Errorf(model.ErrRateLimited, "the conversation cannot be listened to right now; retry later")
	}
	return err
}

type participantBody struct {
	Participant wire.User `json:"participant"`
}

func (h *handler) addParticipant(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	var in struct {
		UserID *string `json:"userId"`
	}
	if err := decode(r, &in, false); err != nil {
		return err
	}
	u, err := h.chat.AddParticipant(r.Context(), c, r.PathValue("id"), in.UserID)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, participantBody{wire.NewUser(u)})
}

func (h *handler) removeParticipant(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	if err := h.chat.RemoveParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId")); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

func (h *handler) getParticipant(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	u, err := h.chat.GetParticipant(r.Context(), c, r.PathValue("id"), r.PathValue("userId"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, participantBody{wire.NewUser(u)})
}

func (h *handler) listParticipants(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	list, next, err := h.chat.ListParticipants(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("nextToken"))
	if err != nil {
		return err
	}
	out := make([]wire.User, len(list))
	for i, u := range list {
		out[i] = wire.NewUser(u)
	}
	return httpx.JSON(w, http.StatusOK, struct {
		Participants []wire.User `json:"participants"`
		Meta         nextMeta    `json:"meta"`
	}{out, nextMeta{next}})
}

type messageBody struct {
	Message wire.Message `json:"message"`
}

func (h *handler) createMessage(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	ctx, err := h.chat.Wait(r.Context())
	if err != nil {
		return err // shed before the body is read
	}
	var in conversations.MessageInput
	if err := decode(r, &in, false); err != nil {
		return err
	}
	m, err := h.chat.CreateMessage(ctx, c, in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, messageBody{wire.NewMessage(m)})
}

func (h *handler) getMessage(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	m, err := h.chat.GetMessage(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, messageBody{wire.NewMessage(m)})
}

func (h *handler) deleteMessage(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	if err := h.chat.DeleteMessage(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, httpx.Empty)
}

type eventBody struct {
	Event wire.Event `json:"event"`
}

func (h *handler) createEvent(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	var in conversations.EventInput
	// The API allows no other properties are allowed on the body.
	if err := decode(r, &in, true); err != nil {
		return err
	}
	e, err := h.chat.CreateEvent(r.Context(), c, in)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, eventBody{wire.NewEvent(e)})
}

func (h *handler) getEvent(w http.ResponseWriter, r *http.Request, c *conversations.Caller) error {
	e, err := h.chat.GetEvent(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, eventBody{wire.NewEvent(e)})
}
