// Package administration implements the Admin API's operations: accounts
// and personal access tokens, workspaces and their members, bots with
// their versions, logs, issues, API keys and bot JSON, and the audit trail
// of every mutating call. Each resource has its type (Accounts,
// Workspaces, Members, Bots); who may call what is in permissions.go.
package administration

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Principal is an authenticated account.
type Principal struct {
	Account *model.Account
	Token   *model.Token
}

// Caller is a principal acting in a workspace it is a member of.
type Caller struct {
	Principal
	Workspace *model.Workspace
	Member    *model.Member
}

// Compiler checks bot code before it is accepted (the JavaScript runtime).
type Compiler interface {
	Compile(versionID, code string) error
}

// BotObserver is told, after the commit, that a bot's definition,
// integrations or deployed version changed, or that it was deleted: the
// Chat API's caches and the workflow scheduler hold copies.
type BotObserver interface {
	BotChanged(botID string)
}

// IntegrationInstaller is what bots need of the integrations they install
// (package integrations, passed by app.start): finding the integration an
// entry of bot.integrations names, checking its configuration, and the
// integration's register and unregister calls.
type IntegrationInstaller interface {
	// Resolve returns the published integration an entry installs: key is
	// the entry's key (an alias, or an integration id), integrationID its
	// integrationId ("" when absent). nil, nil when the entry names no
	// published integration and has no integrationId.
	Resolve(ctx context.Context, workspaceID, key, integrationID string) (*model.IntegrationDef, error)
	// CheckConfiguration validates an entry's configuration against the
	// integration's schema: a 400 names the field under path.
	CheckConfiguration(def *model.IntegrationDef, path, configurationType string, configuration map[string]any) error
	// Changed runs after the commit: register for the entries installed
	// or changed, unregister for the removed ones; it records their status.
	Changed(ctx context.Context, botID string, changed, removed []*model.Integration)
}

// audit records a mutating admin call.
func audit(ctx context.Context, tx store.Store, workspaceID string, p *Principal, action model.AuditAction, resourceID, resourceName, value string) error {
	r := &model.AuditRecord{ID: model.NewID(), WorkspaceID: workspaceID, RecordedAt: model.Now(),
		Action: action, ResourceID: resourceID, ResourceName: resourceName, Value: value}
	if p != nil {
		r.AccountID, r.Email = p.Account.ID, p.Account.Email
	}
	if err := tx.Audit().Record(ctx, r); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
