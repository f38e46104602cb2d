// Package admin serves the Admin API (/v1/admin) with the shapes
// @botpress/client 1.45.0 expects.
package admin

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// BodyLimit is the Administration interface's payload limit (docs/architecture.md, Limits).
const BodyLimit = 50 << 20

// Deps are the use cases the Admin API is served by.
type Deps struct {
	Accounts   *administration.Accounts
	Workspaces *administration.Workspaces
	Members    *administration.Members
	Bots       *administration.Bots
	// Support serves handoff and analytics (support.go).
	Support *administration.Support
	// PublicURL is the base of the URLs shown in responses (webhook URLs).
	PublicURL string
}

// Handler serves the Admin API.
type Handler struct {
	accounts   *administration.Accounts
	workspaces *administration.Workspaces
	members    *administration.Members
	bots       *administration.Bots
	support    *administration.Support
	publicURL  string
	mux        *httpx.Mux
}

// NewHandler returns the Admin API handler; it expects full paths
// (/v1/admin/...).
func NewHandler(d Deps) http.Handler {
	h := &Handler{accounts: d.Accounts, workspaces: d.Workspaces, members: d.Members, bots: d.Bots, support: d.Support,
		publicURL: strings.TrimRight(d.PublicURL, "/"), mux: httpx.NewMux()}
	h.routes()
	return httpx.CORS(httpx.LimitBody(BodyLimit, h.mux))
}

type (
	accountHandler   func(w http.ResponseWriter, r *http.Request, p *administration.Principal) error
	workspaceHandler func(w http.ResponseWriter, r *http.Request, c *administration.Caller) error
)

func (h *Handler) routes() {
	m := h.mux
	ws := workspaceOps{workspaces: h.workspaces, members: h.members}
	b := botOps{bots: h.bots, publicURL: h.publicURL}
	const p = "/v1/admin"
	m.Handle("GET "+p+"/account/me", h.account(h.getAccount))
	m.Handle("PUT "+p+"/account/me", h.account(h.updateAccount))
	m.Handle("GET "+p+"/account/pats", h.account(h.listPATs))
	m.Handle("POST "+p+"/account/pats", h.account(h.createPAT))
	m.Handle("DELETE "+p+"/account/pats/{id}", h.account(h.deletePAT))

	m.Handle("GET "+p+"/workspaces", h.account(ws.listWorkspaces))
	m.Handle("POST "+p+"/workspaces", h.account(ws.createWorkspace))
	m.Handle("GET "+p+"/workspaces/{id}", h.account(ws.getWorkspace))
	m.Handle("GET "+p+"/workspaces/public", h.account(ws.listPublicWorkspaces))
	m.Handle("GET "+p+"/workspaces/{id}/public", h.account(ws.getPublicWorkspace))
	m.Handle("PUT "+p+"/workspaces/handle-availability", h.account(ws.checkHandleAvailability))
	m.Handle("PUT "+p+"/workspaces/{id}", h.account(ws.updateWorkspace))
	m.Handle("DELETE "+p+"/workspaces/{id}", h.account(ws.deleteWorkspace))
	m.Handle("GET "+p+"/workspaces/{id}/audit-records", h.account(ws.auditRecords))

	m.Handle("GET "+p+"/workspace-members", h.workspace(ws.listMembers))
	m.Handle("GET "+p+"/workspace-members/me", h.workspace(ws.getMe))
	m.Handle("POST "+p+"/workspace-members", h.workspace(ws.createMember))
	m.Handle("PUT "+p+"/workspace-members/{id}", h.workspace(ws.updateMember))
	m.Handle("DELETE "+p+"/workspace-members/{id}", h.workspace(ws.deleteMember))

	m.Handle("POST "+p+"/bots", h.workspace(b.createBot))
	m.Handle("GET "+p+"/bots", h.workspace(b.listBots))
	m.Handle("GET "+p+"/bots/{id}", h.workspace(b.getBot))
	m.Handle("PUT "+p+"/bots/{id}", h.workspace(b.updateBot))
	m.Handle("DELETE "+p+"/bots/{id}", h.workspace(b.deleteBot))
	m.Handle("GET "+p+"/bots/{id}/logs", h.workspace(b.botLogs))
	m.Handle("GET "+p+"/bots/{id}/versions", h.workspace(b.listVersions))
	m.Handle("GET "+p+"/bots/{id}/versions/{versionId}", h.workspace(b.getVersion))
	m.Handle("POST "+p+"/bots/{id}/publish-from-bot-json", h.workspace(b.publishFromBotJSON))
	m.Handle("GET "+p+"/bots/{id}/bot-json", h.workspace(b.getBotJSON))
	m.Handle("GET "+p+"/bots/{id}/issues", h.workspace(b.listIssues))
	m.Handle("GET "+p+"/bots/{id}/issues/{issueId}", h.workspace(b.getIssue))
	m.Handle("DELETE "+p+"/bots/{id}/issues/{issueId}", h.workspace(b.deleteIssue))
	m.Handle("GET "+p+"/bots/{id}/issues/{issueId}/events", h.workspace(b.listIssueEvents))
	m.Handle("GET "+p+"/bots/baks", h.workspace(b.listBotKeys))
	m.Handle("POST "+p+"/bots/baks", h.workspace(b.createBotKey))
	m.Handle("DELETE "+p+"/bots/baks/{id}", h.workspace(b.deleteBotKey))
	// Parley's own operations for the dashboard (docs/dashboard.md).
	m.Handle("GET "+p+"/bots/{id}/conversations", h.workspace(b.listBotConversations))
	m.Handle("GET "+p+"/bots/{id}/conversations/{conversationId}/messages", h.workspace(b.listConversationMessages))
	m.Handle("POST "+p+"/introspect", h.account(h.introspect))
	h.hostedRoutes()
	h.supportRoutes()
	m.HandleFunc(p+"/", httpx.NoRoute)
}

// account authenticates the bearer token.
func (h *Handler) account(fn accountHandler) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.accounts.Authenticate(r.Context(), httpx.BearerToken(r))
		if err != nil {
			return err
		}
		return fn(w, r, p)
	}
}

// workspace authenticates and resolves the x-workspace-id header.
func (h *Handler) workspace(fn workspaceHandler) httpx.Handler {
	return h.account(func(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
		c, err := h.accounts.InWorkspace(r.Context(), p, r.Header.Get("x-workspace-id"))
		if err != nil {
			return err
		}
		return fn(w, r, c)
	})
}

func ok(w http.ResponseWriter, v any) error { return httpx.JSON(w, http.StatusOK, v) }

// meta renders pagination: nextToken only when there is a next page.
func meta(next string) map[string]any {
	if next == "" {
		return map[string]any{}
	}
	return map[string]any{"nextToken": next}
}

// page reads nextToken and pageSize.
func page(r *http.Request) (store.Page, error) {
	q := r.URL.Query()
	p := store.Page{Token: q.Get("nextToken")}
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return p, model.Errorf(model.ErrInvalidQuery, "pageSize: must be an integer from 1 to 100")
		}
		p.Size = n
	}
	return p, nil
}

// dotted groups qs "allow dots" parameters: tags.env=prod → {env: prod}.
func dotted(q url.Values, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range q {
		if name, ok := strings.CutPrefix(k, prefix+"."); ok && len(v) > 0 {
			out[name] = v[len(v)-1]
		}
	}
	return out
}

// --- account ---

func (h *Handler) getAccount(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	return ok(w, map[string]any{"account": renderAccount(p.Account)})
}

func (h *Handler) updateAccount(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	var in struct {
		DisplayName    *string `json:"displayName"`
		ProfilePicture *string `json:"profilePicture"`
		Refresh        *bool   `json:"refresh"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	a, err := h.accounts.UpdateAccount(r.Context(), p, administration.AccountPatch{DisplayName: in.DisplayName, ProfilePicture: in.ProfilePicture})
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"account": renderAccount(a)})
}

func (h *Handler) listPATs(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	ts, err := h.accounts.ListPATs(r.Context(), p)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"pats": renderTokens(ts)})
}

func (h *Handler) createPAT(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	var in struct {
		Note *string `json:"note"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	if in.Note == nil {
		return model.Invalid("note: required")
	}
	t, secret, err := h.accounts.CreatePAT(r.Context(), p, *in.Note)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"pat": renderToken(t, secret)})
}

func (h *Handler) deletePAT(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	if err := h.accounts.DeletePAT(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h *Handler) introspect(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	var in struct {
		BotID string `json:"botId"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	b, err := h.accounts.Introspect(r.Context(), p, in.BotID)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"workspaceId": b.WorkspaceID, "botId": b.ID, "userId": p.Account.ID})
}
