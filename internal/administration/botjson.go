package administration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/workflow"
)

// PublishBotJSON validates a bot JSON document, stores it as a new bot
// version and deploys it. An invalid document is a 400 whose message and
// metadata.errors name the JSON pointer of every error; nothing changes.
func (s *Bots) PublishBotJSON(ctx context.Context, c *Caller, id string, raw json.RawMessage) (*BotView, *model.BotVersion, error) {
	if err := c.require("publishFromBotJson"); err != nil {
		return nil, nil, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, model.Invalid("botJson: required")
	}
	wb, err := workflow.Parse(raw)
	if err != nil {
		var ve *workflow.ValidationError
		if errors.As(err, &ve) {
			return nil, nil, ve.ModelError()
		}
		return nil, nil, err
	}
	code := wb.Code()
	var view *BotView
	var version *model.BotVersion
	err = s.store.InTx(ctx, func(tx store.Store) error {
		b, err := tx.Bots().Get(ctx, c.Workspace.ID, id)
		if err != nil {
			return err
		}
		versions, err := tx.Bots().ListVersions(ctx, b.ID)
		if err != nil {
			return err
		}
		now := model.Now()
		v := &model.BotVersion{ID: model.NewID(), BotID: b.ID, Name: fmt.Sprintf("v%d", len(versions)+1),
			Description: "published from bot JSON", Code: code, BotJSON: string(wb.Raw), CreatedAt: now}
		if s.compiler != nil {
			if err := s.compiler.Compile(v.ID, code); err != nil {
				return err
			}
		}
		if err := tx.Bots().CreateVersion(ctx, v); err != nil {
			return err
		}
		b.Code, b.VersionID, b.DeployedAt, b.UpdatedAt = code, v.ID, now, now
		if b.Type == model.DefaultBotType {
			b.Type = "studio"
		}
		if err := tx.Bots().Update(ctx, b); err != nil {
			return err
		}
		if err := audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditDeployBot, b.ID, b.Name, v.ID); err != nil {
			return err
		}
		version = v
		view, err = botView(ctx, tx, b)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	s.changed(id)
	return view, version, nil
}

// GetBotJSON returns the bot JSON document of the deployed version.
func (s *Bots) GetBotJSON(ctx context.Context, c *Caller, id string) (json.RawMessage, error) {
	b, err := s.store.Bots().Get(ctx, c.Workspace.ID, id)
	if err != nil {
		return nil, err
	}
	if b.VersionID == "" {
		return nil, model.NotFound("Bot JSON of bot " + quote(id))
	}
	v, err := s.store.Bots().GetVersion(ctx, b.ID, b.VersionID)
	if err != nil {
		return nil, err
	}
	if v.BotJSON == "" {
		return nil, model.NotFound("Bot JSON of bot " + quote(id) + " (its deployed version is code)")
	}
	return json.RawMessage(v.BotJSON), nil
}
