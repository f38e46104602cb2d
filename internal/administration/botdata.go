package administration

import (
	"context"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// bot returns a bot of the caller's workspace, or 404.
func (s *Bots) bot(ctx context.Context, c *Caller, id string) (*model.Bot, error) {
	return s.store.Bots().Get(ctx, c.Workspace.ID, id)
}

// ListAPIKeys lists a bot's API keys (never their secrets).
func (s *Bots) ListAPIKeys(ctx context.Context, c *Caller, botID string) ([]*model.Token, error) {
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, err
	}
	return s.store.Tokens().ListByBot(ctx, botID)
}

// CreateAPIKey issues an API key for a bot; the secret is returned only
// here.
func (s *Bots) CreateAPIKey(ctx context.Context, c *Caller, botID, note string) (*model.Token, string, error) {
	if err := c.require("createBotApiKey"); err != nil {
		return nil, "", err
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, "", err
	}
	secret := model.NewSecret(auth.BotKeyPrefix)
	t := &model.Token{ID: model.NewID(), Kind: model.TokenBotKey, BotID: botID, WorkspaceID: c.Workspace.ID,
		Note: note, Hash: auth.HashToken(secret), CreatedAt: model.Now()}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Tokens().Create(ctx, t); err != nil {
			return err
		}
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditUpdateBotConfig, botID, "", "api key created")
	})
	return t, secret, err
}

// DeleteAPIKey revokes a bot API key of the caller's workspace.
func (s *Bots) DeleteAPIKey(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteBotApiKey"); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		t, err := tx.Tokens().Get(ctx, id)
		if err != nil {
			return err
		}
		if t.Kind != model.TokenBotKey || t.WorkspaceID != c.Workspace.ID {
			return model.NotFound("bot API key")
		}
		if err := tx.Tokens().Delete(ctx, id); err != nil {
			return err
		}
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditUpdateBotConfig, t.BotID, "", "api key deleted")
	})
}

// ListVersions lists a bot's versions, newest first.
func (s *Bots) ListVersions(ctx context.Context, c *Caller, botID string) ([]*model.BotVersion, error) {
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, err
	}
	return s.store.Bots().ListVersions(ctx, botID)
}

// GetVersion returns one version of a bot.
func (s *Bots) GetVersion(ctx context.Context, c *Caller, botID, versionID string) (*model.BotVersion, error) {
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, err
	}
	return s.store.Bots().GetVersion(ctx, botID, versionID)
}

// Logs lists a bot's log lines, newest first.
func (s *Bots) Logs(ctx context.Context, c *Caller, f model.LogFilter, page store.Page) ([]*model.LogEntry, string, error) {
	if _, err := s.bot(ctx, c, f.BotID); err != nil {
		return nil, "", err
	}
	return s.store.Logs().List(ctx, f, page)
}

// ListIssues lists a bot's issues, most recently seen first.
func (s *Bots) ListIssues(ctx context.Context, c *Caller, botID string, page store.Page) ([]*model.Issue, string, error) {
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, "", err
	}
	return s.store.Issues().List(ctx, botID, page)
}

// GetIssue returns one issue of a bot.
func (s *Bots) GetIssue(ctx context.Context, c *Caller, botID, issueID string) (*model.Issue, error) {
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, err
	}
	return s.store.Issues().Get(ctx, botID, issueID)
}

// DeleteIssue dismisses an issue.
func (s *Bots) DeleteIssue(ctx context.Context, c *Caller, botID, issueID string) error {
	if err := c.require("deleteBotIssue"); err != nil {
		return err
	}
	b, err := s.bot(ctx, c, botID)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Issues().Delete(ctx, botID, issueID); err != nil {
			return err
		}
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditUpdateBot, b.ID, b.Name, "issue "+issueID+" dismissed")
	})
}

// ListIssueEvents lists the occurrences of an issue, newest first.
func (s *Bots) ListIssueEvents(ctx context.Context, c *Caller, botID, issueID string, page store.Page) ([]*model.IssueEvent, string, error) {
	if _, err := s.GetIssue(ctx, c, botID, issueID); err != nil {
		return nil, "", err
	}
	return s.store.Issues().Events(ctx, issueID, page)
}
