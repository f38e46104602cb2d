package sqlstore

import (
	"context"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// ---- integrations

type integrations struct{ s *Store }

const integrationDefCols = `id, workspace_id, name, version, dev, url, code, signing_secret, title, description, icon, readme,
	public, visibility, max_execution_time, spec, secrets, created_at, updated_at`

func scanIntegrationDef(r scanner) (*model.IntegrationDef, error) {
	var d model.IntegrationDef
	var spec, secrets string
	var c, u int64
	if err := r.Scan(&d.ID, &d.WorkspaceID, &d.Name, &d.Version, &d.Dev, &d.URL, &d.Code, &d.SigningSecret, &d.Title,
		&d.Description, &d.Icon, &d.Readme, &d.Public, &d.Visibility, &d.MaxExecutionTime, &spec, &secrets, &c, &u); err != nil {
		return nil, err
	}
	d.CreatedAt, d.UpdatedAt = fromMS(c), fromMS(u)
	if err := fromJSON(spec, &d.Spec); err != nil {
		return nil, err
	}
	if d.Spec == nil {
		d.Spec = map[string]any{}
	}
	if err := fromJSON(secrets, &d.Secrets); err != nil {
		return nil, err
	}
	return &d, nil
}

func (r integrations) Create(ctx context.Context, d *model.IntegrationDef) error {
	newID(&d.ID)
	stamp(&d.CreatedAt, model.Now())
	stamp(&d.UpdatedAt, d.CreatedAt)
	spec, secrets, err := defJSON(d)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO integrations (`+integrationDefCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.WorkspaceID, d.Name, d.Version, d.Dev, d.URL, d.Code, d.SigningSecret, d.Title, d.Description, d.Icon, d.Readme,
		d.Public, d.Visibility, d.MaxExecutionTime, spec, secrets, ms(d.CreatedAt), ms(d.UpdatedAt))
	return r.s.fail(err, "integration")
}

func defJSON(d *model.IntegrationDef) (spec, secrets string, err error) {
	if spec, err = jsonText(d.Spec); err != nil {
		return
	}
	sec := d.Secrets
	if sec == nil {
		sec = map[string]string{}
	}
	secrets, err = jsonText(sec)
	return
}

func (r integrations) Get(ctx context.Context, id string) (*model.IntegrationDef, error) {
	return one(ctx, r.s, "integration", scanIntegrationDef, `SELECT `+integrationDefCols+` FROM integrations WHERE id = ?`, id)
}

func (r integrations) GetByName(ctx context.Context, workspaceID, name, version string) (*model.IntegrationDef, error) {
	q := `SELECT ` + integrationDefCols + ` FROM integrations WHERE name = ?`
	args := []any{name}
	if workspaceID != "" {
		q += ` AND workspace_id = ?`
		args = append(args, workspaceID)
	} else {
		q += ` AND public = ?`
		args = append(args, true)
	}
	if version != "latest" {
		q += ` AND version = ?`
		args = append(args, version)
	}
	q += ` ORDER BY dev, created_at DESC, id DESC LIMIT 1`
	return one(ctx, r.s, "integration", scanIntegrationDef, q, args...)
}

func (r integrations) Update(ctx context.Context, d *model.IntegrationDef) error {
	spec, secrets, err := defJSON(d)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, "integration", `UPDATE integrations SET dev = ?, url = ?, code = ?, signing_secret = ?, title = ?,
		description = ?, icon = ?, readme = ?, public = ?, visibility = ?, max_execution_time = ?, spec = ?, secrets = ?, updated_at = ?
		WHERE id = ?`,
		d.Dev, d.URL, d.Code, d.SigningSecret, d.Title, d.Description, d.Icon, d.Readme, d.Public, d.Visibility,
		d.MaxExecutionTime, spec, secrets, ms(d.UpdatedAt), d.ID)
}

func (r integrations) Delete(ctx context.Context, id string) error {
	return r.s.execOne(ctx, "integration", `DELETE FROM integrations WHERE id = ?`, id)
}

func (r integrations) List(ctx context.Context, f store.IntegrationFilter, p store.Page) ([]*model.IntegrationDef, string, error) {
	ls := listSpec{sel: `SELECT ` + integrationDefCols + ` FROM integrations`, tcol: "created_at", idcol: "id"}
	add := func(cond string, arg ...any) {
		ls.where = append(ls.where, cond)
		ls.args = append(ls.args, arg...)
	}
	if f.WorkspaceID != "" {
		add("workspace_id = ?", f.WorkspaceID)
	}
	if f.Public {
		add("public = ?", true)
	}
	if f.Name != "" {
		add("name = ?", f.Name)
	}
	if f.Version != "" {
		add("version = ?", f.Version)
	}
	if f.Dev != nil {
		add("dev = ?", *f.Dev)
	}
	if f.InstalledByBotID != "" {
		add("id IN (SELECT integration_id FROM bot_integrations WHERE bot_id = ?)", f.InstalledByBotID)
	}
	if f.Search != "" {
		pat := "%" + likeEscaper.Replace(strings.ToLower(f.Search)) + "%"
		add(`(LOWER(name) LIKE ? ESCAPE '\' OR LOWER(title) LIKE ? ESCAPE '\' OR LOWER(description) LIKE ? ESCAPE '\')`, pat, pat, pat)
	}
	return list(ctx, r.s, p, ls, "integrations", scanIntegrationDef,
		func(d *model.IntegrationDef) (int64, string) { return ms(d.CreatedAt), d.ID })
}

func (r integrations) Installations(ctx context.Context, integrationID string) ([]*model.Integration, error) {
	return all(ctx, r.s, "integrations", scanIntegration,
		`SELECT `+integrationCols+` FROM bot_integrations WHERE integration_id = ? ORDER BY bot_id, name`, integrationID)
}

func (r integrations) AppendLogs(ctx context.Context, entries ...*model.IntegrationLog) error {
	if len(entries) == 0 {
		return nil
	}
	return r.s.tx(ctx, func(s *Store) error {
		for _, l := range entries {
			newID(&l.ID)
			stamp(&l.Time, model.Now())
			_, err := s.exec(ctx, `INSERT INTO integration_logs (id, integration_id, bot_id, time, level, message, conversation_id, user_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				l.ID, l.IntegrationID, l.BotID, ms(l.Time), l.Level, l.Message, l.ConversationID, l.UserID)
			if err != nil {
				return s.fail(err, "integration log entry")
			}
		}
		return nil
	})
}

func scanIntegrationLog(r scanner) (*model.IntegrationLog, error) {
	var l model.IntegrationLog
	var t int64
	if err := r.Scan(&l.ID, &l.IntegrationID, &l.BotID, &t, &l.Level, &l.Message, &l.ConversationID, &l.UserID); err != nil {
		return nil, err
	}
	l.Time = fromMS(t)
	return &l, nil
}

func (r integrations) Logs(ctx context.Context, f model.IntegrationLogFilter, p store.Page) ([]*model.IntegrationLog, string, error) {
	ls := listSpec{
		sel:   `SELECT id, integration_id, bot_id, time, level, message, conversation_id, user_id FROM integration_logs`,
		where: []string{"integration_id = ?"}, args: []any{f.IntegrationID},
		tcol: "time", idcol: "id",
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
	for _, c := range []struct{ col, v string }{{"level", f.Level}, {"user_id", f.UserID}, {"conversation_id", f.ConversationID}} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	if f.Contains != "" {
		add(`LOWER(message) LIKE ? ESCAPE '\'`, "%"+likeEscaper.Replace(strings.ToLower(f.Contains))+"%")
	}
	return list(ctx, r.s, p, ls, "integration logs", scanIntegrationLog,
		func(l *model.IntegrationLog) (int64, string) { return ms(l.Time), l.ID })
}

func (r integrations) DeliveredSeq(ctx context.Context, botID, conversationID string) (int64, error) {
	var seq int64
	err := r.s.queryRow(ctx, `SELECT delivered_seq FROM integration_deliveries WHERE bot_id = ? AND conversation_id = ?`,
		botID, conversationID).Scan(&seq)
	if err != nil {
		if err := r.s.fail(err, "delivery"); model.IsNotFound(err) {
			return 0, nil
		} else {
			return 0, err
		}
	}
	return seq, nil
}

func (r integrations) SetDeliveredSeq(ctx context.Context, botID, conversationID string, seq int64) error {
	_, err := r.s.exec(ctx, `INSERT INTO integration_deliveries (bot_id, conversation_id, delivered_seq) VALUES (?, ?, ?)
		ON CONFLICT (bot_id, conversation_id) DO UPDATE SET delivered_seq = excluded.delivered_seq`, botID, conversationID, seq)
	return r.s.fail(err, "delivery")
}

func (r integrations) Undelivered(ctx context.Context, limit int) ([]model.ConversationRef, error) {
	return upTo(ctx, r.s, "deliveries", limit, func(sc scanner) (model.ConversationRef, error) {
		var ref model.ConversationRef
		return ref, sc.Scan(&ref.BotID, &ref.ConversationID)
	}, `SELECT c.bot_id, c.id FROM conversations c
		JOIN bot_integrations bi ON bi.bot_id = c.bot_id AND bi.name = c.integration AND bi.integration_id <> ''
		LEFT JOIN integration_deliveries d ON d.bot_id = c.bot_id AND d.conversation_id = c.id
		WHERE c.last_seq > COALESCE(d.delivered_seq, 0)
		ORDER BY c.bot_id, c.id`)
}
