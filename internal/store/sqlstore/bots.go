package sqlstore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// ---- bots

type bots struct{ s *Store }

const botCols = `id, workspace_id, name, description, dev, type, tags, spec, secrets, code, url, max_execution_time,
	always_alive, signing_secret, created_by, version_id, created_at, updated_at, deployed_at`

func scanBot(r scanner) (*model.Bot, error) {
	var b model.Bot
	var tags, spec, secrets string
	var c, u, d int64
	if err := r.Scan(&b.ID, &b.WorkspaceID, &b.Name, &b.Description, &b.Dev, &b.Type, &tags, &spec, &secrets, &b.Code, &b.URL,
		&b.MaxExecutionTime, &b.AlwaysAlive, &b.SigningSecret, &b.CreatedBy, &b.VersionID, &c, &u, &d); err != nil {
		return nil, err
	}
	b.CreatedAt, b.UpdatedAt, b.DeployedAt = fromMS(c), fromMS(u), fromMS(d)
	for _, f := range []struct {
		s string
		v any
	}{{tags, &b.Tags}, {spec, &b.Spec}, {secrets, &b.Secrets}} {
		if err := fromJSON(f.s, f.v); err != nil {
			return nil, err
		}
	}
	return &b, nil
}

func botJSON(b *model.Bot) (tags, spec, secrets string, err error) {
	if tags, err = jsonText(b.Tags); err != nil {
		return
	}
	if spec, err = jsonText(b.Spec); err != nil {
		return
	}
	secrets, err = jsonText(b.Secrets)
	return
}

// putTags replaces the bot_tags rows that mirror b.Tags for filtering.
func putTags(ctx context.Context, s *Store, b *model.Bot) error {
	if _, err := s.exec(ctx, `DELETE FROM bot_tags WHERE bot_id = ?`, b.ID); err != nil {
		return s.fail(err, "bot tags")
	}
	for k, v := range b.Tags {
		if _, err := s.exec(ctx, `INSERT INTO bot_tags (bot_id, key, value) VALUES (?, ?, ?)`, b.ID, k, v); err != nil {
			return s.fail(err, "bot tags")
		}
	}
	return nil
}

func (r bots) Create(ctx context.Context, b *model.Bot) error {
	newID(&b.ID)
	stamp(&b.CreatedAt, model.Now())
	stamp(&b.UpdatedAt, b.CreatedAt)
	stamp(&b.DeployedAt, b.DeployedAt)
	tags, spec, secrets, err := botJSON(b)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		_, err := s.exec(ctx, `INSERT INTO bots (`+botCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.ID, b.WorkspaceID, b.Name, b.Description, b.Dev, b.Type, tags, spec, secrets, b.Code, b.URL, b.MaxExecutionTime,
			b.AlwaysAlive, b.SigningSecret, b.CreatedBy, b.VersionID, ms(b.CreatedAt), ms(b.UpdatedAt), ms(b.DeployedAt))
		if err != nil {
			return s.fail(err, "bot")
		}
		return putTags(ctx, s, b)
	})
}

func (r bots) Get(ctx context.Context, workspaceID, id string) (*model.Bot, error) {
	return one(ctx, r.s, "bot", scanBot, `SELECT `+botCols+` FROM bots WHERE workspace_id = ? AND id = ?`, workspaceID, id)
}

func (r bots) GetByID(ctx context.Context, id string) (*model.Bot, error) {
	return one(ctx, r.s, "bot", scanBot, `SELECT `+botCols+` FROM bots WHERE id = ?`, id)
}

// Update writes every mutable field; WorkspaceID and CreatedAt are kept.
func (r bots) Update(ctx context.Context, b *model.Bot) error {
	stamp(&b.UpdatedAt, model.Now())
	stamp(&b.DeployedAt, b.DeployedAt)
	tags, spec, secrets, err := botJSON(b)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		err := s.execOne(ctx, "bot", `UPDATE bots SET name = ?, description = ?, dev = ?, type = ?, tags = ?, spec = ?, secrets = ?, code = ?,
			url = ?, max_execution_time = ?, always_alive = ?, signing_secret = ?, created_by = ?, version_id = ?, updated_at = ?, deployed_at = ?
			WHERE workspace_id = ? AND id = ?`,
			b.Name, b.Description, b.Dev, b.Type, tags, spec, secrets, b.Code, b.URL, b.MaxExecutionTime, b.AlwaysAlive,
			b.SigningSecret, b.CreatedBy, b.VersionID, ms(b.UpdatedAt), ms(b.DeployedAt), b.WorkspaceID, b.ID)
		if err != nil {
			return err
		}
		return putTags(ctx, s, b)
	})
}

// unkeyedBotRows are the tables of a bot's rows with no foreign key to the
// bot (API keys; the rows its turns write, migration 0014 on PostgreSQL)
// or to its conversation (messages and signals, migration 0016 on
// PostgreSQL): deleting a bot or its workspace deletes them itself, after
// the bot's row (see DeleteConversation).
var unkeyedBotRows = []string{"tokens", "turn_runs", "states", "bot_logs", "messages", "signals"}

// deleteUnkeyedBotRows deletes the unkeyedBotRows of the bots whose id
// matches botIDs (a condition on bot_id with one parameter, arg); what is
// the error's subject.
func deleteUnkeyedBotRows(ctx context.Context, s *Store, botIDs string, arg any, what string) error {
	for _, table := range unkeyedBotRows {
		if _, err := s.exec(ctx, `DELETE FROM `+table+` WHERE bot_id `+botIDs, arg); err != nil {
			return s.fail(err, what)
		}
	}
	return nil
}

// Delete removes the bot; everything it owns goes with it through ON DELETE
// CASCADE, except what has no foreign key to it, deleted here: its API keys,
// the rows its turns write (runs, states, logs: migration 0014), its
// conversations' messages and signals (migration 0016). The leases named
// after its conversations simply expire.
func (r bots) Delete(ctx context.Context, workspaceID, id string) error {
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "bot", `DELETE FROM bots WHERE workspace_id = ? AND id = ?`, workspaceID, id); err != nil {
			return err
		}
		return deleteUnkeyedBotRows(ctx, s, `= ?`, id, "bot")
	})
}

func (r bots) List(ctx context.Context, f store.BotFilter, p store.Page) ([]*model.Bot, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + botCols + ` FROM bots`,
		where: []string{"dev = ?"},
		args:  []any{f.Dev},
		idcol: "id", asc: f.Ascending,
	}
	key := func(b *model.Bot) (int64, string) { return ms(b.CreatedAt), b.ID }
	switch f.SortField {
	case "", "createdAt":
		ls.tcol = "created_at"
	case "updatedAt":
		ls.tcol = "updated_at"
		key = func(b *model.Bot) (int64, string) { return ms(b.UpdatedAt), b.ID }
	default:
		return nil, "", model.Errorf(model.ErrInvalidQuery, "unknown sort field %q", f.SortField)
	}
	if f.WorkspaceID != "" {
		ls.where = append(ls.where, "workspace_id = ?")
		ls.args = append(ls.args, f.WorkspaceID)
	}
	// Sorted keys keep the query text, and so the rebind cache, stable.
	keys := make([]string, 0, len(f.Tags))
	for k := range f.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ls.where = append(ls.where, "EXISTS (SELECT 1 FROM bot_tags t WHERE t.bot_id = bots.id AND t.key = ? AND t.value = ?)")
		ls.args = append(ls.args, k, f.Tags[k])
	}
	return list(ctx, r.s, p, ls, "bots", scanBot, key)
}

func (r bots) ListAll(ctx context.Context) ([]string, error) {
	return all(ctx, r.s, "bots", func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	}, `SELECT id FROM bots ORDER BY id`)
}

const integrationCols = `bot_id, name, enabled, webhook_id, configuration, integration_id, configuration_type, status, status_reason, disabled_channels, identifier, created_at, updated_at`

func scanIntegration(r scanner) (*model.Integration, error) {
	var in model.Integration
	var conf, disabled string
	var c, u int64
	if err := r.Scan(&in.BotID, &in.Name, &in.Enabled, &in.WebhookID, &conf, &in.IntegrationID, &in.ConfigurationType,
		&in.Status, &in.StatusReason, &disabled, &in.Identifier, &c, &u); err != nil {
		return nil, err
	}
	in.CreatedAt, in.UpdatedAt = fromMS(c), fromMS(u)
	if err := fromJSON(disabled, &in.DisabledChannels); err != nil {
		return nil, err
	}
	if len(in.DisabledChannels) == 0 {
		in.DisabledChannels = nil
	}
	return &in, fromJSON(conf, &in.Configuration)
}

// PutIntegration inserts or replaces the integration; CreatedAt is kept
// from the first insert.
func (r bots) PutIntegration(ctx context.Context, in *model.Integration) error {
	stamp(&in.UpdatedAt, model.Now())
	stamp(&in.CreatedAt, in.UpdatedAt)
	conf, err := jsonText(in.Configuration)
	if err != nil {
		return err
	}
	disabled := in.DisabledChannels
	if disabled == nil {
		disabled = []string{}
	}
	dis, err := jsonText(disabled)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO bot_integrations (`+integrationCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bot_id, name) DO UPDATE SET enabled = excluded.enabled, webhook_id = excluded.webhook_id,
		configuration = excluded.configuration, integration_id = excluded.integration_id,
		configuration_type = excluded.configuration_type, status = excluded.status, status_reason = excluded.status_reason,
		disabled_channels = excluded.disabled_channels, identifier = excluded.identifier, updated_at = excluded.updated_at`,
		in.BotID, in.Name, in.Enabled, in.WebhookID, conf, in.IntegrationID, in.ConfigurationType, in.Status, in.StatusReason,
		dis, in.Identifier, ms(in.CreatedAt), ms(in.UpdatedAt))
	if err != nil {
		return r.s.fail(err, "integration")
	}
	var c int64
	if err := r.s.queryRow(ctx, `SELECT created_at FROM bot_integrations WHERE bot_id = ? AND name = ?`, in.BotID, in.Name).Scan(&c); err != nil {
		return r.s.fail(err, "integration")
	}
	in.CreatedAt = fromMS(c)
	return nil
}

func (r bots) Integrations(ctx context.Context, botID string) ([]*model.Integration, error) {
	return all(ctx, r.s, "integrations", scanIntegration, `SELECT `+integrationCols+` FROM bot_integrations WHERE bot_id = ? ORDER BY name`, botID)
}

func (r bots) DeleteIntegration(ctx context.Context, botID, name string) error {
	return r.s.execOne(ctx, "integration", `DELETE FROM bot_integrations WHERE bot_id = ? AND name = ?`, botID, name)
}

func (r bots) IntegrationByWebhook(ctx context.Context, webhookID string) (*model.Integration, error) {
	if webhookID == "" {
		return nil, model.NotFound("integration")
	}
	return one(ctx, r.s, "integration", scanIntegration, `SELECT `+integrationCols+` FROM bot_integrations WHERE webhook_id = ?`, webhookID)
}

func scanVersion(r scanner) (*model.BotVersion, error) {
	var v model.BotVersion
	var c int64
	if err := r.Scan(&v.ID, &v.BotID, &v.Name, &v.Description, &v.Code, &v.BotJSON, &c); err != nil {
		return nil, err
	}
	v.CreatedAt = fromMS(c)
	return &v, nil
}

func (r bots) CreateVersion(ctx context.Context, v *model.BotVersion) error {
	newID(&v.ID)
	stamp(&v.CreatedAt, model.Now())
	_, err := r.s.exec(ctx, `INSERT INTO bot_versions (id, bot_id, name, description, code, bot_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.BotID, v.Name, v.Description, v.Code, v.BotJSON, ms(v.CreatedAt))
	return r.s.fail(err, "bot version")
}

func (r bots) GetVersion(ctx context.Context, botID, id string) (*model.BotVersion, error) {
	return one(ctx, r.s, "bot version", scanVersion,
		`SELECT id, bot_id, name, description, code, bot_json, created_at FROM bot_versions WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r bots) ListVersions(ctx context.Context, botID string) ([]*model.BotVersion, error) {
	return all(ctx, r.s, "bot versions", scanVersion,
		`SELECT id, bot_id, name, description, code, bot_json, created_at FROM bot_versions WHERE bot_id = ? ORDER BY created_at DESC, id DESC`, botID)
}

// ---- logs

type logs struct{ s *Store }

func scanLog(r scanner) (*model.LogEntry, error) {
	var l model.LogEntry
	var t int64
	if err := r.Scan(&l.ID, &l.BotID, &t, &l.Level, &l.Message, &l.ConversationID, &l.UserID, &l.EventID, &l.WorkflowID); err != nil {
		return nil, err
	}
	l.Time = fromMS(t)
	return &l, nil
}

func (r logs) Append(ctx context.Context, entries ...*model.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return r.s.tx(ctx, func(s *Store) error {
		for _, l := range entries {
			newID(&l.ID)
			stamp(&l.Time, model.Now())
			_, err := s.exec(ctx, `INSERT INTO bot_logs (id, bot_id, time, level, message, conversation_id, user_id, event_id, workflow_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				l.ID, l.BotID, ms(l.Time), l.Level, l.Message, l.ConversationID, l.UserID, l.EventID, l.WorkflowID)
			if err != nil {
				return s.fail(err, "log entry")
			}
		}
		return nil
	})
}

// likeEscaper makes a Contains filter literal inside LIKE.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// List filters with Since inclusive and Until exclusive; Contains is a
// case-insensitive substring match (the same on both engines).
func (r logs) List(ctx context.Context, f model.LogFilter, p store.Page) ([]*model.LogEntry, string, error) {
	ls := listSpec{
		sel:   `SELECT id, bot_id, time, level, message, conversation_id, user_id, event_id, workflow_id FROM bot_logs`,
		where: []string{"bot_id = ?"},
		args:  []any{f.BotID},
		tcol:  "time", idcol: "id",
	}
	add := func(cond string, arg any) {
		ls.where = append(ls.where, cond)
		ls.args = append(ls.args, arg)
	}
	if !f.Since.IsZero() {
		add("time >= ?", f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		add("time < ?", f.Until.UnixMilli())
	}
	for _, c := range []struct{ col, v string }{
		{"level", f.Level}, {"user_id", f.UserID}, {"conversation_id", f.ConversationID}, {"workflow_id", f.WorkflowID},
	} {
		if c.v != "" {
			add(fmt.Sprintf("%s = ?", c.col), c.v)
		}
	}
	if f.Contains != "" {
		add(`LOWER(message) LIKE ? ESCAPE '\'`, "%"+likeEscaper.Replace(strings.ToLower(f.Contains))+"%")
	}
	return list(ctx, r.s, p, ls, "logs", scanLog, func(l *model.LogEntry) (int64, string) { return ms(l.Time), l.ID })
}

// ---- issues

type issues struct{ s *Store }

const issueCols = `id, bot_id, code, category, title, description, events_count, created_at, last_seen_at`

func scanIssue(r scanner) (*model.Issue, error) {
	var i model.Issue
	var c, l int64
	if err := r.Scan(&i.ID, &i.BotID, &i.Code, &i.Category, &i.Title, &i.Description, &i.EventsCount, &c, &l); err != nil {
		return nil, err
	}
	i.CreatedAt, i.LastSeenAt = fromMS(c), fromMS(l)
	return &i, nil
}

func scanIssueEvent(r scanner) (*model.IssueEvent, error) {
	var e model.IssueEvent
	var c int64
	var data string
	if err := r.Scan(&e.ID, &e.IssueID, &c, &data); err != nil {
		return nil, err
	}
	e.CreatedAt = fromMS(c)
	return &e, fromJSON(data, &e.Data)
}

// Report upserts the issue in one statement, so concurrent reports of the
// same code count every occurrence, then stores the occurrence.
func (r issues) Report(ctx context.Context, i *model.Issue, ev *model.IssueEvent) (*model.Issue, error) {
	now := model.Now()
	if ev == nil {
		ev = &model.IssueEvent{}
	}
	stamp(&ev.CreatedAt, now)
	newID(&ev.ID)
	data, err := jsonText(ev.Data)
	if err != nil {
		return nil, err
	}
	var out *model.Issue
	err = r.s.tx(ctx, func(s *Store) error {
		var err error
		out, err = one(ctx, s, "issue", scanIssue, `INSERT INTO bot_issues (`+issueCols+`) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)
			ON CONFLICT (bot_id, code) DO UPDATE SET events_count = bot_issues.events_count + 1, last_seen_at = excluded.last_seen_at
			RETURNING `+issueCols,
			model.NewID(), i.BotID, i.Code, i.Category, i.Title, i.Description, ms(ev.CreatedAt), ms(ev.CreatedAt))
		if err != nil {
			return err
		}
		ev.IssueID = out.ID
		_, err = s.exec(ctx, `INSERT INTO bot_issue_events (id, issue_id, created_at, data) VALUES (?, ?, ?, ?)`,
			ev.ID, ev.IssueID, ms(ev.CreatedAt), data)
		return s.fail(err, "issue event")
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r issues) Get(ctx context.Context, botID, id string) (*model.Issue, error) {
	return one(ctx, r.s, "issue", scanIssue, `SELECT `+issueCols+` FROM bot_issues WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r issues) List(ctx context.Context, botID string, p store.Page) ([]*model.Issue, string, error) {
	ls := listSpec{
		sel:   `SELECT ` + issueCols + ` FROM bot_issues`,
		where: []string{"bot_id = ?"},
		args:  []any{botID},
		tcol:  "last_seen_at", idcol: "id",
	}
	return list(ctx, r.s, p, ls, "issues", scanIssue, func(i *model.Issue) (int64, string) { return ms(i.LastSeenAt), i.ID })
}

func (r issues) Delete(ctx context.Context, botID, id string) error {
	return r.s.execOne(ctx, "issue", `DELETE FROM bot_issues WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r issues) Events(ctx context.Context, issueID string, p store.Page) ([]*model.IssueEvent, string, error) {
	ls := listSpec{
		sel:   `SELECT id, issue_id, created_at, data FROM bot_issue_events`,
		where: []string{"issue_id = ?"},
		args:  []any{issueID},
		tcol:  "created_at", idcol: "id",
	}
	return list(ctx, r.s, p, ls, "issue events", scanIssueEvent, func(e *model.IssueEvent) (int64, string) { return ms(e.CreatedAt), e.ID })
}
