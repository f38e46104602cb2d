package admin

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/wire"
)

// Support teams' operations (issue 19): getBotAnalytics in
// @botpress/client 1.45.0's shape, and Parley's own handoff and analytics
// series operations (documented in docs/dashboard.md), with the Admin API's
// credentials, pagination and error body.

// supportOps serves them, apart from Handler so that it stays small.
type supportOps struct{ support *administration.Support }

func (h *Handler) supportRoutes() {
	m, s := h.mux, supportOps{h.support}
	const p = "/v1/admin/bots/{id}"
	m.Handle("GET "+p+"/analytics", h.workspace(s.getBotAnalytics))
	m.Handle("GET "+p+"/analytics/series", h.workspace(s.getAnalyticsSeries))
	m.Handle("GET "+p+"/handoffs", h.workspace(s.listHandoffs))
	m.Handle("GET "+p+"/conversations/{conversationId}/handoff", h.workspace(s.getHandoff))
	m.Handle("POST "+p+"/conversations/{conversationId}/handoff", h.workspace(s.takeOver))
	m.Handle("POST "+p+"/conversations/{conversationId}/handoff/messages", h.workspace(s.replyAsAgent))
	m.Handle("DELETE "+p+"/conversations/{conversationId}/handoff", h.workspace(s.handBack))
}

type handoffJSON struct {
	ConversationID string  `json:"conversationId"`
	Status         string  `json:"status"`
	Reason         string  `json:"reason"`
	RequestedBy    string  `json:"requestedBy"`
	RequestedAt    string  `json:"requestedAt"`
	WaitingMs      int64   `json:"waitingMs"`
	TakenAt        *string `json:"takenAt"`
	Agent          *struct {
		AccountID string `json:"accountId"`
		UserID    string `json:"userId"`
		Name      string `json:"name"`
	} `json:"agent"`
}

// renderHandoff: waitingMs is how long the conversation has waited for an
// operator (until now, or until it was taken over).
func renderHandoff(x *model.Handoff, now time.Time) handoffJSON {
	out := handoffJSON{ConversationID: x.ConversationID, Status: x.Status, Reason: x.Reason, RequestedBy: x.RequestedBy,
		RequestedAt: model.FormatTime(x.RequestedAt)}
	until := now
	if !x.TakenAt.IsZero() {
		until = x.TakenAt
		t := model.FormatTime(x.TakenAt)
		out.TakenAt = &t
		out.Agent = &struct {
			AccountID string `json:"accountId"`
			UserID    string `json:"userId"`
			Name      string `json:"name"`
		}{x.AgentAccountID, x.AgentUserID, x.AgentName}
	}
	out.WaitingMs = max(until.Sub(x.RequestedAt).Milliseconds(), 0)
	return out
}

// listHandoffs is GET /v1/admin/bots/{id}/handoffs[?status=waiting|active].
func (h supportOps) listHandoffs(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	pg, err := page(r)
	if err != nil {
		return err
	}
	hs, next, err := h.support.ListHandoffs(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("status"), pg)
	if err != nil {
		return err
	}
	now := model.Now()
	out := make([]handoffJSON, 0, len(hs))
	for _, x := range hs {
		out = append(out, renderHandoff(x, now))
	}
	return ok(w, map[string]any{"handoffs": out, "meta": meta(next)})
}

func (h supportOps) getHandoff(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	x, err := h.support.GetHandoff(r.Context(), c, r.PathValue("id"), r.PathValue("conversationId"))
	if err != nil {
		return err
	}
	if x == nil {
		return ok(w, map[string]any{"handoff": nil}) // the bot answers it
	}
	return ok(w, map[string]any{"handoff": renderHandoff(x, model.Now())})
}

func (h supportOps) takeOver(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in struct {
		Reason string `json:"reason"`
	}
	if err := httpx.Decode(r, &in, true); err != nil {
		return err
	}
	x, err := h.support.TakeOver(r.Context(), c, r.PathValue("id"), r.PathValue("conversationId"), in.Reason)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"handoff": renderHandoff(x, model.Now())})
}

func (h supportOps) replyAsAgent(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	var in struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := httpx.Decode(r, &in, false); err != nil {
		return err
	}
	if len(in.Payload) == 0 {
		return model.Invalid("payload: required")
	}
	m, err := h.support.Reply(r.Context(), c, r.PathValue("id"), r.PathValue("conversationId"), in.Payload)
	if err != nil {
		return err
	}
	return httpx.JSON(w, http.StatusCreated, map[string]any{"message": wire.NewMessage(m)})
}

func (h supportOps) handBack(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	if err := h.support.HandBack(r.Context(), c, r.PathValue("id"), r.PathValue("conversationId")); err != nil {
		return err
	}
	return ok(w, map[string]any{})
}

// dateRange reads startDate and endDate (ISO 8601), both required.
func dateRange(r *http.Request) (from, to time.Time, err error) {
	q := r.URL.Query()
	for _, x := range []struct {
		name string
		t    *time.Time
	}{{"startDate", &from}, {"endDate", &to}} {
		v := q.Get(x.name)
		if v == "" {
			return from, to, model.Errorf(model.ErrInvalidQuery, "%s: required (an ISO 8601 date)", x.name)
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, v); err != nil {
				return from, to, model.Errorf(model.ErrInvalidQuery, "%s: not an ISO 8601 date: %q", x.name, v)
			}
		}
		*x.t = t
	}
	return from, to, nil
}

// getBotAnalytics is GET /v1/admin/bots/{id}/analytics: one record per
// UTC day of [startDate, endDate], in @botpress/client 1.45.0's shape.
// Parley has no LLM calls of its own: llm figures are zero.
func (h supportOps) getBotAnalytics(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	from, to, err := dateRange(r)
	if err != nil {
		return err
	}
	pts, err := h.support.Analytics(r.Context(), c, r.PathValue("id"), from, to, administration.Daily)
	if err != nil {
		return err
	}
	zero := map[string]float64{"mean": 0, "sd": 0, "min": 0, "max": 0}
	records := make([]map[string]any, 0, len(pts))
	for _, p := range pts {
		custom := map[string]int64{}
		var events int64
		for k, v := range p.CustomEvents {
			custom[k] = v
			events += v
		}
		records = append(records, map[string]any{
			"startDateTimeUtc": model.FormatTime(p.Start),
			"endDateTimeUtc":   model.FormatTime(p.End.Add(-time.Millisecond)),
			"returningUsers":   p.ReturningUsers,
			"newUsers":         p.NewUsers,
			"sessions":         p.Conversations,
			"messages":         p.MessagesIn,
			"userMessages":     p.MessagesIn,
			"botMessages":      p.MessagesOut + p.AgentMessages,
			"events":           events,
			"eventTypes":       map[string]int64{},
			"customEvents":     custom,
			"llm": map[string]any{"calls": 0, "errors": 0, "inputTokens": 0, "outputTokens": 0,
				"latency": zero, "tokensPerSecond": zero,
				"cost": map[string]float64{"sum": 0, "mean": 0, "sd": 0, "min": 0, "max": 0}},
		})
	}
	return ok(w, map[string]any{"records": records})
}

// getAnalyticsSeries is Parley's GET /v1/admin/bots/{id}/analytics/series
// ?startDate&endDate&interval=hour|day: every period of the range with
// messages in and out, users, conversations, turns, turn failures and
// turn-time percentiles.
func (h supportOps) getAnalyticsSeries(w http.ResponseWriter, r *http.Request, c *administration.Caller) error {
	from, to, err := dateRange(r)
	if err != nil {
		return err
	}
	interval := administration.Interval(r.URL.Query().Get("interval"))
	if interval == "" {
		interval = administration.Daily
	}
	pts, err := h.support.Analytics(r.Context(), c, r.PathValue("id"), from, to, interval)
	if err != nil {
		return err
	}
	records := make([]map[string]any, 0, len(pts))
	for _, p := range pts {
		records = append(records, map[string]any{
			"startDateTimeUtc": model.FormatTime(p.Start),
			"endDateTimeUtc":   model.FormatTime(p.End.Add(-time.Millisecond)),
			"messagesIn":       p.MessagesIn,
			"messagesOut":      p.MessagesOut,
			"agentMessages":    p.AgentMessages,
			"users":            p.ActiveUsers,
			"newUsers":         p.NewUsers,
			"returningUsers":   p.ReturningUsers,
			"conversations":    p.Conversations,
			"newConversations": p.NewConversations,
			"turns":            p.Turns,
			"turnFailures":     p.TurnFailures,
			"turnTimeP50Ms":    p.TurnP50.Milliseconds(),
			"turnTimeP95Ms":    p.TurnP95.Milliseconds(),
		})
	}
	return ok(w, map[string]any{"interval": interval, "records": records})
}
