package admin

import (
	"encoding/json"
	"sort"

	"github.com/google/uuid"

	"github.com/parley-bots/parley/internal/administration"
	"github.com/parley-bots/parley/internal/model"
)

// The wire shapes of the Admin API, exactly as @botpress/client 1.45.0
// types them (@botpress/client 1.45.0). Times use model.FormatTime.

type accountJSON struct {
	ID             string `json:"id"`
	Email          string `json:"email"`
	DisplayName    string `json:"displayName,omitempty"`
	EmailVerified  bool   `json:"emailVerified"`
	ProfilePicture string `json:"profilePicture,omitempty"`
	CreatedAt      string `json:"createdAt"`
}

func renderAccount(a *model.Account) accountJSON {
	return accountJSON{ID: a.ID, Email: a.Email, DisplayName: a.DisplayName, EmailVerified: a.EmailVerified,
		ProfilePicture: a.ProfilePicture, CreatedAt: model.FormatTime(a.CreatedAt)}
}

type tokenJSON struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
	Note      string `json:"note"`
	Value     string `json:"value,omitempty"`
}

func renderToken(t *model.Token, secret string) tokenJSON {
	return tokenJSON{ID: t.ID, CreatedAt: model.FormatTime(t.CreatedAt), Note: t.Note, Value: secret}
}

func renderTokens(ts []*model.Token) []tokenJSON {
	out := make([]tokenJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, renderToken(t, ""))
	}
	return out
}

type workspaceJSON struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	OwnerID        string   `json:"ownerId"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
	BotCount       int      `json:"botCount"`
	BillingVersion string   `json:"billingVersion"`
	Plan           string   `json:"plan"`
	Blocked        bool     `json:"blocked"`
	SpendingLimit  float64  `json:"spendingLimit"`
	About          string   `json:"about"`
	ProfilePicture string   `json:"profilePicture"`
	ContactEmail   string   `json:"contactEmail"`
	Website        string   `json:"website"`
	SocialAccounts []string `json:"socialAccounts"`
	IsPublic       bool     `json:"isPublic"`
	Handle         string   `json:"handle,omitempty"`
	ActiveTrialID  *string  `json:"activeTrialId"`
}

func renderWorkspace(w *model.Workspace) workspaceJSON {
	social := w.SocialAccounts
	if social == nil {
		social = []string{}
	}
	return workspaceJSON{ID: w.ID, Name: w.Name, OwnerID: w.OwnerID, CreatedAt: model.FormatTime(w.CreatedAt),
		UpdatedAt: model.FormatTime(w.UpdatedAt), BotCount: w.BotCount, BillingVersion: "v4", Plan: "community",
		SpendingLimit: w.SpendingLimit, About: w.About, ProfilePicture: w.ProfilePicture, ContactEmail: w.ContactEmail,
		Website: w.Website, SocialAccounts: social, IsPublic: w.IsPublic, Handle: w.Handle}
}

type memberJSON struct {
	ID             string `json:"id"`
	UserID         string `json:"userId,omitempty"`
	Email          string `json:"email"`
	CreatedAt      string `json:"createdAt"`
	Role           string `json:"role"`
	ProfilePicture string `json:"profilePicture,omitempty"`
	DisplayName    string `json:"displayName,omitempty"`
}

func renderMember(m *model.Member) memberJSON {
	return memberJSON{ID: m.ID, UserID: m.AccountID, Email: m.Email, CreatedAt: model.FormatTime(m.CreatedAt),
		Role: string(m.Role), ProfilePicture: m.ProfilePicture, DisplayName: m.DisplayName}
}

type botSummaryJSON struct {
	ID         string            `json:"id"`
	CreatedAt  string            `json:"createdAt"`
	UpdatedAt  string            `json:"updatedAt"`
	Name       string            `json:"name"`
	DeployedAt string            `json:"deployedAt,omitempty"`
	Tags       map[string]string `json:"tags"`
	Type       string            `json:"type"`
}

func renderBotSummary(b *model.Bot) botSummaryJSON {
	return botSummaryJSON{ID: b.ID, CreatedAt: model.FormatTime(b.CreatedAt), UpdatedAt: model.FormatTime(b.UpdatedAt),
		Name: b.Name, DeployedAt: optTime(b), Tags: nonNilTags(b.Tags), Type: b.Type}
}

func optTime(b *model.Bot) string {
	if b.DeployedAt.IsZero() {
		return ""
	}
	return model.FormatTime(b.DeployedAt)
}

func nonNilTags(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return t
}

// renderBot renders the full Bot object (27 fields). The signing secret is
// shown only when showSecret is set (the createBot answer).
func renderBot(v *administration.BotView, publicURL string, showSecret bool) map[string]any {
	b := v.Bot
	out := map[string]any{
		"id":              b.ID,
		"createdAt":       model.FormatTime(b.CreatedAt),
		"updatedAt":       model.FormatTime(b.UpdatedAt),
		"signingSecret":   "",
		"integrations":    renderIntegrations(v.Integrations, v.Definitions, publicURL),
		"plugins":         specMap(b.Spec, "plugins"),
		"user":            tagDefs(b.Spec, "user"),
		"conversation":    tagDefs(b.Spec, "conversation"),
		"message":         tagDefs(b.Spec, "message"),
		"states":          specMap(b.Spec, "states"),
		"configuration":   configuration(b.Spec),
		"events":          specMap(b.Spec, "events"),
		"recurringEvents": specMap(b.Spec, "recurringEvents"),
		"subscriptions":   subscriptions(b.Spec),
		"actions":         specMap(b.Spec, "actions"),
		"tags":            nonNilTags(b.Tags),
		"name":            b.Name,
		"dev":             b.Dev,
		"secrets":         secretNames(b.Secrets),
		"alwaysAlive":     b.AlwaysAlive,
		"status":          "active",
		"medias":          medias(b.Spec),
		"type":            b.Type,
	}
	if showSecret {
		out["signingSecret"] = b.SigningSecret
	}
	if b.MaxExecutionTime > 0 {
		out["maxExecutionTime"] = b.MaxExecutionTime
	}
	if b.Description != "" {
		out["description"] = b.Description
	}
	if d := optTime(b); d != "" {
		out["deployedAt"] = d
	}
	if b.CreatedBy != "" {
		out["createdBy"] = b.CreatedBy
	}
	return out
}

func specMap(spec map[string]any, name string) map[string]any {
	if m, ok := spec[name].(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func tagDefs(spec map[string]any, name string) map[string]any {
	obj := specMap(spec, name)
	tags, _ := obj["tags"].(map[string]any)
	if tags == nil {
		tags = map[string]any{}
	}
	return map[string]any{"tags": tags}
}

func configuration(spec map[string]any) map[string]any {
	cfg := specMap(spec, "configuration")
	data, _ := cfg["data"].(map[string]any)
	schema, _ := cfg["schema"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	if schema == nil {
		schema = map[string]any{}
	}
	return map[string]any{"data": data, "schema": schema}
}

func subscriptions(spec map[string]any) map[string]any {
	sub := specMap(spec, "subscriptions")
	return map[string]any{"events": sub["events"]}
}

func medias(spec map[string]any) []any {
	if m, ok := spec["medias"].([]any); ok {
		return m
	}
	return []any{}
}

func secretNames(secrets map[string]string) []string {
	names := make([]string, 0, len(secrets))
	for k := range secrets {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// integrationMeta describes the integrations Parley knows.
var integrationMeta = map[string]struct{ title, description, path string }{
	model.IntegrationChat:    {"Chat", "The Chat API for custom channels, served by Parley", "/chat/"},
	model.IntegrationWebchat: {"Webchat", "The webchat widget and hosted chat page, served by Parley", "/webchat/"},
	model.IntegrationWebhook: {"Webhook", "Any JSON POSTed to the webhook URL becomes a webhook:event of the bot, served by Parley", "/"},
}

// integrationNamespace makes stable definition ids from integration names.
var integrationNamespace = uuid.MustParse("6f1b2c4e-7a0d-4e55-9a61-3c2f5d8e9b10")

func renderIntegrations(ins []*model.Integration, defs map[string]*model.IntegrationDef, publicURL string) map[string]any {
	out := map[string]any{}
	for _, in := range ins {
		meta, known := integrationMeta[in.Name]
		if !known {
			meta.title, meta.description, meta.path = in.Name, "Custom integration", "/webhooks/"
		}
		name, version, id := in.Name, "1.0.0", uuid.NewSHA1(integrationNamespace, []byte(in.Name)).String()
		public, visibility, icon := known, "public", ""
		if d := defs[in.IntegrationID]; d != nil {
			// A published integration: served at the Webhook interface.
			name, version, id, meta.path = d.Name, d.Version, d.ID, "/"
			meta.title, meta.description = d.Title, d.Description
			if meta.title == "" {
				meta.title = d.Name
			}
			public, visibility, icon = d.Public, d.Visibility, d.Icon
		}
		cfg := in.Configuration
		if cfg == nil {
			cfg = map[string]any{}
		}
		status := in.Status
		if status == "" {
			status = model.IntegrationRegistered
		}
		var reason, cfgType any
		if in.StatusReason != "" {
			reason = in.StatusReason
		}
		if in.ConfigurationType != "" {
			cfgType = in.ConfigurationType
		}
		disabled := in.DisabledChannels
		if disabled == nil {
			disabled = []string{}
		}
		entry := map[string]any{
			"enabled":            in.Enabled,
			"name":               name,
			"version":            version,
			"webhookUrl":         publicURL + meta.path + in.WebhookID,
			"webhookId":          in.WebhookID,
			"configurationType":  cfgType,
			"configuration":      cfg,
			"status":             status,
			"statusReason":       reason,
			"disabledChannels":   disabled,
			"id":                 id,
			"createdAt":          model.FormatTime(in.CreatedAt),
			"updatedAt":          model.FormatTime(in.UpdatedAt),
			"title":              meta.title,
			"description":        meta.description,
			"iconUrl":            icon,
			"public":             public,
			"visibility":         visibility,
			"verificationStatus": "approved",
			"lifecycleStatus":    "published",
		}
		if in.Identifier != "" {
			entry["identifier"] = in.Identifier
		}
		out[in.Name] = entry
	}
	return out
}

type auditJSON struct {
	ID           string  `json:"id"`
	RecordedAt   string  `json:"recordedAt"`
	UserID       *string `json:"userId"`
	UserEmail    *string `json:"userEmail"`
	ResourceID   *string `json:"resourceId"`
	ResourceName *string `json:"resourceName"`
	Value        *string `json:"value"`
	Action       string  `json:"action"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func renderAudit(r *model.AuditRecord) auditJSON {
	return auditJSON{ID: r.ID, RecordedAt: model.FormatTime(r.RecordedAt), UserID: strPtr(r.AccountID),
		UserEmail: strPtr(r.Email), ResourceID: strPtr(r.ResourceID), ResourceName: strPtr(r.ResourceName),
		Value: strPtr(r.Value), Action: string(r.Action)}
}

type logJSON struct {
	Timestamp      string `json:"timestamp"`
	Level          string `json:"level"`
	Message        string `json:"message"`
	WorkflowID     string `json:"workflowId,omitempty"`
	UserID         string `json:"userId,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
	EventID        string `json:"eventId,omitempty"`
}

func renderLog(l *model.LogEntry) logJSON {
	return logJSON{Timestamp: model.FormatTime(l.Time), Level: l.Level, Message: l.Message, WorkflowID: l.WorkflowID,
		UserID: l.UserID, ConversationID: l.ConversationID, EventID: l.EventID}
}

type issueJSON struct {
	ID             string         `json:"id"`
	Code           string         `json:"code"`
	CreatedAt      string         `json:"createdAt"`
	LastSeenAt     string         `json:"lastSeenAt"`
	Title          string         `json:"title"`
	Description    string         `json:"description"`
	GroupedData    map[string]any `json:"groupedData"`
	EventsCount    int            `json:"eventsCount"`
	Category       string         `json:"category"`
	ResolutionLink *string        `json:"resolutionLink"`
}

func renderIssue(i *model.Issue) issueJSON {
	return issueJSON{ID: i.ID, Code: i.Code, CreatedAt: model.FormatTime(i.CreatedAt), LastSeenAt: model.FormatTime(i.LastSeenAt),
		Title: i.Title, Description: i.Description, GroupedData: map[string]any{}, EventsCount: i.EventsCount,
		Category: i.Category}
}

// renderIssueEventData renders occurrence data as the {raw, pretty} pairs
// the client types expect.
func renderIssueEventData(data map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range data {
		raw, _ := json.Marshal(v)
		entry := map[string]any{"raw": string(raw)}
		if s, ok := v.(string); ok {
			entry["raw"], entry["pretty"] = s, s
		}
		out[k] = entry
	}
	return out
}
