// Package integrations implements integrations: definitions published in a
// workspace with the Admin API (Definitions, Keys), installed on bots
// (Installs: the configuration checked against the integration's schema,
// its register and unregister calls), reached from outside through the
// Webhook interface (Webhooks), told of the bot's messages in the
// conversations they own (Outbox) and running the bot's calls of their
// actions (Actions).
//
// An integration is built with @botpress/sdk, like an SDK bot: an HTTP
// handler Parley calls with the SDK's headers (calls.go), at its
// development URL or in a Node.js process of Parley's supervisor for its
// bundle. It acts back through the Runtime API with its own credential
// (runtimeapi.Credentials, x-integration-id).
package integrations

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Bundles runs Node.js bundles (package botproc's Supervisor). Integration
// processes are keyed by BundleOwner(id).
type Bundles interface {
	URL(ctx context.Context, owner, version, code string) (string, error)
	Retire(owner, keep string)
	Available() error
}

// BundleOwnerPrefix starts the supervisor key of an integration's process
// (botproc.IntegrationPrefix).
const BundleOwnerPrefix = "integration:"

// BundleOwner is the supervisor key of an integration's processes.
func BundleOwner(integrationID string) string { return BundleOwnerPrefix + integrationID }

// Member is a workspace member calling the Admin API's integration
// operations (the HTTP layer authenticates it with administration).
type Member struct {
	WorkspaceID string
	AccountID   string
	Role        model.Role
}

// require fails with 403 unless the member's role grants p.
func (m Member) require(p model.Permission, op string) error {
	if !m.Role.Can(p) {
		return model.Forbidden("your role %q in this workspace does not allow you to %s (%s)", m.Role, p, op)
	}
	return nil
}

// API groups the integrations' use cases.
type API struct {
	Definitions *Definitions
	Keys        *Keys
	Installs    *Installs
	Webhooks    *Webhooks
	Outbox      *Outbox
	Actions     *Actions
}

// Options configure New.
type Options struct {
	// PublicURL is Parley's public base URL: webhook URLs are
	// PublicURL/{webhookId}.
	PublicURL string
	// Node names this process in delivery leases.
	Node string
	Log  *slog.Logger
}

// core is what every use case shares: the store and the way to call an
// integration.
type core struct {
	store     store.Store
	bundles   Bundles // nil: bundles cannot run here
	http      *http.Client
	publicURL string
	node      string
	log       *slog.Logger
}

// New builds the integrations' use cases on st; bundles runs integration
// bundles (nil: only development integrations with a URL can run).
func New(st store.Store, bundles Bundles, o Options) *API {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	c := &core{store: st, bundles: bundles, publicURL: strings.TrimRight(o.PublicURL, "/"), node: o.Node, log: o.Log,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second}}}
	return &API{
		Definitions: &Definitions{c},
		Keys:        &Keys{c},
		Installs:    &Installs{c},
		Webhooks:    &Webhooks{c},
		Outbox:      newOutbox(c),
		Actions:     &Actions{c},
	}
}

// WebhookURL is the public URL of a bot's integration entry.
func (c *core) WebhookURL(webhookID string) string { return c.publicURL + "/" + webhookID }

// WebhookURL is the public URL of a bot's integration entry (the Admin
// API's bot.integrations[].webhookUrl).
func (a *API) WebhookURL(webhookID string) string { return a.Definitions.WebhookURL(webhookID) }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func notFound(kind, id string) error { return model.NotFound(kind + " " + quote(id)) }

func orNotFound(err error, kind, id string) error {
	if model.IsNotFound(err) {
		return notFound(kind, id)
	}
	return err
}

// log records lines in an integration's logs; failures to record are
// only logged.
func (c *core) logLines(ctx context.Context, entries ...*model.IntegrationLog) {
	if err := c.store.Integrations().AppendLogs(context.WithoutCancel(ctx), entries...); err != nil {
		c.log.Warn("integrations: recording logs failed", "err", err)
	}
}

// issue reports a problem of an integration as an issue of the bot that
// installed it.
func (c *core) issue(ctx context.Context, botID, code, title, description string, data map[string]any) {
	is := &model.Issue{BotID: botID, Code: code, Category: "other", Title: title, Description: description}
	if data == nil {
		data = map[string]any{}
	}
	data["description"] = description
	if _, err := c.store.Issues().Report(context.WithoutCancel(ctx), is, &model.IssueEvent{Data: data}); err != nil {
		c.log.Warn("integrations: reporting an issue failed", "bot", botID, "err", err)
	}
}

// installation is a bot's entry of an integration with its definition.
type installation struct {
	def   *model.IntegrationDef
	entry *model.Integration
}

// installed finds the bot's entry whose alias is alias and that installs a
// published integration; nil, nil when there is none.
func (c *core) installed(ctx context.Context, botID, alias string) (*installation, error) {
	ins, err := c.store.Bots().Integrations(ctx, botID)
	if err != nil {
		return nil, err
	}
	for _, in := range ins {
		if in.Name == alias && in.IntegrationID != "" {
			def, err := c.store.Integrations().Get(ctx, in.IntegrationID)
			if model.IsNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return &installation{def: def, entry: in}, nil
		}
	}
	return nil, nil
}
