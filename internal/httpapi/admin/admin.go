// Package admin serves the Admin API (/v1/admin) with the shapes
// @botpress/client 1.45.0 expects.
package admin

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	const p = "/v1/admin"
	m.Handle("GET "+p+"/account/me", h.account(h.getAccount))
	m.Handle("PUT "+p+"/account/me", h.account(h.updateAccount))
	m.Handle("GET "+p+"/account/pats", h.account(h.listPATs))
	m.Handle("POST "+p+"/account/pats", h.account(h.createPAT))
	m.Handle("DELETE "+p+"/account/pats/{id}", h.account(h.deletePAT))

	m.Handle("GET "+p+"/workspaces", h.account(h.listWorkspaces))
	m.Handle("POST "+p+"/workspaces", h.account(h.createWorkspace))
	m.Handle("GET "+p+"/workspaces/{id}", h.account(h.getWorkspace))
	m.Handle("GET "+p+"/workspaces/public", h.account(h.listPublicWorkspaces))
	m.Handle("GET "+p+"/workspaces/{id}/public", h.account(h.getPublicWorkspace))
	m.Handle("PUT "+p+"/workspaces/handle-availability", h.account(h.checkHandleAvailability))
	m.Handle("PUT "+p+"/workspaces/{id}", h.account(h.updateWorkspace))
	m.Handle("DELETE "+p+"/workspaces/{id}", h.account(h.deleteWorkspace))
	m.Handle("GET "+p+"/workspaces/{id}/audit-records", h.account(h.auditRecords))

	m.Handle("GET "+p+"/workspace-members", h.workspace(h.listMembers))
	m.Handle("GET "+p+"/workspace-members/me", h.workspace(h.getMe))
	m.Handle("POST "+p+"/workspace-members", h.workspace(h.createMember))
	m.Handle("PUT "+p+"/workspace-members/{id}", h.workspace(h.updateMember))
	m.Handle("DELETE "+p+"/workspace-members/{id}", h.workspace(h.deleteMember))

	m.Handle("POST "+p+"/bots", h.workspace(h.createBot))
	m.Handle("GET "+p+"/bots", h.workspace(h.listBots))
	m.Handle("GET "+p+"/bots/{id}", h.workspace(h.getBot))
	m.Handle("PUT "+p+"/bots/{id}", h.workspace(h.updateBot))
	m.Handle("DELETE "+p+"/bots/{id}", h.workspace(h.deleteBot))
	m.Handle("GET "+p+"/bots/{id}/logs", h.workspace(h.botLogs))
	m.Handle("GET "+p+"/bots/{id}/versions", h.workspace(h.listVersions))
	m.Handle("GET "+p+"/bots/{id}/versions/{versionId}", h.workspace(h.getVersion))
	m.Handle("POST "+p+"/bots/{id}/publish-from-bot-json", h.workspace(h.publishFromBotJSON))
	m.Handle("GET "+p+"/bots/{id}/bot-json", h.workspace(h.getBotJSON))
	m.Handle("GET "+p+"/bots/{id}/issues", h.workspace(h.listIssues))
	m.Handle("GET "+p+"/bots/{id}/issues/{issueId}", h.workspace(h.getIssue))
	m.Handle("DELETE "+p+"/bots/{id}/issues/{issueId}", h.workspace(h.deleteIssue))
	m.Handle("GET "+p+"/bots/{id}/issues/{issueId}/events", h.workspace(h.listIssueEvents))
	m.Handle("GET "+p+"/bots/baks", h.workspace(h.listBotKeys))
	m.Handle("POST "+p+"/bots/baks", h.workspace(h.createBotKey))
	m.Handle("DELETE "+p+"/bots/baks/{id}", h.workspace(h.deleteBotKey))
	// Parley's own operations for the dashboard (docs/dashboard.md).
	m.Handle("GET "+p+"/bots/{id}/conversations", h.workspace(h.listBotConversations))
	m.Handle("GET "+p+"/bots/{id}/conversations/{conversationId}/messages", h.workspace(h.listConversationMessages))
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

// --- workspaces ---

func (h *Handler) listWorkspaces(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
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

func (h *Handler) createWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
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

func (h *Handler) getWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	ws, err := h.workspaces.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, renderWorkspace(ws))
}

func (h *Handler) updateWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
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

func (h *Handler) deleteWorkspace(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
	if err := h.workspaces.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h *Handler) auditRecords(w http.ResponseWriter, r *http.Request, p *administration.Principal) error {
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

func (h *Handler) listMembers(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h *Handler) getMe(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	return ok(w, renderMember(c.Member))
}

func (h *Handler) createMember(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h *Handler) updateMember(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h *Handler) deleteMember(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.members.Remove(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

// --- bots ---

func (h *Handler) createBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in administration.BotWrite
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	v, err := h.bots.Create(r.Context(), c, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"bot": renderBot(v, h.publicURL, true)})
}

func (h *Handler) getBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	v, err := h.bots.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"bot": renderBot(v, h.publicURL, false)})
}

func (h *Handler) updateBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in administration.BotWrite
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	v, err := h.bots.Update(r.Context(), c, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"bot": renderBot(v, h.publicURL, false)})
}

func (h *Handler) deleteBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.bots.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h *Handler) listBots(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := store.BotFilter{Dev: q.Get("dev") == "true", Tags: dotted(q, "tags"), SortField: q.Get("sortField")}
	switch f.SortField {
	case "", "createdAt", "updatedAt":
	default:
		return model.Errorf(model.ErrInvalidQuery, "sortField: must be createdAt or updatedAt")
	}
	switch q.Get("sortDirection") {
	case "", "desc":
	case "asc":
		f.Ascending = true
	default:
		return model.Errorf(model.ErrInvalidQuery, "sortDirection: must be asc or desc")
	}
	bots, next, err := h.bots.List(r.Context(), c, f, pg)
	if err != nil {
		return err
	}
	out := make([]botSummaryJSON, 0, len(bots))
	for _, b := range bots {
		out = append(out, renderBotSummary(b))
	}
	return ok(w, map[string]any{"bots": out, "meta": meta(next)})
}

func (h *Handler) botLogs(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	q := r.URL.Query()
	f := model.LogFilter{BotID: r.PathValue("id"), Level: q.Get("level"), UserID: q.Get("userId"),
		ConversationID: q.Get("conversationId"), WorkflowID: q.Get("workflowId"), Contains: q.Get("messageContains")}
	for name, dst := range map[string]*time.Time{"timeStart": &f.Since, "timeEnd": &f.Until} {
		if s := q.Get(name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return model.Errorf(model.ErrInvalidQuery, "%s: expected an ISO 8601 date-time", name)
			}
			*dst = t
		}
	}
	pg, err := page(r)
	if err != nil {
		return err
	}
	logs, next, err := h.bots.Logs(r.Context(), c, f, pg)
	if err != nil {
		return err
	}
	out := make([]logJSON, 0, len(logs))
	for _, l := range logs {
		out = append(out, renderLog(l))
	}
	body := map[string]any{"logs": out}
	if next != "" {
		body["nextToken"] = next
	}
	return ok(w, body)
}

func (h *Handler) listVersions(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	vs, err := h.bots.ListVersions(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(vs))
	for _, v := range vs {
		out = append(out, renderVersion(v, false))
	}
	return ok(w, map[string]any{"versions": out})
}

func renderVersion(v *model.BotVersion, withCode bool) map[string]any {
	out := map[string]any{"id": v.ID, "name": v.Name, "createdAt": model.FormatTime(v.CreatedAt)}
	if v.Description != "" {
		out["description"] = v.Description
	}
	if withCode {
		out["code"] = v.Code
		// Parley: the code was generated from bot JSON (a workflow bot).
		out["fromBotJson"] = v.BotJSON != ""
	}
	return out
}

// getVersion answers with the url the client type requires (this same
// resource) and, as a Parley extension, the version itself with its code.
func (h *Handler) getVersion(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	v, err := h.bots.GetVersion(r.Context(), c, r.PathValue("id"), r.PathValue("versionId"))
	if err != nil {
		return err
	}
	u := h.publicURL + "/v1/admin/bots/" + url.PathEscape(v.BotID) + "/versions/" + url.PathEscape(v.ID)
	return ok(w, map[string]any{"url": u, "version": renderVersion(v, true)})
}

func (h *Handler) listIssues(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	is, next, err := h.bots.ListIssues(r.Context(), c, r.PathValue("id"), pg)
	if err != nil {
		return err
	}
	out := make([]issueJSON, 0, len(is))
	for _, i := range is {
		out = append(out, renderIssue(i))
	}
	return ok(w, map[string]any{"issues": out, "meta": meta(next)})
}

func (h *Handler) getIssue(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	i, err := h.bots.GetIssue(r.Context(), c, r.PathValue("id"), r.PathValue("issueId"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"issue": renderIssue(i)})
}

func (h *Handler) deleteIssue(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.bots.DeleteIssue(r.Context(), c, r.PathValue("id"), r.PathValue("issueId")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h *Handler) listIssueEvents(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	evs, next, err := h.bots.ListIssueEvents(r.Context(), c, r.PathValue("id"), r.PathValue("issueId"), pg)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		out = append(out, map[string]any{"id": e.ID, "createdAt": model.FormatTime(e.CreatedAt), "data": renderIssueEventData(e.Data)})
	}
	return ok(w, map[string]any{"issueEvents": out, "meta": meta(next)})
}

func (h *Handler) listBotKeys(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	botID := r.URL.Query().Get("botId")
	if botID == "" {
		return model.Errorf(model.ErrInvalidQuery, "botId: required")
	}
	ts, err := h.bots.ListAPIKeys(r.Context(), c, botID)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"baks": renderTokens(ts)})
}

func (h *Handler) createBotKey(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in struct {
		BotID *string `json:"botId"`
		Note  string  `json:"note"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	if in.BotID == nil {
		return model.Invalid("botId: required")
	}
	t, secret, err := h.bots.CreateAPIKey(r.Context(), c, *in.BotID, in.Note)
	if err != nil {
		return err
	}
	return ok(w, renderToken(t, secret))
}

func (h *Handler) deleteBotKey(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.bots.DeleteAPIKey(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}
