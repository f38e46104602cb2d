package store

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// IntegrationFilter narrows Integrations.List.
type IntegrationFilter struct {
	// WorkspaceID: the workspace's integrations; "" with Public: every
	// public one (the self-hosted hub).
	WorkspaceID string
	Public      bool
	Name        string
	Version     string
	// Dev: nil any, else only development (true) or not (false) ones.
	Dev *bool
	// InstalledByBotID: only the integrations this bot installed.
	InstalledByBotID string
	// Search matches name, title or description (case-insensitive).
	Search string
}

// Integrations stores integration definitions, their logs, and how far
// the bot's messages of integration-owned conversations were delivered.
type Integrations interface {
	Create(ctx context.Context, d *model.IntegrationDef) error
	// Get finds an integration by id in any workspace.
	Get(ctx context.Context, id string) (*model.IntegrationDef, error)
	// GetByName finds the workspace's (or, with workspaceID "", a public)
	// integration by name and version; version "latest" is the newest.
	GetByName(ctx context.Context, workspaceID, name, version string) (*model.IntegrationDef, error)
	Update(ctx context.Context, d *model.IntegrationDef) error
	Delete(ctx context.Context, id string) error
	// List is newest first.
	List(ctx context.Context, f IntegrationFilter, p Page) ([]*model.IntegrationDef, string, error)
	// Installations lists the bots' entries that install the integration.
	Installations(ctx context.Context, integrationID string) ([]*model.Integration, error)

	AppendLogs(ctx context.Context, entries ...*model.IntegrationLog) error
	// Logs is newest first.
	Logs(ctx context.Context, f model.IntegrationLogFilter, p Page) ([]*model.IntegrationLog, string, error)

	// DeliveredSeq is how far the conversation's signals were delivered
	// to its integration (0: none).
	DeliveredSeq(ctx context.Context, botID, conversationID string) (int64, error)
	SetDeliveredSeq(ctx context.Context, botID, conversationID string, seq int64) error
	// Undelivered lists conversations owned by an installed integration
	// whose signals go past their delivered seq, at most limit.
	Undelivered(ctx context.Context, limit int) ([]model.ConversationRef, error)
}
