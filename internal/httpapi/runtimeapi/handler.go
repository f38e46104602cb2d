// Package runtimeapi serves the Runtime API (/v1/chat/...) with the shapes
// @botpress/client 1.45.0 (and 1.35.0, with its tasks) expects, over the
// use cases of internal/runtimeapi.
package runtimeapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	rt "github.com/parley-bots/parley/internal/runtimeapi"
)

// BodyLimit is the Runtime interface's payload limit (docs/architecture.md, Limits).
const BodyLimit = 1 << 20

// Handler serves the Runtime API.
type Handler struct {
	api    *rt.API
	limits *httpx.Limits
	mux    *httpx.Mux
}

// base is what every resource's handlers share: the Runtime API's use
// cases. Each resource has its type (userOps, conversationOps, ...), in
// operations.go and workflows.go.
type base struct{ api *rt.API }

type (
	usersOps         struct{ base }
	conversationsOps struct{ base }
	messagesOps      struct{ base }
	eventsOps        struct{ base }
	statesOps        struct{ base }
	workflowsOps     struct{ base }
	tasksOps         struct{ base }
	actionsOps       struct{ base }
)

// HostedOnly lists the operations that only make sense on Botpress's
// hosted service: they answer 405 MethodNotFound (docs/runtime-api.md).
var HostedOnly = []struct{ Method, Path, Operation string }{
	{"POST", "/v1/chat/observations", "captureObservation"},
}

// NewHandler returns the Runtime API handler; it expects full paths
// (/v1/chat/...). limits (nil: none) bound each bot's request rate.
func NewHandler(api *rt.API, limits *httpx.Limits) http.Handler {
	h := &Handler{api: api, limits: limits, mux: httpx.NewMux()}
	h.routes()
	return httpx.CORS(httpx.LimitBody(BodyLimit, h.mux))
}

type botHandler func(w http.ResponseWriter, r *http.Request, c *rt.Caller) error

func (h *Handler) routes() {
	m := h.mux
	const p = "/v1/chat"
	route := func(pattern string, fn botHandler) { m.Handle(pattern, h.bot(fn)) }
	b := base{h.api}
	usr, conv, msg, ev := usersOps{b}, conversationsOps{b}, messagesOps{b}, eventsOps{b}
	state, wf, task, act := statesOps{b}, workflowsOps{b}, tasksOps{b}, actionsOps{b}

	route("POST "+p+"/users", usr.createUser)
	route("GET "+p+"/users", usr.listUsers)
	route("POST "+p+"/users/get-or-create", usr.getOrCreateUser)
	route("GET "+p+"/users/{id}", usr.getUser)
	route("PUT "+p+"/users/{id}", usr.updateUser)
	route("DELETE "+p+"/users/{id}", usr.deleteUser)

	route("POST "+p+"/conversations", conv.createConversation)
	route("GET "+p+"/conversations", conv.listConversations)
	route("POST "+p+"/conversations/get-or-create", conv.getOrCreateConversation)
	route("GET "+p+"/conversations/{id}", conv.getConversation)
	route("PUT "+p+"/conversations/{id}", conv.updateConversation)
	route("DELETE "+p+"/conversations/{id}", conv.deleteConversation)
	route("GET "+p+"/conversations/{id}/participants", conv.listParticipants)
	route("POST "+p+"/conversations/{id}/participants", conv.addParticipant)
	route("GET "+p+"/conversations/{id}/participants/{userId}", conv.getParticipant)
	route("DELETE "+p+"/conversations/{id}/participants/{userId}", conv.removeParticipant)
	route("POST "+p+"/conversations/{id}/handoff", conv.requestHandoff) // Parley's extension

	route("POST "+p+"/messages", msg.createMessage)
	route("GET "+p+"/messages", msg.listMessages)
	route("POST "+p+"/messages/get-or-create", msg.getOrCreateMessage)
	route("POST "+p+"/messages/import-messages", msg.importMessages)
	route("GET "+p+"/messages/{id}", msg.getMessage)
	route("PUT "+p+"/messages/{id}", msg.updateMessage)
	route("DELETE "+p+"/messages/{id}", msg.deleteMessage)
	route("POST "+p+"/initialize-incoming-message", msg.initializeIncomingMessage)

	route("POST "+p+"/events", ev.createEvent)
	route("GET "+p+"/events", ev.listEvents)
	route("GET "+p+"/events/{id}", ev.getEvent)
	route("DELETE "+p+"/events/scheduled/{id}", ev.cancelScheduledEvent)

	const st = p + "/states/{type}/{id}/{name}"
	route("GET "+st, state.getState)
	route("POST "+st, state.setState)
	route("PATCH "+st, state.patchState)
	route("POST "+st+"/get-or-set", state.getOrSetState)
	route("POST "+st+"/expiry", state.setStateExpiry)

	route("POST "+p+"/workflows", wf.createWorkflow)
	route("GET "+p+"/workflows", wf.listWorkflows)
	route("POST "+p+"/workflows/get-or-create", wf.getOrCreateWorkflow)
	route("GET "+p+"/workflows/{id}", wf.getWorkflow)
	route("PUT "+p+"/workflows/{id}", wf.updateWorkflow)
	route("DELETE "+p+"/workflows/{id}", wf.deleteWorkflow)

	route("POST "+p+"/tasks", task.createTask)
	route("GET "+p+"/tasks", task.listTasks)
	route("GET "+p+"/tasks/{id}", task.getTask)
	route("PUT "+p+"/tasks/{id}", task.updateTask)
	route("DELETE "+p+"/tasks/{id}", task.deleteTask)

	route("POST "+p+"/actions", act.callAction)
	route("POST "+p+"/analytics", act.trackAnalytics)
	route("GET "+p+"/tags/{key}/values", act.listTagValues)
	route("POST "+p+"/integrations/configure", act.configureIntegration)

	for _, op := range HostedOnly {
		m.Handle(op.Method+" "+op.Path, hostedOnly(op.Operation))
	}
	m.HandleFunc(p+"/", httpx.NoRoute)
}

func hostedOnly(op string) http.Handler {
	return httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		return model.Errorf(model.ErrMethodNotFound, "%s is only available on Botpress's hosted service; Parley does not serve it", op)
	})
}

// bot authenticates the bearer token for the x-bot-id bot; with
// x-integration-id, as that integration acting for the bot
// (integration.go).
func (h *Handler) bot(fn botHandler) http.Handler {
	return httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// A write the caller sent whole is carried out even if the
			// caller goes away meanwhile: an integration killed right
			// after its ack (updateMessage) must not have the ack dropped
			// with its connection, or the message is delivered twice.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), detachedWriteTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		var c *rt.Caller
		var err error
		if id := r.Header.Get("x-integration-id"); id != "" {
			c, err = h.api.Credentials.AuthenticateIntegration(r.Context(), httpx.BearerToken(r), r.Header.Get("x-bot-id"), id)
		} else {
			c, err = h.api.Credentials.Authenticate(r.Context(), httpx.BearerToken(r), r.Header.Get("x-bot-id"))
		}
		if err != nil {
			return err
		}
		if err := h.limits.AllowBot(c.BotID); err != nil {
			return err
		}
		if c.Kind != rt.KindIntegration {
			return fn(w, r, c)
		}
		iw, err := asIntegration(w, r, c)
		if err != nil {
			return err
		}
		if err := fn(iw, r, c); err != nil {
			return err // written by httpx.Handler on the real writer
		}
		iw.flush()
		return nil
	})
}

// detachedWriteTimeout bounds a write carried out for a caller that may be
// gone.
const detachedWriteTimeout = 30 * time.Second

// decode reads a JSON body; properties the operation does not use are
// ignored (clients 1.35.0 and 1.45.0 send different optional ones).
func decode(r *http.Request, dst any) error { return httpx.Decode(r, dst, false) }

func ok(w http.ResponseWriter, v any) error { return httpx.JSON(w, http.StatusOK, v) }

var empty = struct{}{}

// query helpers: the clients serialise with qs (allowDots, repeated
// arrays): tags.key=value, participantIds=a&participantIds=b.

func pageOf(q url.Values) (string, int, error) {
	size := 0
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return "", 0, model.Errorf(model.ErrInvalidQuery, "pageSize: must be an integer from 1 to 100")
		}
		size = n
	}
	return q.Get("nextToken"), size, nil
}

// mapOf reads name.key=value (and name[key]=value) pairs.
func mapOf(q url.Values, name string) map[string]string {
	var out map[string]string
	for k, vs := range q {
		var key string
		switch {
		case strings.HasPrefix(k, name+"."):
			key = strings.TrimPrefix(k, name+".")
		case strings.HasPrefix(k, name+"[") && strings.HasSuffix(k, "]"):
			key = k[len(name)+1 : len(k)-1]
		default:
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = vs[len(vs)-1]
	}
	return out
}

// listOf reads a repeated parameter (name=a&name=b, also name[]=a).
func listOf(q url.Values, name string) []string {
	return append(q[name][:len(q[name]):len(q[name])], q[name+"[]"]...)
}

func meta(next string) map[string]any {
	m := map[string]any{}
	if next != "" {
		m["nextToken"] = next
	}
	return m
}
