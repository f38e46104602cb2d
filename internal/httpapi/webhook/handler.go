// Package webhook serves the Webhook interface, {public-url}/{webhookId}[/sub/path]:
// for now the built-in webhook integration, whose requests become
// webhook:event events of the bot (conversations.Webhooks). Webhook ids of
// other integrations answer 404 until integrations are served.
package webhook

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/conversations"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
)

// MaxBody is the webhook integration's request body limit: its body
// becomes an event payload that bots read (model.WebhookBodyLimit, 1 MB).
const MaxBody = model.WebhookBodyLimit

type handler struct {
	hooks  *conversations.Webhooks
	limits *httpx.Limits
}

// NewHandler returns the built-in webhook integration's handler. The
// Webhook interface (package httpapi/integrations, on /{webhookId} and
// /{webhookId}/{path...}) hands it the requests to that integration's
// webhook ids.
// limits (nil: none) counts every request to a bot's webhook, accepted or
// not, in the bot's request rate.
func NewHandler(hooks *conversations.Webhooks, limits *httpx.Limits) http.Handler {
	h := &handler{hooks: hooks, limits: limits}
	return httpx.LimitBody(MaxBody, httpx.Handler(h.receive))
}

// receive answers 200 with the stored event once it is durable.
func (h *handler) receive(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return model.Errorf(model.ErrMethodNotFound, "the webhook integration takes POST (JSON) or GET, not %s", r.Method)
	}
	in, err := h.hooks.Resolve(r.Context(), r.PathValue("webhookId"))
	if err != nil {
		return err
	}
	if err := h.limits.AllowBot(in.BotID); err != nil {
		return err
	}
	var body []byte
	if r.Method == http.MethodPost {
		if body, err = io.ReadAll(r.Body); err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				return httpx.TooLarge(MaxBody)
			}
			return model.Invalid("body: %v", err)
		}
	}
	path := ""
	if rest := r.PathValue("path"); rest != "" || strings.HasSuffix(r.URL.Path, "/") {
		path = "/" + rest
	}
	req := conversations.WebhookRequest{Method: r.Method, Path: path, Query: values(r.URL.Query()),
		Headers: headers(r.Header), Body: body, Secret: r.Header.Get(model.WebhookSecretHeader)}
	e, err := h.hooks.Receive(r.Context(), in, req)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusOK, map[string]any{"event": map[string]any{"id": e.ID, "type": e.Type,
		"conversationId": e.ConversationID, "userId": nullable(e.UserID), "createdAt": model.FormatTime(e.CreatedAt)}})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// hiddenHeaders are credentials a bot never sees in the event.
var hiddenHeaders = map[string]bool{model.WebhookSecretHeader: true, "authorization": true,
	"proxy-authorization": true, "cookie": true}

func headers(h http.Header) map[string]any {
	out := map[string]any{}
	for k, vs := range h {
		k = strings.ToLower(k)
		if hiddenHeaders[k] {
			continue
		}
		out[k] = one(vs)
	}
	return out
}

func values(q map[string][]string) map[string]any {
	out := make(map[string]any, len(q))
	for k, vs := range q {
		out[k] = one(vs)
	}
	return out
}

func one(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}
