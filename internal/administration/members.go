package administration

import (
	"context"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Members implements the workspace member operations. Only an owner may
// make or change another owner, and a workspace always keeps one.
type Members struct {
	store store.Store
}

// NewMembers returns the member operations.
func NewMembers(st store.Store) *Members { return &Members{store: st} }

// List lists the workspace's members (any member may read).
func (s *Members) List(ctx context.Context, c *Caller, page store.Page) ([]*model.Member, string, error) {
	return s.store.Members().List(ctx, c.Workspace.ID, page)
}

// Add adds the person with that e-mail to the caller's workspace,
// creating their account if Parley does not know them yet. Only an owner may
// make another owner.
func (s *Members) Add(ctx context.Context, c *Caller, email string, role model.Role) (*model.Member, error) {
	if err := c.require("createWorkspaceMember"); err != nil {
		return nil, err
	}
	email = strings.TrimSpace(strings.ToLower(email))
	if !model.ValidEmail(email) {
		return nil, model.Invalid("email: %q is not an e-mail address", email)
	}
	if err := checkRoleGrant(c, role); err != nil {
		return nil, err
	}
	var m *model.Member
	err := s.store.InTx(ctx, func(tx store.Store) error {
		acct, err := accountForEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		m = &model.Member{ID: model.NewID(), WorkspaceID: c.Workspace.ID, AccountID: acct.ID, Email: acct.Email,
			DisplayName: acct.DisplayName, ProfilePicture: acct.ProfilePicture, Role: role, CreatedAt: model.Now()}
		if err := tx.Members().Create(ctx, m); err != nil {
			if model.TypeOf(err) == model.ErrAlreadyExists {
				return model.Conflict("%s is already a member of this workspace", email)
			}
			return err
		}
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditAddMember, m.ID, email, string(role))
	})
	return m, err
}

func checkRoleGrant(c *Caller, role model.Role) error {
	if !role.Valid() {
		return model.Invalid("role: must be one of viewer, billing, developer, manager, administrator, owner")
	}
	if role == model.RoleOwner && c.Member.Role != model.RoleOwner {
		return model.Forbidden("only an owner can make another member owner")
	}
	return nil
}

// Update changes a member's role. The last owner cannot be demoted,
// and only owners can change an owner.
func (s *Members) Update(ctx context.Context, c *Caller, id string, role *model.Role) (*model.Member, error) {
	if err := c.require("updateWorkspaceMember"); err != nil {
		return nil, err
	}
	var m *model.Member
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if m, err = tx.Members().Get(ctx, c.Workspace.ID, id); err != nil {
			return err
		}
		if role == nil || *role == m.Role {
			return nil
		}
		if err := checkRoleGrant(c, *role); err != nil {
			return err
		}
		if err := checkOwnerChange(ctx, tx, c, m); err != nil {
			return err
		}
		if err := tx.Members().UpdateRole(ctx, c.Workspace.ID, id, *role); err != nil {
			return err
		}
		m.Role = *role
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditUpdateMember, m.ID, m.Email, string(*role))
	})
	return m, err
}

// checkOwnerChange guards changes to an owner's membership: only owners may
// make them, and a workspace always keeps one owner.
func checkOwnerChange(ctx context.Context, tx store.Store, c *Caller, m *model.Member) error {
	if m.Role != model.RoleOwner {
		return nil
	}
	if c.Member.Role != model.RoleOwner {
		return model.Forbidden("only an owner can change or remove an owner")
	}
	n, err := tx.Members().CountRole(ctx, c.Workspace.ID, model.RoleOwner)
	if err != nil {
		return err
	}
	if n <= 1 {
		return model.Invalid("a workspace must keep at least one owner")
	}
	return nil
}

// Remove removes a member from the workspace.
func (s *Members) Remove(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteWorkspaceMember"); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		m, err := tx.Members().Get(ctx, c.Workspace.ID, id)
		if err != nil {
			return err
		}
		if err := checkOwnerChange(ctx, tx, c, m); err != nil {
			return err
		}
		if err := tx.Members().Delete(ctx, c.Workspace.ID, id); err != nil {
			return err
		}
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditRemoveMember, m.ID, m.Email, "")
	})
}
