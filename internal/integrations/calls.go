package integrations

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/wire"
)

// Headers of a call to an integration (@botpress/sdk's src/consts.ts and
// src/integration/server/context.ts).
const (
	headerBotID             = "x-bot-id"
	headerBotUserID         = "x-bot-user-id"
	headerIntegrationID     = "x-integration-id"
	headerIntegrationAlias  = "x-integration-alias"
	headerWebhookID         = "x-webhook-id"
	headerOperation         = "x-bp-operation"
	headerType              = "x-bp-type"
	headerConfiguration     = "x-bp-configuration"
	headerConfigurationType = "x-bp-configuration-type"
	// headerIdempotencyKey is Parley's: the same on every delivery of one
	// message_created (the message id), so that an integration can tell a
	// re-delivery after a crash.
	headerIdempotencyKey = "x-bp-idempotency-key"
)

// Operations of a call to an integration (x-bp-operation).
const (
	OpRegister           = "register"
	OpUnregister         = "unregister"
	OpWebhookReceived    = "webhook_received"
	OpMessageCreated     = "message_created"
	OpActionTriggered    = "action_triggered"
	OpCreateUser         = "create_user"
	OpCreateConversation = "create_conversation"
	OpPing               = "ping"
)

// result is the outcome of one call to an integration.
type result struct {
	status int
	header http.Header
	body   []byte
	err    error // transport: refused, reset, timed out, no process
	// unsent: the request never reached the integration (no process yet,
	// connection refused), so calling again cannot repeat its effects.
	unsent  bool
	elapsed time.Duration
}

func (r result) ok() bool    { return r.err == nil && r.status >= 200 && r.status < 300 }
func (r result) retry() bool { return r.err != nil || r.status >= 500 }

// describe renders a failure for logs and issues: the Runtime error's
// message when the integration sent one.
func (r result) describe() string {
	if r.err != nil {
		return r.err.Error()
	}
	return wire.DescribeFailure(r.status, r.body)
}

// callTimeout bounds one call when the integration sets no
// maxExecutionTime.
const callTimeout = 60 * time.Second

// maxResponse bounds what Parley reads of an integration's answer (a
// webhook's response goes back to its caller).
const maxResponse = 10 << 20

// baseURL is where an integration is called: its development URL, or its
// bundle's process.
func (c *core) baseURL(ctx context.Context, def *model.IntegrationDef) (string, error) {
	if def.URL != "" && (def.Dev || def.Code == "") {
		return def.URL, nil
	}
	if def.Code == "" {
		return "", errors.New("the integration has neither a url nor code")
	}
	if c.bundles == nil {
		return "", errors.New("this server does not run Node.js bundles")
	}
	return c.bundles.URL(ctx, BundleOwner(def.ID), processVersion(def), def.Code)
}

// call POSTs one operation to the integration installed by in.
func (c *core) call(ctx context.Context, in *installation, op, typ string, body []byte, extra map[string]string) result {
	started := time.Now()
	base, err := c.baseURL(ctx, in.def)
	if err != nil {
		return result{err: err, unsent: true}
	}
	timeout := callTimeout
	if in.def.MaxExecutionTime > 0 {
		timeout = time.Duration(in.def.MaxExecutionTime) * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, base, bytes.NewReader(body))
	if err != nil {
		return result{status: http.StatusBadRequest, body: []byte(`{"message":"invalid integration URL"}`)}
	}
	cfg := in.entry.Configuration
	if cfg == nil {
		cfg = map[string]any{}
	}
	raw, _ := json.Marshal(cfg)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerBotID, in.entry.BotID)
	req.Header.Set(headerBotUserID, in.entry.BotID)
	req.Header.Set(headerIntegrationID, in.def.ID)
	req.Header.Set(headerIntegrationAlias, in.entry.Name)
	req.Header.Set(headerWebhookID, in.entry.WebhookID)
	req.Header.Set(headerOperation, op)
	req.Header.Set(headerType, typ)
	req.Header.Set(headerConfiguration, base64.StdEncoding.EncodeToString(raw))
	if in.entry.ConfigurationType != "" {
		req.Header.Set(headerConfigurationType, in.entry.ConfigurationType)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return result{err: err, unsent: errors.Is(err, syscall.ECONNREFUSED), elapsed: time.Since(started)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return result{err: err, elapsed: time.Since(started)}
	}
	return result{status: resp.StatusCode, header: resp.Header, body: data, elapsed: time.Since(started)}
}

// backoff is the wait before retry n (0-based) of an unreachable
// integration: 200 ms doubling to 30 s.
func backoff(n int) time.Duration {
	d := 200 * time.Millisecond
	for i := 0; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// callRetrying calls until again(result) is false, at most attempts
// times, waiting backoff between tries. again is result.retry for
// operations that may run twice (register, actions), result.unsent for
// those that must not (a webhook).
func (c *core) callRetrying(ctx context.Context, in *installation, attempts int, again func(result) bool, op, typ string, body []byte, extra map[string]string) result {
	var res result
	for n := 0; n < attempts; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return res
			case <-time.After(backoff(n - 1)):
			}
		}
		res = c.call(ctx, in, op, typ, body, extra)
		if !again(res) || ctx.Err() != nil {
			return res
		}
	}
	return res
}

func (r result) isUnsent() bool { return r.unsent }
