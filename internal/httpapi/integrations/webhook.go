package integrations

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/integrations"
)

// WebhookPatterns are where app.start mounts NewWebhookHandler: any method
// on /{webhookId} and below. More specific routes (/chat/, /v1/, the
// dashboard's) win.
var WebhookPatterns = []string{"/{webhookId}", "/{webhookId}/{path...}"}

// NewWebhookHandler serves the Webhook interface: the request goes to the
// integration installed with the webhook id (webhook_received) and its
// response comes back. Bodies above 100 MB get 413; unknown webhook ids
// 404, both with the standard error body. Requests to the built-in webhook
// integration's id go to builtin.
func NewWebhookHandler(webhooks *integrations.Webhooks, builtin http.Handler) http.Handler {
	h := httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		// The webhook id first: an unknown one costs no body read.
		target, err := webhooks.Resolve(r.Context(), r.PathValue("webhookId"))
		if err != nil {
			return err
		}
		if target.Builtin() {
			builtin.ServeHTTP(w, r)
			return nil
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return httpx.TooLarge(tooBig.Limit)
			}
			return err
		}
		headers := make(map[string]string, len(r.Header))
		for k, vs := range r.Header {
			headers[strings.ToLower(k)] = strings.Join(vs, ", ")
		}
		path := "/" + r.PathValue("path")
		res, err := webhooks.Forward(r.Context(), target, integrations.WebhookRequest{Method: r.Method,
			Path: path, Query: r.URL.RawQuery, Headers: headers, Body: body})
		if err != nil {
			return err
		}
		for k, vs := range res.Headers {
			w.Header()[k] = vs
		}
		w.WriteHeader(res.Status)
		_, _ = w.Write(res.Body)
		return nil
	})
	return httpx.LimitBody(integrations.MaxWebhookBody, h)
}
