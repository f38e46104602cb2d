package service

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/parley-bots/parley/internal/auth"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// AccountPatch is a partial update of an account; nil fields are unchanged.
type AccountPatch struct {
	DisplayName    *string
	ProfilePicture *string
}

// UpdateAccount changes the caller's own profile.
func (s *Service) UpdateAccount(ctx context.Context, p *Principal, patch AccountPatch) (*model.Account, error) {
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
func (s *Service) ListPATs(ctx context.Context, p *Principal) ([]*model.Token, error) {
	return s.store.Tokens().ListByAccount(ctx, p.Account.ID)
}

// CreatePAT issues a personal access token; the secret is returned only here.
func (s *Service) CreatePAT(ctx context.Context, p *Principal, note string) (*model.Token, string, error) {
	if len(note) > 500 {
		return nil, "", model.Invalid("note: at most 500 characters")
	}
	return s.issuePAT(ctx, s.store, p.Account.ID, note, "")
}

// issuePAT stores a PAT; secret "" means generate one.
func (s *Service) issuePAT(ctx context.Context, st store.Store, accountID, note, secret string) (*model.Token, string, error) {
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
func (s *Service) DeletePAT(ctx context.Context, p *Principal, id string) error {
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
func (s *Service) IssueTokenForEmail(ctx context.Context, email, note string) (*model.Account, string, error) {
	email = strings.TrimSpace(strings.ToLower(email))
	if !model.ValidEmail(email) {
		return nil, "", model.Invalid("email: %q is not an e-mail address", email)
	}
	var acct *model.Account
	var secret string
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		acct, err = s.accountForEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		_, secret, err = s.issuePAT(ctx, tx, acct.ID, note, "")
		return err
	})
	return acct, secret, err
}

// accountForEmail finds or creates the account of an e-mail address.
func (s *Service) accountForEmail(ctx context.Context, st store.Store, email string) (*model.Account, error) {
	a, err := st.Accounts().GetByEmail(ctx, email)
	if !model.IsNotFound(err) {
		return a, err
	}
	now := model.Now()
	a = &model.Account{ID: model.NewID(), Email: email, CreatedAt: now, UpdatedAt: now}
	return a, st.Accounts().Create(ctx, a)
}
