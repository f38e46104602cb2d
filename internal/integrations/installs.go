package integrations

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Installs are what bots need of the integrations they install
// (administration.IntegrationInstaller): the integration an entry of
// bot.integrations names, its configuration checked against the
// integration's schema, and its register and unregister calls.
type Installs struct{ *core }

// Resolve returns the integration a bot's entry installs: by the entry's
// integrationId, else by its key when the key is an integration id. An
// integration of another workspace is found only when it is public.
func (s *Installs) Resolve(ctx context.Context, workspaceID, key, integrationID string) (*model.IntegrationDef, error) {
	id := integrationID
	if id == "" {
		id = key
	}
	d, err := s.store.Integrations().Get(ctx, id)
	switch {
	case model.IsNotFound(err) && integrationID == "":
		return nil, nil // a name Parley does not know: kept as before
	case model.IsNotFound(err):
		return nil, notFound("Integration", integrationID)
	case err != nil:
		return nil, err
	}
	if d.WorkspaceID != workspaceID && !d.Public {
		if integrationID == "" {
			return nil, nil
		}
		return nil, notFound("Integration", integrationID)
	}
	return d, nil
}

// CheckConfiguration validates an entry's configuration against the
// integration's configuration schema, or the schema of the named
// configuration type.
func (s *Installs) CheckConfiguration(def *model.IntegrationDef, path, configurationType string, configuration map[string]any) error {
	var schema any
	if configurationType != "" {
		confs, _ := def.Spec["configurations"].(map[string]any)
		c, ok := confs[configurationType].(map[string]any)
		if !ok {
			return model.Invalid("%s.configurationType: integration %s has no configuration type %q", path, describe(def), configurationType)
		}
		schema = c["schema"]
	} else if c, ok := def.Spec["configuration"].(map[string]any); ok {
		schema = c["schema"]
	}
	if configuration == nil {
		configuration = map[string]any{}
	}
	return validateValue(path+".configuration", schema, configuration)
}

// registerAttempts bounds the calls of one register or unregister (the
// integration's process may be starting); registerTimeout bounds them all
// for one update of a bot.
const (
	registerAttempts = 4
	registerTimeout  = 30 * time.Second
)

// Changed calls register for the entries installed or changed (unregister
// for a disabled one) and unregister for the removed ones, and records
// each entry's status (registered, unregistered, or *_failed with the
// reason). Failures
// are also in the integration's logs and the bot's issues.
func (s *Installs) Changed(ctx context.Context, botID string, changed, removed []*model.Integration) {
	// Bounded: the bot's update waits for it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), registerTimeout)
	defer cancel()
	for _, e := range removed {
		def, err := s.store.Integrations().Get(ctx, e.IntegrationID)
		if err != nil {
			continue
		}
		in := &installation{def: def, entry: e}
		body, _ := json.Marshal(map[string]string{"webhookUrl": s.WebhookURL(e.WebhookID)})
		res := s.callRetrying(ctx, in, registerAttempts, result.retry, OpUnregister, OpUnregister, body, nil)
		if !res.ok() {
			s.failed(ctx, in, "unregister", res)
		}
	}
	for _, e := range changed {
		def, err := s.store.Integrations().Get(ctx, e.IntegrationID)
		if err != nil {
			continue
		}
		in := &installation{def: def, entry: e}
		body, _ := json.Marshal(map[string]string{"webhookUrl": s.WebhookURL(e.WebhookID)})
		status, reason := model.IntegrationRegistered, ""
		if e.Enabled {
			res := s.callRetrying(ctx, in, registerAttempts, result.retry, OpRegister, OpRegister, body, nil)
			if !res.ok() {
				status, reason = model.IntegrationRegistrationFailed, res.describe()
				s.failed(ctx, in, "register", res)
			}
		} else {
			// Disabled: unregistered, and its webhook answers 404.
			status = model.IntegrationUnregistered
			res := s.callRetrying(ctx, in, registerAttempts, result.retry, OpUnregister, OpUnregister, body, nil)
			if !res.ok() {
				status, reason = model.IntegrationUnregistrationFailed, res.describe()
				s.failed(ctx, in, "unregister", res)
			}
		}
		s.setStatus(ctx, botID, e.Name, status, reason)
	}
}

// setStatus records an entry's status, unless the entry changed since.
func (s *Installs) setStatus(ctx context.Context, botID, alias, status, reason string) {
	ins, err := s.store.Bots().Integrations(ctx, botID)
	if err != nil {
		return
	}
	for _, in := range ins {
		if in.Name == alias && in.IntegrationID != "" {
			in.Status, in.StatusReason = status, reason
			if err := s.store.Bots().PutIntegration(ctx, in); err != nil {
				s.log.Warn("integrations: recording the status failed", "bot", botID, "integration", alias, "err", err)
			}
		}
	}
}

// failed records a failed call in the integration's logs and as an issue
// of the bot.
func (c *core) failed(ctx context.Context, in *installation, what string, res result) {
	msg := what + " failed: " + res.describe()
	c.logLines(ctx, &model.IntegrationLog{IntegrationID: in.def.ID, BotID: in.entry.BotID, Level: "error", Message: msg})
	c.issue(ctx, in.entry.BotID, "integration_"+what+"_failed", "Integration "+in.entry.Name+": "+what+" failed", msg,
		map[string]any{"integration": in.entry.Name, "integrationId": in.def.ID})
}
