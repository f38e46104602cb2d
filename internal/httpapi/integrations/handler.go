// Package integrations serves the Admin API's integration operations
// (/v1/admin/integrations..., /v1/admin/hub/integrations...) with the
// shapes @botpress/client 1.45.0 expects, and the Webhook interface
// ({public-url}/{webhookId}[/...], webhook.go), over the use cases of
// internal/integrations.
package integrations

import (
	"net/http"
	"strconv"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/integrations"
	"github.com/parley-bots/parley/internal/model"
)

// BodyLimit is the Administration interface's payload limit (an
// integration's bundle comes in createIntegration's body).
const BodyLimit = 50 << 20

// Deps are what the integration operations are served by.
type Deps struct {
	Accounts     *administration.Accounts
	Integrations *integrations.API
}

// Handler serves the Admin API's integration operations.
type Handler struct {
	accounts *administration.Accounts
	api      *integrations.API
	mux      *httpx.Mux
}

// Patterns are where app.start mounts NewHandler's handler (more specific
// than the Admin API's /v1/admin/).
var Patterns = []string{"/v1/admin/integrations", "/v1/admin/integrations/", "/v1/admin/hub/"}

// HostedOnly are the integration operations of @botpress/client 1.45.0
// that only make sense on Botpress's hosted service under this handler's
// paths; they answer 405 MethodNotFound (docs/admin-api.md). The
// shareable-id operations and unlinkSandboxedConversations live under
// /v1/admin/bots and are answered by the Admin API's handler (hosted.go).
var HostedOnly = []struct{ Operation, Method, Path string }{
	{"requestIntegrationVerification", "POST", "/v1/admin/integrations/request-verification"},
}

// NewHandler returns the handler of the integration operations.
func NewHandler(d Deps) http.Handler {
	h := &Handler{accounts: d.Accounts, api: d.Integrations, mux: httpx.NewMux()}
	m := h.mux
	const p = "/v1/admin"
	m.Handle("POST "+p+"/integrations", h.member(h.create))
	m.Handle("POST "+p+"/integrations/validate", h.member(h.validateCreate))
	m.Handle("GET "+p+"/integrations", h.member(h.list))
	m.Handle("GET "+p+"/integrations/iaks", h.member(h.listKeys))
	m.Handle("POST "+p+"/integrations/iaks", h.member(h.createKey))
	m.Handle("DELETE "+p+"/integrations/iaks/{id}", h.member(h.deleteKey))
	m.Handle("GET "+p+"/integrations/{id}", h.member(h.get))
	m.Handle("PUT "+p+"/integrations/{id}", h.member(h.update))
	m.Handle("PUT "+p+"/integrations/{id}/validate", h.member(h.validateUpdate))
	m.Handle("DELETE "+p+"/integrations/{id}", h.member(h.delete))
	m.Handle("GET "+p+"/integrations/{id}/logs", h.member(h.logs))
	m.Handle("POST "+p+"/integrations/{id}/signing-secrets/rotate", h.member(h.rotate))
	m.Handle("GET "+p+"/integrations/{name}/{version}", h.member(h.getByName))
	m.Handle("GET "+p+"/hub/integrations", h.account(h.listPublic))
	m.Handle("GET "+p+"/hub/integrations/{id}", h.account(h.getPublicByID))
	m.Handle("GET "+p+"/hub/integrations/{name}/{version}", h.account(h.getPublic))
	for _, o := range HostedOnly {
		m.Handle(o.Method+" "+o.Path, Hosted(o.Operation))
	}
	m.HandleFunc(p+"/", httpx.NoRoute)
	return httpx.CORS(httpx.LimitBody(BodyLimit, h.mux))
}

// Hosted answers an operation of Botpress's hosted service: 405.
func Hosted(op string) http.Handler {
	return httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		return model.Errorf(model.ErrMethodNotFound, "%s is an operation of Botpress's hosted service (verification, sharing, sandboxes); Parley does not serve it", op)
	})
}

type (
	memberHandler  func(w http.ResponseWriter, r *http.Request, m integrations.Member) error
	accountHandler func(w http.ResponseWriter, r *http.Request) error
)

// account authenticates the bearer token (the hub is open to any account).
func (h *Handler) account(fn accountHandler) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := h.accounts.Authenticate(r.Context(), httpx.BearerToken(r)); err != nil {
			return err
		}
		return fn(w, r)
	}
}

// member authenticates and resolves the x-workspace-id header.
func (h *Handler) member(fn memberHandler) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.accounts.Authenticate(r.Context(), httpx.BearerToken(r))
		if err != nil {
			return err
		}
		c, err := h.accounts.InWorkspace(r.Context(), p, r.Header.Get("x-workspace-id"))
		if err != nil {
			return err
		}
		return fn(w, r, integrations.Member{WorkspaceID: c.Workspace.ID, AccountID: c.Account.ID, Role: c.Member.Role})
	}
}

func ok(w http.ResponseWriter, v any) error { return httpx.JSON(w, http.StatusOK, v) }

func meta(next string) map[string]any {
	if next == "" {
		return map[string]any{}
	}
	return map[string]any{"nextToken": next}
}

func (h *Handler) definition(r *http.Request) (integrations.Definition, error) {
	var in map[string]any
	if err := httpx.Decode(r, &in, false); err != nil {
		return nil, err
	}
	return integrations.Definition(in), nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	in, err := h.definition(r)
	if err != nil {
		return err
	}
	d, err := h.api.Definitions.Create(r.Context(), m, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"integration": render(d)})
}

func (h *Handler) validateCreate(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	in, err := h.definition(r)
	if err != nil {
		return err
	}
	if err := h.api.Definitions.ValidateCreate(r.Context(), m, in); err != nil {
		return err
	}
	return ok(w, struct{}{})
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	d, err := h.api.Definitions.Get(r.Context(), m, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"integration": render(d)})
}

func (h *Handler) getByName(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	d, err := h.api.Definitions.GetByName(r.Context(), m, r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"integration": render(d)})
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	in, err := h.definition(r)
	if err != nil {
		return err
	}
	d, err := h.api.Definitions.Update(r.Context(), m, r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"integration": render(d)})
}

func (h *Handler) validateUpdate(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	in, err := h.definition(r)
	if err != nil {
		return err
	}
	if err := h.api.Definitions.ValidateUpdate(r.Context(), m, r.PathValue("id"), in); err != nil {
		return err
	}
	return ok(w, struct{}{})
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	if err := h.api.Definitions.Delete(r.Context(), m, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, struct{}{})
}

func listQuery(r *http.Request) (integrations.ListQuery, error) {
	q := r.URL.Query()
	lq := integrations.ListQuery{NextToken: q.Get("nextToken"), Name: q.Get("name"), Version: q.Get("version"),
		InstalledByBotID: q.Get("installedByBotId"), Search: q.Get("search"), Visibility: q.Get("visibility")}
	for _, k := range []string{"pageSize", "limit"} {
		if s := q.Get(k); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 100 {
				return lq, model.Errorf(model.ErrInvalidQuery, "%s: must be an integer from 1 to 100", k)
			}
			lq.PageSize = n
		}
	}
	if s := q.Get("dev"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return lq, model.Errorf(model.ErrInvalidQuery, "dev: must be true or false")
		}
		lq.Dev = &b
	}
	return lq, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	q, err := listQuery(r)
	if err != nil {
		return err
	}
	ds, next, err := h.api.Definitions.List(r.Context(), m, q)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ds))
	for i, d := range ds {
		out[i] = renderSummary(d)
	}
	return ok(w, map[string]any{"integrations": out, "meta": meta(next)})
}

func (h *Handler) listPublic(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r)
	if err != nil {
		return err
	}
	ds, next, err := h.api.Definitions.ListPublic(r.Context(), q)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ds))
	for i, d := range ds {
		s := renderSummary(d)
		s["ownerWorkspace"] = map[string]any{"id": d.WorkspaceID, "handle": nil, "name": ""}
		s["meta"] = map[string]any{"installs": 0, "views": 0}
		out[i] = s
	}
	return ok(w, map[string]any{"integrations": out, "meta": meta(next)})
}

func (h *Handler) getPublic(w http.ResponseWriter, r *http.Request) error {
	d, err := h.api.Definitions.GetPublic(r.Context(), r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"integration": renderPublic(d)})
}

func (h *Handler) getPublicByID(w http.ResponseWriter, r *http.Request) error {
	d, err := h.api.Definitions.GetPublicByID(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"integration": renderPublic(d)})
}

func (h *Handler) logs(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	q := r.URL.Query()
	ls, next, err := h.api.Definitions.Logs(r.Context(), m, r.PathValue("id"), integrations.LogsQuery{
		TimeStart: q.Get("timeStart"), TimeEnd: q.Get("timeEnd"), Level: q.Get("level"), UserID: q.Get("userId"),
		ConversationID: q.Get("conversationId"), MessageContains: q.Get("messageContains"), NextToken: q.Get("nextToken")})
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ls))
	for i, l := range ls {
		e := map[string]any{"timestamp": model.FormatTime(l.Time), "level": l.Level, "message": l.Message}
		if l.UserID != "" {
			e["userId"] = l.UserID
		}
		if l.ConversationID != "" {
			e["conversationId"] = l.ConversationID
		}
		out[i] = e
	}
	res := map[string]any{"logs": out}
	if next != "" {
		res["nextToken"] = next
	}
	return ok(w, res)
}

func (h *Handler) rotate(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	secret, err := h.api.Definitions.RotateSigningSecret(r.Context(), m, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"newSigningSecret": secret})
}

type keyJSON struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
	Note      string `json:"note"`
	Value     string `json:"value,omitempty"`
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	ts, err := h.api.Keys.List(r.Context(), m, r.URL.Query().Get("integrationId"))
	if err != nil {
		return err
	}
	out := make([]keyJSON, len(ts))
	for i, t := range ts {
		out[i] = keyJSON{ID: t.ID, CreatedAt: model.FormatTime(t.CreatedAt), Note: t.Note}
	}
	return ok(w, map[string]any{"iaks": out})
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	var in struct {
		IntegrationID string `json:"integrationId"`
		Note          string `json:"note"`
	}
	if err := httpx.Decode(r, &in, false); err != nil {
		return err
	}
	t, value, err := h.api.Keys.Create(r.Context(), m, in.IntegrationID, in.Note)
	if err != nil {
		return err
	}
	return ok(w, keyJSON{ID: t.ID, CreatedAt: model.FormatTime(t.CreatedAt), Note: t.Note, Value: value})
}

func (h *Handler) deleteKey(w http.ResponseWriter, r *http.Request, m integrations.Member) error {
	if err := h.api.Keys.Delete(r.Context(), m, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, struct{}{})
}
