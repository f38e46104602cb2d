package sqlstore

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// ---- accounts

type accounts struct{ s *Store }

const accountCols = `id, email, display_name, profile_picture, email_verified, created_at, updated_at`

func scanAccount(r scanner) (*model.Account, error) {
	var a model.Account
	var c, u int64
	if err := r.Scan(&a.ID, &a.Email, &a.DisplayName, &a.ProfilePicture, &a.EmailVerified, &c, &u); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = fromMS(c), fromMS(u)
	return &a, nil
}

func (r accounts) Create(ctx context.Context, a *model.Account) error {
	newID(&a.ID)
	stamp(&a.CreatedAt, model.Now())
	stamp(&a.UpdatedAt, a.CreatedAt)
	_, err := r.s.exec(ctx, `INSERT INTO accounts (`+accountCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.Email, a.DisplayName, a.ProfilePicture, a.EmailVerified, ms(a.CreatedAt), ms(a.UpdatedAt))
	return r.s.fail(err, "account")
}

func (r accounts) Get(ctx context.Context, id string) (*model.Account, error) {
	return one(ctx, r.s, "account", scanAccount, `SELECT `+accountCols+` FROM accounts WHERE id = ?`, id)
}

func (r accounts) GetByEmail(ctx context.Context, email string) (*model.Account, error) {
	return one(ctx, r.s, "account", scanAccount, `SELECT `+accountCols+` FROM accounts WHERE email = ?`, email)
}

func (r accounts) Update(ctx context.Context, a *model.Account) error {
	stamp(&a.UpdatedAt, model.Now())
	return r.s.execOne(ctx, "account", `UPDATE accounts SET email = ?, display_name = ?, profile_picture = ?, email_verified = ?, updated_at = ? WHERE id = ?`,
		a.Email, a.DisplayName, a.ProfilePicture, a.EmailVerified, ms(a.UpdatedAt), a.ID)
}

func (r accounts) Count(ctx context.Context) (int, error) {
	var n int
	err := r.s.queryRow(ctx, `SELECT COUNT(*) FROM accounts`).Scan(&n)
	return n, r.s.fail(err, "accounts")
}

// ---- tokens

type tokens struct{ s *Store }

const tokenCols = `id, kind, account_id, bot_id, workspace_id, integration_id, note, hash, created_at`

func scanToken(r scanner) (*model.Token, error) {
	var t model.Token
	var c int64
	if err := r.Scan(&t.ID, &t.Kind, &t.AccountID, &t.BotID, &t.WorkspaceID, &t.IntegrationID, &t.Note, &t.Hash, &c); err != nil {
		return nil, err
	}
	t.CreatedAt = fromMS(c)
	return &t, nil
}

func (r tokens) Create(ctx context.Context, t *model.Token) error {
	newID(&t.ID)
	stamp(&t.CreatedAt, model.Now())
	_, err := r.s.exec(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, string(t.Kind), t.AccountID, t.BotID, t.WorkspaceID, t.IntegrationID, t.Note, t.Hash, ms(t.CreatedAt))
	return r.s.fail(err, "token")
}

func (r tokens) GetByHash(ctx context.Context, hash string) (*model.Token, error) {
	return one(ctx, r.s, "token", scanToken, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash)
}

func (r tokens) Get(ctx context.Context, id string) (*model.Token, error) {
	return one(ctx, r.s, "token", scanToken, `SELECT `+tokenCols+` FROM tokens WHERE id = ?`, id)
}

func (r tokens) ListByAccount(ctx context.Context, accountID string) ([]*model.Token, error) {
	return all(ctx, r.s, "tokens", scanToken, `SELECT `+tokenCols+` FROM tokens WHERE account_id = ? AND kind = ? ORDER BY created_at DESC, id DESC`,
		accountID, string(model.TokenPAT))
}

func (r tokens) ListByBot(ctx context.Context, botID string) ([]*model.Token, error) {
	return all(ctx, r.s, "tokens", scanToken, `SELECT `+tokenCols+` FROM tokens WHERE bot_id = ? AND kind = ? ORDER BY created_at DESC, id DESC`,
		botID, string(model.TokenBotKey))
}

func (r tokens) ListByIntegration(ctx context.Context, integrationID string) ([]*model.Token, error) {
	return all(ctx, r.s, "tokens", scanToken, `SELECT `+tokenCols+` FROM tokens WHERE integration_id = ? AND kind = ? ORDER BY created_at DESC, id DESC`,
		integrationID, string(model.TokenIntegrationKey))
}

func (r tokens) Delete(ctx context.Context, id string) error {
	return r.s.execOne(ctx, "token", `DELETE FROM tokens WHERE id = ?`, id)
}

// ---- workspaces

type workspaces struct{ s *Store }

const workspaceCols = `w.id, w.name, w.owner_id, w.spending_limit, w.about, w.profile_picture, w.contact_email, w.website,
	w.social_accounts, w.is_public, w.handle, w.created_at, w.updated_at,
	(SELECT COUNT(*) FROM bots b WHERE b.workspace_id = w.id)`

func scanWorkspace(r scanner) (*model.Workspace, error) {
	var w model.Workspace
	var social string
	var c, u int64
	if err := r.Scan(&w.ID, &w.Name, &w.OwnerID, &w.SpendingLimit, &w.About, &w.ProfilePicture, &w.ContactEmail, &w.Website,
		&social, &w.IsPublic, &w.Handle, &c, &u, &w.BotCount); err != nil {
		return nil, err
	}
	w.CreatedAt, w.UpdatedAt = fromMS(c), fromMS(u)
	return &w, fromJSON(social, &w.SocialAccounts)
}

func (r workspaces) Create(ctx context.Context, w *model.Workspace) error {
	newID(&w.ID)
	stamp(&w.CreatedAt, model.Now())
	stamp(&w.UpdatedAt, w.CreatedAt)
	social, err := jsonText(w.SocialAccounts)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO workspaces (id, name, owner_id, spending_limit, about, profile_picture, contact_email, website,
		social_accounts, is_public, handle, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, w.Name, w.OwnerID, w.SpendingLimit, w.About, w.ProfilePicture, w.ContactEmail, w.Website,
		social, w.IsPublic, w.Handle, ms(w.CreatedAt), ms(w.UpdatedAt))
	return r.s.fail(err, "workspace")
}

func (r workspaces) Get(ctx context.Context, id string) (*model.Workspace, error) {
	return one(ctx, r.s, "workspace", scanWorkspace, `SELECT `+workspaceCols+` FROM workspaces w WHERE w.id = ?`, id)
}

func (r workspaces) GetByHandle(ctx context.Context, handle string) (*model.Workspace, error) {
	if handle == "" {
		return nil, model.NotFound("workspace")
	}
	return one(ctx, r.s, "workspace", scanWorkspace, `SELECT `+workspaceCols+` FROM workspaces w WHERE w.handle = ?`, handle)
}

func (r workspaces) Update(ctx context.Context, w *model.Workspace) error {
	stamp(&w.UpdatedAt, model.Now())
	social, err := jsonText(w.SocialAccounts)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, "workspace", `UPDATE workspaces SET name = ?, owner_id = ?, spending_limit = ?, about = ?, profile_picture = ?,
		contact_email = ?, website = ?, social_accounts = ?, is_public = ?, handle = ?, updated_at = ? WHERE id = ?`,
		w.Name, w.OwnerID, w.SpendingLimit, w.About, w.ProfilePicture, w.ContactEmail, w.Website, social, w.IsPublic, w.Handle,
		ms(w.UpdatedAt), w.ID)
}

// Delete removes the workspace; members, audit records and bots (with all
// their data) go with it through ON DELETE CASCADE. The bots' rows that no
// foreign key ties to them (unkeyedBotRows) are removed here, after the
// bots' rows, as bots.Delete does.
func (r workspaces) Delete(ctx context.Context, id string) error {
	return r.s.tx(ctx, func(s *Store) error {
		bots, err := all(ctx, s, "workspace", func(sc scanner) (string, error) {
			var bot string
			return bot, sc.Scan(&bot)
		}, `SELECT id FROM bots WHERE workspace_id = ?`, id)
		if err != nil {
			return err
		}
		if err := s.execOne(ctx, "workspace", `DELETE FROM workspaces WHERE id = ?`, id); err != nil {
			return err
		}
		for _, bot := range bots {
			if err := deleteUnkeyedBotRows(ctx, s, `= ?`, bot, "workspace"); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r workspaces) ListForAccount(ctx context.Context, accountID, handle string, p store.Page) ([]*model.Workspace, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + workspaceCols + ` FROM workspaces w JOIN members m ON m.workspace_id = w.id`,
		where: []string{"m.account_id = ?"},
		args:  []any{accountID},
		tcol:  "w.created_at", idcol: "w.id",
	}
	if handle != "" {
		ls.where = append(ls.where, "w.handle = ?")
		ls.args = append(ls.args, handle)
	}
	return list(ctx, r.s, p, ls, "workspaces", scanWorkspace, func(w *model.Workspace) (int64, string) { return ms(w.CreatedAt), w.ID })
}

func (r workspaces) ListPublic(ctx context.Context, p store.Page) ([]*model.Workspace, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + workspaceCols + ` FROM workspaces w`,
		where: []string{"w.is_public = ?"},
		args:  []any{true},
		tcol:  "w.created_at", idcol: "w.id",
	}
	return list(ctx, r.s, p, ls, "workspaces", scanWorkspace, func(w *model.Workspace) (int64, string) { return ms(w.CreatedAt), w.ID })
}

// ---- members

type members struct{ s *Store }

const memberSelect = `SELECT m.id, m.workspace_id, m.account_id, a.email, a.display_name, a.profile_picture, m.role, m.created_at
	FROM members m JOIN accounts a ON a.id = m.account_id`

func scanMember(r scanner) (*model.Member, error) {
	var m model.Member
	var c int64
	if err := r.Scan(&m.ID, &m.WorkspaceID, &m.AccountID, &m.Email, &m.DisplayName, &m.ProfilePicture, &m.Role, &c); err != nil {
		return nil, err
	}
	m.CreatedAt = fromMS(c)
	return &m, nil
}

// Create stores the membership; Email, DisplayName and ProfilePicture come
// from the account on reads and are not stored.
func (r members) Create(ctx context.Context, m *model.Member) error {
	newID(&m.ID)
	stamp(&m.CreatedAt, model.Now())
	_, err := r.s.exec(ctx, `INSERT INTO members (id, workspace_id, account_id, role, created_at) VALUES (?, ?, ?, ?, ?)`,
		m.ID, m.WorkspaceID, m.AccountID, string(m.Role), ms(m.CreatedAt))
	return r.s.fail(err, "member")
}

func (r members) Get(ctx context.Context, workspaceID, id string) (*model.Member, error) {
	return one(ctx, r.s, "member", scanMember, memberSelect+` WHERE m.workspace_id = ? AND m.id = ?`, workspaceID, id)
}

func (r members) GetByAccount(ctx context.Context, workspaceID, accountID string) (*model.Member, error) {
	return one(ctx, r.s, "member", scanMember, memberSelect+` WHERE m.workspace_id = ? AND m.account_id = ?`, workspaceID, accountID)
}

func (r members) UpdateRole(ctx context.Context, workspaceID, id string, role model.Role) error {
	return r.s.execOne(ctx, "member", `UPDATE members SET role = ? WHERE workspace_id = ? AND id = ?`, string(role), workspaceID, id)
}

func (r members) Delete(ctx context.Context, workspaceID, id string) error {
	return r.s.execOne(ctx, "member", `DELETE FROM members WHERE workspace_id = ? AND id = ?`, workspaceID, id)
}

func (r members) List(ctx context.Context, workspaceID string, p store.Page) ([]*model.Member, string, error) {
	ls := listSpec{
		sel:   memberSelect,
		where: []string{"m.workspace_id = ?"},
		args:  []any{workspaceID},
		tcol:  "m.created_at", idcol: "m.id", asc: true,
	}
	return list(ctx, r.s, p, ls, "members", scanMember, func(m *model.Member) (int64, string) { return ms(m.CreatedAt), m.ID })
}

func (r members) CountRole(ctx context.Context, workspaceID string, role model.Role) (int, error) {
	var n int
	err := r.s.queryRow(ctx, `SELECT COUNT(*) FROM members WHERE workspace_id = ? AND role = ?`, workspaceID, string(role)).Scan(&n)
	return n, r.s.fail(err, "members")
}

// ---- audit

type audit struct{ s *Store }

func scanAudit(r scanner) (*model.AuditRecord, error) {
	var a model.AuditRecord
	var t int64
	if err := r.Scan(&a.ID, &a.WorkspaceID, &t, &a.AccountID, &a.Email, &a.Action, &a.ResourceID, &a.ResourceName, &a.Value); err != nil {
		return nil, err
	}
	a.RecordedAt = fromMS(t)
	return &a, nil
}

func (r audit) Record(ctx context.Context, a *model.AuditRecord) error {
	newID(&a.ID)
	stamp(&a.RecordedAt, model.Now())
	_, err := r.s.exec(ctx, `INSERT INTO audit_records (id, workspace_id, recorded_at, account_id, email, action, resource_id, resource_name, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.WorkspaceID, ms(a.RecordedAt), a.AccountID, a.Email, string(a.Action), a.ResourceID, a.ResourceName, a.Value)
	return r.s.fail(err, "audit record")
}

func (r audit) List(ctx context.Context, workspaceID string, p store.Page) ([]*model.AuditRecord, string, error) {
	ls := listSpec{
		sel:   `SELECT id, workspace_id, recorded_at, account_id, email, action, resource_id, resource_name, value FROM audit_records`,
		where: []string{"workspace_id = ?"},
		args:  []any{workspaceID},
		tcol:  "recorded_at", idcol: "id",
	}
	return list(ctx, r.s, p, ls, "audit records", scanAudit, func(a *model.AuditRecord) (int64, string) { return ms(a.RecordedAt), a.ID })
}
