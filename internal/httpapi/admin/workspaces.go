package admin

import (
	"net/http"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
)

// workspaceOps serves the workspaces and their members, apart from
// Handler so that it stays small.
type workspaceOps struct {
	workspaces *administration.Workspaces
	members    *administration.Members
}

// --- workspaces ---

func (h workspaceOps) listWorkspaces(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ws, next, err := h.workspaces.List(r.Context(), p, r.URL.Query().Get("handle"), pg)
	if err != nil {
		return err
	}
	out := make([]workspaceJSON, 0, len(ws))
	for _, x := range ws {
		out = append(out, renderWorkspace(x))
	}
	return ok(w, map[string]any{"workspaces": out, "meta": meta(next)})
}

func (h workspaceOps) createWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	var in struct {
		Name           *string `json:"name"`
		BillingVersion *string `json:"billingVersion"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	if in.Name == nil {
		return model.Invalid("name: required")
	}
	if in.BillingVersion != nil && *in.BillingVersion != "v4" {
		return model.Invalid("billingVersion: only \"v4\" is accepted")
	}
	ws, err := h.workspaces.Create(r.Context(), p, *in.Name)
	if err != nil {
		return err
	}
	return ok(w, renderWorkspace(ws))
}

func (h workspaceOps) getWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	ws, err := h.workspaces.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, renderWorkspace(ws))
}

func (h workspaceOps) updateWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	var in administration.WorkspacePatch
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	ws, err := h.workspaces.Update(r.Context(), p, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, renderWorkspace(ws))
}

func (h workspaceOps) deleteWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	if err := h.workspaces.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h workspaceOps) auditRecords(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	recs, next, err := h.workspaces.AuditRecords(r.Context(), p, r.PathValue("id"), pg)
	if err != nil {
		return err
	}
	out := make([]auditJSON, 0, len(recs))
	for _, x := range recs {
		out = append(out, renderAudit(x))
	}
	return ok(w, map[string]any{"records": out, "meta": meta(next)})
}

// --- members ---

func (h workspaceOps) listMembers(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ms, next, err := h.members.List(r.Context(), c, pg)
	if err != nil {
		return err
	}
	out := make([]memberJSON, 0, len(ms))
	for _, m := range ms {
		out = append(out, renderMember(m))
	}
	return ok(w, map[string]any{"members": out, "meta": meta(next)})
}

func (h workspaceOps) getMe(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	return ok(w, renderMember(c.Member))
}

func (h workspaceOps) createMember(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in struct {
		Email     *string     `json:"email"`
		Role      *model.Role `json:"role"`
		SendEmail *bool       `json:"sendEmail"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	if in.Email == nil || in.Role == nil {
		return model.Invalid("email and role: required")
	}
	m, err := h.members.Add(r.Context(), c, *in.Email, *in.Role)
	if err != nil {
		return err
	}
	return ok(w, renderMember(m))
}

func (h workspaceOps) updateMember(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in struct {
		Role *model.Role `json:"role"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	m, err := h.members.Update(r.Context(), c, r.PathValue("id"), in.Role)
	if err != nil {
		return err
	}
	return ok(w, renderMember(m))
}

func (h workspaceOps) deleteMember(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.members.Remove(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}
