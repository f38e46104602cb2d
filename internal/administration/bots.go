package administration

import (
	"context"
	"fmt"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Bots implements the bot operations: bots and their integrations,
// versions and deployments, logs, issues, API keys, bot JSON, and the
// conversations browser of the dashboard.
type Bots struct {
	store        store.Store
	compiler     Compiler
	integrations IntegrationInstaller
	observers    []BotObserver
}

// NewBots returns the bot operations. compiler checks code before it is
// deployed; integrations (nil: none but the built-in ones) resolves and
// registers the integrations bots install; observers hear of every
// committed bot change.
func NewBots(st store.Store, compiler Compiler, integrations IntegrationInstaller, observers ...BotObserver) *Bots {
	return &Bots{store: st, compiler: compiler, integrations: integrations, observers: observers}
}

// installed tells the installer, after the commit, of the bot's custom
// integrations installed, changed or removed, and returns the bot's view
// again with their status when there were some.
func (s *Bots) installed(ctx context.Context, botID string, view *BotView, changed, removed []*model.Integration) *BotView {
	if s.integrations == nil || len(changed)+len(removed) == 0 {
		return view
	}
	s.integrations.Changed(ctx, botID, changed, removed)
	if view == nil {
		return nil
	}
	if v, err := botView(ctx, s.store, view.Bot); err == nil {
		return v
	}
	return view
}

// changed tells the observers, after the commit, that a bot changed.
func (s *Bots) changed(botID string) {
	for _, o := range s.observers {
		o.BotChanged(botID)
	}
}

// Create creates a bot in the caller's workspace, with its built-in
// integrations, and deploys its code when some is given.
func (s *Bots) Create(ctx context.Context, c *Caller, in BotWrite) (*BotView, error) {
	if err := c.require("createBot"); err != nil {
		return nil, err
	}
	now := model.Now()
	b := &model.Bot{ID: model.NewID(), WorkspaceID: c.Workspace.ID, Type: model.DefaultBotType,
		Tags: map[string]string{}, Spec: map[string]any{}, Secrets: map[string]string{},
		SigningSecret: model.NewSecret("bss_"), CreatedBy: c.Account.ID, CreatedAt: now, UpdatedAt: now}
	if in.Name == nil {
		b.Name = "bot-" + b.ID[len(b.ID)-8:]
	}
	if in.Dev != nil {
		b.Dev = *in.Dev
	}
	if err := applyBotWrite(b, &in); err != nil {
		return nil, err
	}
	var view *BotView
	var changed []*model.Integration
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Bots().Create(ctx, b); err != nil {
			return err
		}
		if err := EnsureBuiltinIntegrations(ctx, tx, b.ID); err != nil {
			return err
		}
		var err error
		if changed, _, err = writeIntegrations(ctx, tx, b, in.Integrations, s.integrations); err != nil {
			return err
		}
		if in.Code != nil && *in.Code != "" {
			if err := s.deployCode(ctx, tx, b, *in.Code, now); err != nil {
				return err
			}
			if err := tx.Bots().Update(ctx, b); err != nil {
				return err
			}
		}
		if err := audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditCreateBot, b.ID, b.Name, ""); err != nil {
			return err
		}
		view, err = botView(ctx, tx, b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.installed(ctx, b.ID, view, changed, nil), nil
}

// Get returns a bot of the caller's workspace. The secrets of its
// integrations' configuration (model.IsSecretConfigKey) are left out for
// roles that may not change them (model.PermReadSecrets: developer and
// up), so a viewer or billing member cannot mint user keys.
func (s *Bots) Get(ctx context.Context, c *Caller, id string) (*BotView, error) {
	b, err := s.store.Bots().Get(ctx, c.Workspace.ID, id)
	if err != nil {
		return nil, err
	}
	v, err := botView(ctx, s.store, b)
	if err != nil || c.Member.Role.Can(model.PermReadSecrets) {
		return v, err
	}
	for i, in := range v.Integrations {
		redacted := *in
		redacted.Configuration = map[string]any{}
		for k, val := range in.Configuration {
			if !model.IsSecretConfigKey(k) {
				redacted.Configuration[k] = val
			}
		}
		v.Integrations[i] = &redacted
	}
	return v, nil
}

func botView(ctx context.Context, st store.Store, b *model.Bot) (*BotView, error) {
	ins, err := st.Bots().Integrations(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	defs := map[string]*model.IntegrationDef{}
	for _, in := range ins {
		if in.IntegrationID == "" || defs[in.IntegrationID] != nil {
			continue
		}
		d, err := st.Integrations().Get(ctx, in.IntegrationID)
		if err == nil {
			defs[d.ID] = d
		} else if !model.IsNotFound(err) {
			return nil, err
		}
	}
	return &BotView{Bot: b, Integrations: ins, Definitions: defs}, nil
}

// Update merges a partial update into a bot. A change of code creates a
// bot version and deploys it in the same transaction.
func (s *Bots) Update(ctx context.Context, c *Caller, id string, in BotWrite) (*BotView, error) {
	if err := c.require("updateBot"); err != nil {
		return nil, err
	}
	var view *BotView
	var changed, removed []*model.Integration
	err := s.store.InTx(ctx, func(tx store.Store) error {
		b, err := tx.Bots().Get(ctx, c.Workspace.ID, id)
		if err != nil {
			return err
		}
		if err := applyBotWrite(b, &in); err != nil {
			return err
		}
		now := model.Now()
		b.UpdatedAt = now
		action := model.AuditUpdateBot
		if in.Code != nil && *in.Code != b.Code {
			if err := s.deployCode(ctx, tx, b, *in.Code, now); err != nil {
				return err
			}
			action = model.AuditDeployBot
		}
		if err := tx.Bots().Update(ctx, b); err != nil {
			return err
		}
		if changed, removed, err = writeIntegrations(ctx, tx, b, in.Integrations, s.integrations); err != nil {
			return err
		}
		if in.Integrations != nil || in.Configuration != nil {
			if action == model.AuditUpdateBot {
				action = model.AuditUpdateBotConfig
			}
		}
		if err := audit(ctx, tx, c.Workspace.ID, &c.Principal, action, b.ID, b.Name, ""); err != nil {
			return err
		}
		view, err = botView(ctx, tx, b)
		return err
	})
	// After the commit: the Chat API's cached scope (and encryption key)
	// must not outlive an integration change.
	s.changed(id)
	if err != nil {
		return nil, err
	}
	return s.installed(ctx, id, view, changed, removed), nil
}

// deployCode checks the code, stores it as a new version and makes it the
// deployed one. Turns pick the version at their start, so a deploy is atomic
// for every turn.
func (s *Bots) deployCode(ctx context.Context, tx store.Store, b *model.Bot, code string, now time.Time) error {
	versions, err := tx.Bots().ListVersions(ctx, b.ID)
	if err != nil {
		return err
	}
	v := &model.BotVersion{ID: model.NewID(), BotID: b.ID, Name: fmt.Sprintf("v%d", len(versions)+1),
		Code: code, CreatedAt: now}
	if s.compiler != nil && code != "" {
		if err := s.compiler.Compile(v.ID, code); err != nil {
			return err
		}
	}
	if err := tx.Bots().CreateVersion(ctx, v); err != nil {
		return err
	}
	b.Code, b.VersionID, b.DeployedAt = code, v.ID, v.CreatedAt
	return nil
}

// Delete deletes a bot and all of its data.
func (s *Bots) Delete(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteBot"); err != nil {
		return err
	}
	var removed []*model.Integration
	err := s.store.InTx(ctx, func(tx store.Store) error {
		b, err := tx.Bots().Get(ctx, c.Workspace.ID, id)
		if err != nil {
			return err
		}
		ins, err := tx.Bots().Integrations(ctx, id)
		if err != nil {
			return err
		}
		for _, in := range ins {
			if in.IntegrationID != "" {
				removed = append(removed, in)
			}
		}
		if err := tx.Bots().Delete(ctx, c.Workspace.ID, id); err != nil {
			return err
		}
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditDeleteBot, b.ID, b.Name, "")
	})
	// After the commit: drop what others cache of the bot; its
	// integrations are unregistered.
	s.changed(id)
	if err == nil {
		s.installed(ctx, id, nil, nil, removed)
	}
	return err
}

// List lists the bots of the caller's workspace.
func (s *Bots) List(ctx context.Context, c *Caller, f store.BotFilter, page store.Page) ([]*model.Bot, string, error) {
	f.WorkspaceID = c.Workspace.ID
	return s.store.Bots().List(ctx, f, page)
}
