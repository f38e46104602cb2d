package admin

import (
	"net/http"
	"net/url"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// botOps serves the bots, their versions, logs, issues, keys, bot JSON and
// conversations, apart from Handler so that it stays small.
type botOps struct {
	bots      *administration.Bots
	publicURL string
}

// --- bots ---

func (h botOps) createBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) getBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	v, err := h.bots.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"bot": renderBot(v, h.publicURL, false)})
}

func (h botOps) updateBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) deleteBot(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.bots.Delete(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h botOps) listBots(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) botLogs(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) listVersions(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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
func (h botOps) getVersion(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	v, err := h.bots.GetVersion(r.Context(), c, r.PathValue("id"), r.PathValue("versionId"))
	if err != nil {
		return err
	}
	u := h.publicURL + "/v1/admin/bots/" + url.PathEscape(v.BotID) + "/versions/" + url.PathEscape(v.ID)
	return ok(w, map[string]any{"url": u, "version": renderVersion(v, true)})
}

func (h botOps) listIssues(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) getIssue(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	i, err := h.bots.GetIssue(r.Context(), c, r.PathValue("id"), r.PathValue("issueId"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"issue": renderIssue(i)})
}

func (h botOps) deleteIssue(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.bots.DeleteIssue(r.Context(), c, r.PathValue("id"), r.PathValue("issueId")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}

func (h botOps) listIssueEvents(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) listBotKeys(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) createBotKey(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
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

func (h botOps) deleteBotKey(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.bots.DeleteAPIKey(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	return ok(w, httpx.Empty)
}
