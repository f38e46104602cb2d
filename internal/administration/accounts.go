package administration

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Accounts implements authentication, the account and its personal access
// tokens, and the bootstrap of an empty store.
type Accounts struct {
	store store.Store
}

// NewAccounts returns the account operations.
func NewAccounts(st store.Store) *Accounts { return &Accounts{store: st} }

// Authenticate resolves a bearer token to its account. Bot API keys do not
// open the Admin API.
func (s *Accounts) Authenticate(ctx context.Context, token string) (*Principal, error) {
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
// or foreign workspace id is 401, as Botpress does: the credential is not
// valid for that workspace.
func (s *Accounts) InWorkspace(ctx context.Context, p *Principal, workspaceID string) (*Caller, error) {
	return inWorkspace(ctx, s.store, p, workspaceID)
}

func inWorkspace(ctx context.Context, st store.Store, p *Principal, workspaceID string) (*Caller, error) {
	if workspaceID == "" {
		return nil, model.Unauthorized("missing x-workspace-id header")
	}
	m, err := st.Members().GetByAccount(ctx, workspaceID, p.Account.ID)
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("the token has no access to workspace %q", workspaceID)
	}
	if err != nil {
		return nil, err
	}
	w, err := st.Workspaces().Get(ctx, workspaceID)
	if model.IsNotFound(err) {
		return nil, model.Unauthorized("the token has no access to workspace %q", workspaceID)
	}
	if err != nil {
		return nil, err
	}
	return &Caller{Principal: *p, Workspace: w, Member: m}, nil
}

// BootstrapEmail is the e-mail of the owner account made on first start.
const BootstrapEmail = "admin@parley.local"

// Bootstrap prepares an empty store: one owner account, one workspace and a
// personal access token. adminToken, when set, becomes that token's secret.
// It returns the secret, or "" when the store was already bootstrapped.
// Running it again (a restart) changes nothing.
func (s *Accounts) Bootstrap(ctx context.Context, adminToken string) (secret string, err error) {
	err = s.store.InTx(ctx, func(tx store.Store) error {
		n, err := tx.Accounts().Count(ctx)
		if err != nil || n > 0 {
			return err
		}
		now := model.Now()
		acct := &model.Account{ID: model.NewID(), Email: BootstrapEmail, DisplayName: "Administrator",
			EmailVerified: true, CreatedAt: now, UpdatedAt: now}
		if err := tx.Accounts().Create(ctx, acct); err != nil {
			return err
		}
		if _, err := createWorkspace(ctx, tx, acct, "Default workspace"); err != nil {
			return err
		}
		_, secret, err = issuePAT(ctx, tx, acct.ID, "bootstrap admin token", adminToken)
		return err
	})
	if model.TypeOf(err) == model.ErrAlreadyExists {
		// Another node bootstrapped the same database at the same moment.
		return "", nil
	}
	return secret, err
}

// AccountPatch is a partial update of an account; nil fields are unchanged.
type AccountPatch struct {
	DisplayName    *string
	ProfilePicture *string
}

// UpdateAccount changes the caller's own profile.
func (s *Accounts) UpdateAccount(ctx context.Context, p *Principal, patch AccountPatch) (*model.Account, error) {
	a := *p.Account
	if patch.DisplayName != nil {
		if utf8.RuneCountInString(*patch.DisplayName) > 100 {
			return nil, model.Invalid("displayName: at most 100 characters")
		}
		a.DisplayName = *patch.DisplayName
	}
	if patch.ProfilePicture != nil {
		a.ProfilePicture = *patch.ProfilePicture
	}
	a.UpdatedAt = model.Now()
	if err := s.store.Accounts().Update(ctx, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// ListPATs lists the caller's personal access tokens (never their secrets).
func (s *Accounts) ListPATs(ctx context.Context, p *Principal) ([]*model.Token, error) {
	return s.store.Tokens().ListByAccount(ctx, p.Account.ID)
}

// CreatePAT issues a personal access token; the secret is returned only here.
func (s *Accounts) CreatePAT(ctx context.Context, p *Principal, note string) (*model.Token, string, error) {
	if len(note) > 500 {
		return nil, "", model.Invalid("note: at most 500 characters")
	}
	return issuePAT(ctx, s.store, p.Account.ID, note, "")
}

// issuePAT stores a PAT; secret "" means generate one.
func issuePAT(ctx context.Context, st store.Store, accountID, note, secret string) (*model.Token, string, error) {
	if secret == "" {
		secret = model.NewSecret(auth.PATPrefix)
	}
	t := &model.Token{ID: model.NewID(), Kind: model.TokenPAT, AccountID: accountID, Note: note,
		Hash: auth.HashToken(secret), CreatedAt: model.Now()}
	if err := st.Tokens().Create(ctx, t); err != nil {
		return nil, "", err
	}
	return t, secret, nil
}

// DeletePAT revokes one of the caller's tokens.
func (s *Accounts) DeletePAT(ctx context.Context, p *Principal, id string) error {
	t, err := s.store.Tokens().Get(ctx, id)
	if err != nil {
		return err
	}
	if t.Kind != model.TokenPAT || t.AccountID != p.Account.ID {
		return model.NotFound("personal access token")
	}
	return s.store.Tokens().Delete(ctx, id)
}

// IssueTokenForEmail gives the account with that e-mail a new PAT, creating
// the account if needed. It backs `parley token create`, the way an operator
// hands a token to a person added as a workspace member.
func (s *Accounts) IssueTokenForEmail(ctx context.Context, email, note string) (*model.Account, string, error) {
	email = strings.TrimSpace(strings.ToLower(email))
	if !model.ValidEmail(email) {
		return nil, "", model.Invalid("email: %q is not an e-mail address", email)
	}
	var acct *model.Account
	var secret string
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		acct, err = accountForEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		_, secret, err = issuePAT(ctx, tx, acct.ID, note, "")
		return err
	})
	return acct, secret, err
}

// accountForEmail finds or creates the account of an e-mail address.
func accountForEmail(ctx context.Context, st store.Store, email string) (*model.Account, error) {
	a, err := st.Accounts().GetByEmail(ctx, email)
	if !model.IsNotFound(err) {
		return a, err
	}
	now := model.Now()
	a = &model.Account{ID: model.NewID(), Email: email, CreatedAt: now, UpdatedAt: now}
	return a, st.Accounts().Create(ctx, a)
}

// Introspect finds the workspace of a bot the principal can reach; a bot
// of a workspace it is not a member of is not found.
func (s *Accounts) Introspect(ctx context.Context, p *Principal, botID string) (*model.Bot, error) {
	b, err := s.store.Bots().GetByID(ctx, botID)
	if err != nil {
		return nil, err
	}
	if _, err := inWorkspace(ctx, s.store, p, b.WorkspaceID); err != nil {
		return nil, model.NotFound("bot")
	}
	return b, nil
}
