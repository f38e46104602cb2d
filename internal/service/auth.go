package service

import (
	"context"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
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

// Authenticate resolves a bearer token to its account. Bot API keys do not
// open the Admin API.
func (s *Service) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if token == "" {
		return nil, model.Unauthorized("missing bearer token: send Authorization: Bearer <token>")
	}
	t, err := s.store.Tokens().GetByHash(ctx, auth.HashToken(token))
	if model.IsNotFound(err) || (err == nil && t.Kind != model.TokenPAT) {
		return nil, model.Unauthorized("invalid token")
	}
	if err != nil {
		return nil, err
	}
	a, err := s.store.Accounts().Get(ctx, t.AccountID)
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("invalid token")
	}
	if err != nil {
		return nil, err
	}
	return &Principal{Account: a, Token: t}, nil
}

// InWorkspace resolves the workspace a principal acts in. A missing, unknown
// or foreign workspace id is 401, as the SPEC says: the credential is not
// valid for that workspace.
func (s *Service) InWorkspace(ctx context.Context, p *Principal, workspaceID string) (*Caller, error) {
	if workspaceID == "" {
		return nil, model.Unauthorized("missing x-workspace-id header")
	}
	m, err := s.store.Members().GetByAccount(ctx, workspaceID, p.Account.ID)
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("the token has no access to workspace %q", workspaceID)
	}
	if err != nil {
		return nil, err
	}
	w, err := s.store.Workspaces().Get(ctx, workspaceID)
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("the token has no access to workspace %q", workspaceID)
	}
	if err != nil {
		return nil, err
	}
	return &Caller{Principal: *p, Workspace: w, Member: m}, nil
}

// require fails with 403 when the caller's role lacks perm.
func (c *Caller) require(perm model.Permission) error {
	if !c.Member.Role.Can(perm) {
		return model.Forbidden("your role %q in this workspace does not allow you to %s", c.Member.Role, perm)
	}
	return nil
}
