package integrations

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/model"
)

// Webhooks serve the Webhook interface: {public-url}/{webhookId}[/path]
// goes to the integration installed with that webhook id, as its
// webhook_received operation, and the integration's response goes back
// to the caller.
type Webhooks struct{ *core }

// MaxWebhookBody is the Webhook interface's body limit (SPEC: 100 MB).
const MaxWebhookBody = 100 << 20

// WebhookRequest is an incoming request of the Webhook interface. Path is
// what follows the webhook id ("/" when nothing does), Query the raw
// query string.
type WebhookRequest struct {
	Method  string
	Path    string
	Query   string
	Headers map[string]string
	Body    []byte
}

// WebhookResponse is the integration's answer.
type WebhookResponse struct {
	Status  int
	Headers http.Header
	Body    []byte
}

// webhookAttempts bounds the calls of one webhook to an integration that
// cannot be reached (its process restarting).
const webhookAttempts = 7

// Target is the integration entry a webhook id reaches (Resolve).
type Target struct {
	in      *installation
	builtin bool
}

// Builtin reports a webhook id of the built-in webhook integration (whose
// events Parley stores itself), not of an installed integration.
func (t *Target) Builtin() bool { return t.builtin }

// Resolve finds the integration installed with webhookID, before the
// request's body is read. Unknown webhook ids, those of the built-in chat
// and webchat integrations, and disabled entries, are not found.
func (s *Webhooks) Resolve(ctx context.Context, webhookID string) (*Target, error) {
	entry, err := s.store.Bots().IntegrationByWebhook(ctx, webhookID)
	if err != nil {
		return nil, orNotFound(err, "Webhook", webhookID)
	}
	if entry.IntegrationID == "" && entry.Name == model.IntegrationWebhook && entry.Enabled {
		return &Target{builtin: true}, nil // the built-in webhook integration's, served elsewhere
	}
	if entry.IntegrationID == "" || !entry.Enabled {
		return nil, notFound("Webhook", webhookID)
	}
	def, err := s.store.Integrations().Get(ctx, entry.IntegrationID)
	if err != nil {
		return nil, orNotFound(err, "Webhook", webhookID)
	}
	return &Target{in: &installation{def: def, entry: entry}}, nil
}

// Forward sends a request to the integration (webhook_received) and
// returns its answer.
func (s *Webhooks) Forward(ctx context.Context, t *Target, req WebhookRequest) (*WebhookResponse, error) {
	in := t.in
	r := map[string]any{"method": req.Method, "path": req.Path, "query": req.Query, "headers": req.Headers}
	if len(req.Body) > 0 {
		r["body"] = string(req.Body)
	}
	body, err := json.Marshal(map[string]any{"req": r})
	if err != nil {
		return nil, err
	}
	res := s.callRetrying(ctx, in, webhookAttempts, result.isUnsent, OpWebhookReceived, OpWebhookReceived, body, nil)
	if res.err != nil {
		s.failed(ctx, in, "webhook", res)
		return nil, model.Errorf(model.ErrTimeout, "the integration %s could not be reached: %v", in.entry.Name, res.err)
	}
	if res.status >= 400 {
		s.logLines(ctx, &model.IntegrationLog{IntegrationID: in.def.ID, BotID: in.entry.BotID, Level: "error",
			Message: "webhook " + req.Method + " " + req.Path + ": " + res.describe()})
	}
	h := http.Header{}
	for k, vs := range res.header {
		switch strings.ToLower(k) {
		case "content-length", "connection", "keep-alive", "transfer-encoding", "date", "server":
			continue
		}
		h[k] = vs
	}
	return &WebhookResponse{Status: res.status, Headers: h, Body: res.body}, nil
}
