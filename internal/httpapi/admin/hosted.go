package admin

import (
	"net/http"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
)

// hostedOnly are the operations of @botpress/client 1.45.0 that only make
// sense on Botpress's hosted service: billing, invoices, plans, usage and
// quotas, AI spend, integration sharing and sandboxes, the v4 migration
// (integration verification is answered by httpapi/integrations). They answer
// 405 MethodNotFound with the standard error body, naming the operation
// (docs/admin-api.md lists them). The /v2/billing and /v2/usage operations
// are HostedOnly.
var hostedOnly = []struct{ op, method, path string }{
	{"migrateWorkspaceToV4", "POST", "/workspaces/{id}/migrate-to-v4"},
	{"listWorkspaceInvoices", "GET", "/workspaces/{id}/billing/invoices"},
	{"getUpcomingInvoice", "GET", "/workspaces/{id}/billing/upcoming-invoice"},
	{"chargeWorkspaceUnpaidInvoices", "POST", "/workspaces/{id}/billing/invoices/charge-unpaid"},
	{"listWorkspaceUsages", "GET", "/workspaces/{id}/usages"},
	{"breakDownWorkspaceUsageByBot", "GET", "/workspaces/{id}/usages/by-bot"},
	{"getAllWorkspaceQuotaCompletion", "GET", "/workspaces/usages/quota-completion"},
	{"getWorkspaceQuota", "GET", "/workspaces/{id}/quota"},
	{"listWorkspaceQuotas", "GET", "/workspaces/{id}/quotas"},
	{"createIntegrationShareableId", "POST", "/bots/{botId}/integrations/{integrationId}/shareable-id"},
	{"getIntegrationShareableId", "GET", "/bots/{botId}/integrations/{integrationId}/shareable-id"},
	{"deleteIntegrationShareableId", "DELETE", "/bots/{botId}/integrations/{integrationId}/shareable-id"},
	{"unlinkSandboxedConversations", "DELETE", "/bots/{botId}/integrations/{integrationId}/sandboxed-conversations"},
	{"getUsage", "GET", "/usages/{id}"},
	{"getMultipleUsages", "GET", "/usages/multiple"},
	{"listUsageHistory", "GET", "/usages/{id}/history"},
	{"listUsageActivity", "GET", "/usages/{id}/activity"},
	{"listUsageActivityDaily", "GET", "/usages/{id}/daily-activity"},
	{"changeAISpendQuota", "PUT", "/quotas/ai-spend"},
}

func (h *Handler) hostedRoutes() {
	for _, o := range hostedOnly {
		h.mux.Handle(o.method+" /v1/admin"+o.path, hosted(o.op))
	}
}

func hosted(op string) http.Handler {
	return httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		return model.Errorf(model.ErrMethodNotFound, "%s is an operation of Botpress's hosted service (billing, usage, quotas, verification); Parley does not serve it", op)
	})
}

// HostedOnly answers Botpress's /v2/billing and /v2/usage operations:
// 405 MethodNotFound, Parley has no billing.
var HostedOnly http.Handler = httpx.CORS(httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
	return model.Errorf(model.ErrMethodNotFound, "%s %s is an operation of Botpress's hosted service (billing, usage); Parley does not serve it", r.Method, r.URL.Path)
}))

// ---- public workspaces and handles

type publicWorkspaceJSON struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
	About          string   `json:"about,omitempty"`
	ProfilePicture string   `json:"profilePicture,omitempty"`
	ContactEmail   string   `json:"contactEmail,omitempty"`
	Website        string   `json:"website,omitempty"`
	SocialAccounts []string `json:"socialAccounts"`
	Handle         string   `json:"handle,omitempty"`
}

func renderPublicWorkspace(w *model.Workspace) publicWorkspaceJSON {
	social := w.SocialAccounts
	if social == nil {
		social = []string{}
	}
	return publicWorkspaceJSON{ID: w.ID, Name: w.Name, CreatedAt: model.FormatTime(w.CreatedAt), UpdatedAt: model.FormatTime(w.UpdatedAt),
		About: w.About, ProfilePicture: w.ProfilePicture, ContactEmail: w.ContactEmail, Website: w.Website,
		SocialAccounts: social, Handle: w.Handle}
}

func (h workspaceOps) listPublicWorkspaces(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	ws, next, err := h.workspaces.ListPublic(r.Context(), p, pg)
	if err != nil {
		return err
	}
	out := make([]publicWorkspaceJSON, len(ws))
	for i, x := range ws {
		out[i] = renderPublicWorkspace(x)
	}
	return ok(w, map[string]any{"workspaces": out, "meta": meta(next)})
}

func (h workspaceOps) getPublicWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	ws, err := h.workspaces.GetPublic(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, renderPublicWorkspace(ws))
}

func (h workspaceOps) checkHandleAvailability(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	var in struct {
		Handle *string `json:"handle"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	if in.Handle == nil {
		return model.Invalid("handle: required")
	}
	available, err := h.workspaces.HandleAvailable(r.Context(), p, *in.Handle)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"available": available, "suggestions": []string{}})
}
