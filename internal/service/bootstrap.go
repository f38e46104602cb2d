package service

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// BootstrapEmail is the e-mail of the owner account made on first start.
const BootstrapEmail = "admin@parley.local"

// Bootstrap prepares an empty store: one owner account, one workspace and a
// personal access token. adminToken, when set, becomes that token's secret.
// It returns the secret, or "" when the store was already bootstrapped.
// Running it again (a restart) changes nothing.
func (s *Service) Bootstrap(ctx context.Context, adminToken string) (secret string, err error) {
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
		if _, err := s.createWorkspace(ctx, tx, acct, "Default workspace"); err != nil {
			return err
		}
		_, secret, err = s.issuePAT(ctx, tx, acct.ID, "bootstrap admin token", adminToken)
		return err
	})
	if model.TypeOf(err) == model.ErrAlreadyExists {
		// Another node bootstrapped the same database at the same moment.
		return "", nil
	}
	return secret, err
}
