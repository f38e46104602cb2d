package integrations

import (
	"context"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
)

// Keys are integration API keys (createIntegrationApiKey): a credential a
// development integration's process uses as BP_TOKEN to call the Runtime
// API for the bots that installed it.
type Keys struct{ *core }

// IntegrationKeyPrefix starts every integration API key.
const IntegrationKeyPrefix = "bp_iak_"

func (s *Keys) integration(ctx context.Context, m Member, id string) (*model.IntegrationDef, error) {
	return (&Definitions{s.core}).get(ctx, m, id)
}

// List lists an integration's API keys, newest first.
func (s *Keys) List(ctx context.Context, m Member, integrationID string) ([]*model.Token, error) {
	if integrationID == "" {
		return nil, model.Errorf(model.ErrInvalidQuery, "integrationId: required")
	}
	if _, err := s.integration(ctx, m, integrationID); err != nil {
		return nil, err
	}
	return s.store.Tokens().ListByIntegration(ctx, integrationID)
}

// Create creates an integration API key and returns it with its value
// (shown once).
func (s *Keys) Create(ctx context.Context, m Member, integrationID, note string) (*model.Token, string, error) {
	if err := m.require(model.PermWriteBots, "createIntegrationApiKey"); err != nil {
		return nil, "", err
	}
	if integrationID == "" {
		return nil, "", model.Invalid("integrationId: required")
	}
	if len(note) > 2000 {
		return nil, "", model.Invalid("note: at most 2000 characters")
	}
	if _, err := s.integration(ctx, m, integrationID); err != nil {
		return nil, "", err
	}
	value := model.NewSecret(IntegrationKeyPrefix)
	t := &model.Token{ID: model.NewID(), Kind: model.TokenIntegrationKey, AccountID: m.AccountID, WorkspaceID: m.WorkspaceID,
		IntegrationID: integrationID, Note: note, Hash: auth.HashToken(value), CreatedAt: model.Now()}
	if err := s.store.Tokens().Create(ctx, t); err != nil {
		return nil, "", err
	}
	return t, value, nil
}

// Delete deletes an integration API key of the member's workspace.
func (s *Keys) Delete(ctx context.Context, m Member, id string) error {
	if err := m.require(model.PermWriteBots, "deleteIntegrationApiKey"); err != nil {
		return err
	}
	t, err := s.store.Tokens().Get(ctx, id)
	if err != nil || t.Kind != model.TokenIntegrationKey || t.WorkspaceID != m.WorkspaceID {
		if err == nil || model.IsNotFound(err) {
			return notFound("Integration API key", id)
		}
		return err
	}
	return orNotFound(s.store.Tokens().Delete(ctx, id), "Integration API key", id)
}
