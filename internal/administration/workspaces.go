package administration

import (
	"context"
	"regexp"
	"unicode/utf8"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Workspaces implements the workspace operations and the audit trail.
type Workspaces struct {
	store store.Store
}

// NewWorkspaces returns the workspace operations.
func NewWorkspaces(st store.Store) *Workspaces { return &Workspaces{store: st} }

// DefaultSpendingLimit is the spending limit of new workspaces (Parley does
// not bill; the field exists because the clients require it).
const DefaultSpendingLimit = 100

// Create creates a workspace owned by the caller.
func (s *Workspaces) Create(ctx context.Context, p *Principal, name string) (*model.Workspace, error) {
	if err := validateWorkspaceName(name); err != nil {
		return nil, err
	}
	var w *model.Workspace
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if w, err = createWorkspace(ctx, tx, p.Account, name); err != nil {
			return err
		}
		return audit(ctx, tx, w.ID, p, model.AuditCreateWorkspace, w.ID, w.Name, "")
	})
	return w, err
}

func createWorkspace(ctx context.Context, tx store.Store, owner *model.Account, name string) (*model.Workspace, error) {
	now := model.Now()
	w := &model.Workspace{ID: model.NewID(), Name: name, OwnerID: owner.ID, SpendingLimit: DefaultSpendingLimit,
		SocialAccounts: []string{}, CreatedAt: now, UpdatedAt: now}
	if err := tx.Workspaces().Create(ctx, w); err != nil {
		return nil, err
	}
	m := &model.Member{ID: model.NewID(), WorkspaceID: w.ID, AccountID: owner.ID, Email: owner.Email,
		Role: model.RoleOwner, CreatedAt: now}
	return w, tx.Members().Create(ctx, m)
}

func validateWorkspaceName(name string) error {
	if n := utf8.RuneCountInString(name); n < 1 || n > 64 {
		return model.Invalid("name: must be 1 to 64 characters")
	}
	return nil
}

// member returns the principal's membership of a workspace, hiding
// workspaces it is not a member of as not found.
func (s *Workspaces) member(ctx context.Context, p *Principal, workspaceID string) (*Caller, error) {
	c, err := inWorkspace(ctx, s.store, p, workspaceID)
	if model.TypeOf(err) == model.ErrUnauthorized {
		return nil, model.NotFound("workspace")
	}
	return c, err
}

// Get returns a workspace the caller is a member of.
func (s *Workspaces) Get(ctx context.Context, p *Principal, id string) (*model.Workspace, error) {
	c, err := s.member(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return c.Workspace, nil
}

// List lists the workspaces the caller is a member of.
func (s *Workspaces) List(ctx context.Context, p *Principal, handle string, page store.Page) ([]*model.Workspace, string, error) {
	return s.store.Workspaces().ListForAccount(ctx, p.Account.ID, handle, page)
}

// ListPublic lists the workspaces their owners marked public (isPublic);
// none is by default. Any signed-in account may list them.
func (s *Workspaces) ListPublic(ctx context.Context, _ *Principal, page store.Page) ([]*model.Workspace, string, error) {
	return s.store.Workspaces().ListPublic(ctx, page)
}

// GetPublic returns a workspace marked public (any signed-in account);
// another is not found.
func (s *Workspaces) GetPublic(ctx context.Context, _ *Principal, id string) (*model.Workspace, error) {
	w, err := s.store.Workspaces().Get(ctx, id)
	if model.IsNotFound(err) || (err == nil && !w.IsPublic) {
		return nil, model.NotFound("workspace")
	}
	return w, err
}

// HandleAvailable reports whether a workspace handle is well-formed and
// not taken by another workspace.
func (s *Workspaces) HandleAvailable(ctx context.Context, _ *Principal, handle string) (bool, error) {
	if len(handle) > 64 || !handlePattern.MatchString(handle) {
		return false, model.Invalid("handle: must match ^[0-9a-z][a-z0-9-_]+[0-9a-z]$ (at most 64 characters)")
	}
	_, err := s.store.Workspaces().GetByHandle(ctx, handle)
	if model.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// WorkspacePatch is a partial update of a workspace profile.
type WorkspacePatch struct {
	Name           *string   `json:"name"`
	SpendingLimit  *float64  `json:"spendingLimit"`
	About          *string   `json:"about"`
	ProfilePicture *string   `json:"profilePicture"`
	ContactEmail   *string   `json:"contactEmail"`
	Website        *string   `json:"website"`
	SocialAccounts *[]string `json:"socialAccounts"`
	IsPublic       *bool     `json:"isPublic"`
	Handle         *string   `json:"handle"`
}

var handlePattern = regexp.MustCompile(`^[0-9a-z][a-z0-9-_]+[0-9a-z]$`)

// Update changes a workspace profile (administrators and owners).
func (s *Workspaces) Update(ctx context.Context, p *Principal, id string, patch WorkspacePatch) (*model.Workspace, error) {
	c, err := s.member(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if err := c.require("updateWorkspace"); err != nil {
		return nil, err
	}
	w := *c.Workspace
	if patch.Name != nil {
		if err := validateWorkspaceName(*patch.Name); err != nil {
			return nil, err
		}
		w.Name = *patch.Name
	}
	if v := patch.SpendingLimit; v != nil {
		if *v < 5 || *v > 1000 {
			return nil, model.Invalid("spendingLimit: must be between 5 and 1000")
		}
		w.SpendingLimit = *v
	}
	setString(&w.About, patch.About)
	setString(&w.ProfilePicture, patch.ProfilePicture)
	setString(&w.Website, patch.Website)
	if patch.ContactEmail != nil {
		if *patch.ContactEmail != "" && !model.ValidEmail(*patch.ContactEmail) {
			return nil, model.Invalid("contactEmail: not an e-mail address")
		}
		w.ContactEmail = *patch.ContactEmail
	}
	if patch.SocialAccounts != nil {
		if len(*patch.SocialAccounts) > 5 {
			return nil, model.Invalid("socialAccounts: at most 5 items")
		}
		w.SocialAccounts = *patch.SocialAccounts
	}
	if patch.IsPublic != nil {
		w.IsPublic = *patch.IsPublic
	}
	if patch.Handle != nil {
		if len(*patch.Handle) > 64 || !handlePattern.MatchString(*patch.Handle) {
			return nil, model.Invalid("handle: must match ^[0-9a-z][a-z0-9-_]+[0-9a-z]$ (at most 64 characters)")
		}
		w.Handle = *patch.Handle
	}
	w.UpdatedAt = model.Now()
	err = s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Workspaces().Update(ctx, &w); err != nil {
			return err
		}
		return audit(ctx, tx, w.ID, p, model.AuditUpdateWorkspace, w.ID, w.Name, "")
	})
	if err != nil {
		return nil, err
	}
	return &w, nil
}

func setString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// Delete deletes a workspace (owners only). A workspace that still
// has bots is refused with 409 RelationConflict: bots and their
// conversations must be deleted first, explicitly, so that one call can
// never wipe them by accident.
func (s *Workspaces) Delete(ctx context.Context, p *Principal, id string) error {
	c, err := s.member(ctx, p, id)
	if err != nil {
		return err
	}
	if err := c.require("deleteWorkspace"); err != nil {
		return err
	}
	if c.Workspace.BotCount > 0 {
		return model.Errorf(model.ErrRelationConflict,
			"workspace %q still has %d bot(s); delete them first", c.Workspace.Name, c.Workspace.BotCount)
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		// Re-check inside the transaction: a bot created meanwhile wins.
		w, err := tx.Workspaces().Get(ctx, id)
		if err != nil {
			return err
		}
		if w.BotCount > 0 {
			return model.Errorf(model.ErrRelationConflict, "workspace %q still has %d bot(s); delete them first", w.Name, w.BotCount)
		}
		return tx.Workspaces().Delete(ctx, id)
	})
}

// AuditRecords lists a workspace's audit trail, newest first (administrators
// and owners).
func (s *Workspaces) AuditRecords(ctx context.Context, p *Principal, workspaceID string, page store.Page) ([]*model.AuditRecord, string, error) {
	c, err := s.member(ctx, p, workspaceID)
	if err != nil {
		return nil, "", err
	}
	if err := c.require("getAuditRecords"); err != nil {
		return nil, "", err
	}
	return s.store.Audit().List(ctx, workspaceID, page)
}
