package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// The Runtime API's own aggregates: named states, workflows, tasks and
// analytics counters.

func (s *Store) RuntimeStates() store.RuntimeStates { return runtimeStates{s} }
func (s *Store) Workflows() store.Workflows         { return workflows{s} }
func (s *Store) Tasks() store.Tasks                 { return tasks{s} }
func (s *Store) Analytics() store.Analytics         { return analytics{s} }

// msOrZero stores a zero time as 0.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func fromMSOrZero(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMS(v)
}

// ---- states

type runtimeStates struct{ s *Store }

const stateCols = `bot_id, type, owner_id, name, id, payload, expiry, expires_at, created_at, updated_at`

func scanState(sc scanner) (*model.State, error) {
	var st model.State
	var payload string
	var exp, c, u int64
	if err := sc.Scan(&st.BotID, &st.Type, &st.OwnerID, &st.Name, &st.ID, &payload, &st.Expiry, &exp, &c, &u); err != nil {
		return nil, err
	}
	st.Payload, st.ExpiresAt, st.CreatedAt, st.UpdatedAt = json.RawMessage(payload), fromMSOrZero(exp), fromMS(c), fromMS(u)
	return &st, nil
}

func (r runtimeStates) Get(ctx context.Context, botID, typ, ownerID, name string) (*model.State, error) {
	return one(ctx, r.s, "state", scanState, `SELECT `+stateCols+` FROM runtime_states WHERE bot_id = ? AND type = ? AND owner_id = ? AND name = ?`,
		botID, typ, ownerID, name)
}

func (r runtimeStates) Put(ctx context.Context, st *model.State) error {
	newID(&st.ID)
	stamp(&st.CreatedAt, model.Now())
	stamp(&st.UpdatedAt, model.Now())
	return r.s.tx(ctx, func(s *Store) error {
		var id string
		var created int64
		err := s.queryRow(ctx, `INSERT INTO runtime_states (`+stateCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (bot_id, type, owner_id, name) DO UPDATE SET payload = excluded.payload, expiry = excluded.expiry,
			expires_at = excluded.expires_at, updated_at = excluded.updated_at
			RETURNING id, created_at`,
			st.BotID, st.Type, st.OwnerID, st.Name, st.ID, rawText(st.Payload), st.Expiry, msOrZero(st.ExpiresAt),
			ms(st.CreatedAt), ms(st.UpdatedAt)).Scan(&id, &created)
		if err != nil {
			return s.fail(err, "state")
		}
		st.ID, st.CreatedAt = id, fromMS(created)
		return nil
	})
}

func (r runtimeStates) Create(ctx context.Context, st *model.State) error {
	newID(&st.ID)
	stamp(&st.CreatedAt, model.Now())
	stamp(&st.UpdatedAt, st.CreatedAt)
	_, err := r.s.exec(ctx, `INSERT INTO runtime_states (`+stateCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.BotID, st.Type, st.OwnerID, st.Name, st.ID, rawText(st.Payload), st.Expiry, msOrZero(st.ExpiresAt),
		ms(st.CreatedAt), ms(st.UpdatedAt))
	return r.s.fail(err, "state")
}

func (r runtimeStates) Delete(ctx context.Context, botID, typ, ownerID, name string) error {
	return r.s.execOne(ctx, "state", `DELETE FROM runtime_states WHERE bot_id = ? AND type = ? AND owner_id = ? AND name = ?`,
		botID, typ, ownerID, name)
}

func (r runtimeStates) DeleteExpired(ctx context.Context, botID, typ, ownerID, name string, now time.Time) error {
	return r.s.execOne(ctx, "state", `DELETE FROM runtime_states WHERE bot_id = ? AND type = ? AND owner_id = ? AND name = ?
		AND expires_at > 0 AND expires_at <= ?`, botID, typ, ownerID, name, ms(now))
}

func (r runtimeStates) Expired(ctx context.Context, now time.Time, limit int) ([]*model.State, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "states", limit, scanState, `SELECT `+stateCols+` FROM runtime_states
		WHERE expires_at > 0 AND expires_at <= ? ORDER BY expires_at`, ms(now))
}

// ---- workflows

type workflows struct{ s *Store }

const workflowCols = `bot_id, id, name, status, input, output, parent_workflow_id, conversation_id, user_id, event_id,
	failure_reason, tags, timeout_at, completed_at, created_at, updated_at`

func scanWorkflow(sc scanner) (*model.Workflow, error) {
	var w model.Workflow
	var in, out, tags string
	var timeout, completed, c, u int64
	if err := sc.Scan(&w.BotID, &w.ID, &w.Name, &w.Status, &in, &out, &w.ParentWorkflowID, &w.ConversationID, &w.UserID,
		&w.EventID, &w.FailureReason, &tags, &timeout, &completed, &c, &u); err != nil {
		return nil, err
	}
	w.Input, w.Output = json.RawMessage(in), json.RawMessage(out)
	w.TimeoutAt, w.CompletedAt, w.CreatedAt, w.UpdatedAt = fromMSOrZero(timeout), fromMSOrZero(completed), fromMS(c), fromMS(u)
	return &w, tagsFrom(tags, &w.Tags)
}

func (r workflows) Create(ctx context.Context, w *model.Workflow) error {
	newID(&w.ID)
	stamp(&w.CreatedAt, model.Now())
	stamp(&w.UpdatedAt, w.CreatedAt)
	tags, err := tagsText(w.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		_, err := s.exec(ctx, `INSERT INTO workflows (`+workflowCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.BotID, w.ID, w.Name, w.Status, objText(w.Input), objText(w.Output), w.ParentWorkflowID, w.ConversationID, w.UserID,
			w.EventID, w.FailureReason, tags, msOrZero(w.TimeoutAt), msOrZero(w.CompletedAt), ms(w.CreatedAt), ms(w.UpdatedAt))
		if err != nil {
			return s.fail(err, "workflow")
		}
		return putRowTags(ctx, s, tagTables.workflow, w.BotID, w.ID, w.Tags, false)
	})
}

// objText is the stored JSON of an object ({} for none).
func objText(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return "{}"
	}
	return string(r)
}

func (r workflows) Get(ctx context.Context, botID, id string) (*model.Workflow, error) {
	return one(ctx, r.s, "workflow", scanWorkflow, `SELECT `+workflowCols+` FROM workflows WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r workflows) Update(ctx context.Context, w *model.Workflow) error {
	stamp(&w.UpdatedAt, model.Now())
	tags, err := tagsText(w.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "workflow", `UPDATE workflows SET status = ?, output = ?, user_id = ?, event_id = ?, failure_reason = ?,
			tags = ?, timeout_at = ?, completed_at = ?, updated_at = ? WHERE bot_id = ? AND id = ?`,
			w.Status, objText(w.Output), w.UserID, w.EventID, w.FailureReason, tags, msOrZero(w.TimeoutAt), msOrZero(w.CompletedAt),
			ms(w.UpdatedAt), w.BotID, w.ID); err != nil {
			return err
		}
		return putRowTags(ctx, s, tagTables.workflow, w.BotID, w.ID, w.Tags, true)
	})
}

func (r workflows) Delete(ctx context.Context, botID, id string) error {
	return r.s.execOne(ctx, "workflow", `DELETE FROM workflows WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r workflows) List(ctx context.Context, botID string, f store.WorkflowFilter, p store.Page) ([]*model.Workflow, string, error) {
	ls := listSpec{sel: `SELECT ` + workflowCols + ` FROM workflows`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: "created_at", idcol: "id"}
	for _, c := range []struct{ col, v string }{{"conversation_id", f.ConversationID}, {"user_id", f.UserID},
		{"parent_workflow_id", f.ParentWorkflowID}, {"name", f.Name}} {
		if c.v != "" {
			ls.where = append(ls.where, c.col+" = ?")
			ls.args = append(ls.args, c.v)
		}
	}
	inList(&ls, "status", f.Statuses)
	tagConds(&ls, tagTables.workflow, f.Tags)
	return list(ctx, r.s, p, ls, "workflows", scanWorkflow, func(w *model.Workflow) (int64, string) { return ms(w.CreatedAt), w.ID })
}

// inList adds "col IN (...)" when vals is not empty.
func inList(ls *listSpec, col string, vals []string) {
	if len(vals) == 0 {
		return
	}
	cond := col + " IN ("
	for i, v := range vals {
		if i > 0 {
			cond += ", "
		}
		cond += "?"
		ls.args = append(ls.args, v)
	}
	ls.where = append(ls.where, cond+")")
}

// ---- tasks

type tasks struct{ s *Store }

const taskCols = `bot_id, id, title, description, type, data, status, parent_task_id, conversation_id, user_id,
	failure_reason, tags, timeout_at, created_at, updated_at`

func scanTask(sc scanner) (*model.Task, error) {
	var t model.Task
	var data, tags string
	var timeout, c, u int64
	if err := sc.Scan(&t.BotID, &t.ID, &t.Title, &t.Description, &t.Type, &data, &t.Status, &t.ParentTaskID, &t.ConversationID,
		&t.UserID, &t.FailureReason, &tags, &timeout, &c, &u); err != nil {
		return nil, err
	}
	t.Data, t.TimeoutAt, t.CreatedAt, t.UpdatedAt = json.RawMessage(data), fromMSOrZero(timeout), fromMS(c), fromMS(u)
	return &t, tagsFrom(tags, &t.Tags)
}

func (r tasks) Create(ctx context.Context, t *model.Task) error {
	newID(&t.ID)
	stamp(&t.CreatedAt, model.Now())
	stamp(&t.UpdatedAt, t.CreatedAt)
	tags, err := tagsText(t.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		_, err := s.exec(ctx, `INSERT INTO tasks (`+taskCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.BotID, t.ID, t.Title, t.Description, t.Type, objText(t.Data), t.Status, t.ParentTaskID, t.ConversationID, t.UserID,
			t.FailureReason, tags, msOrZero(t.TimeoutAt), ms(t.CreatedAt), ms(t.UpdatedAt))
		if err != nil {
			return s.fail(err, "task")
		}
		return putRowTags(ctx, s, tagTables.task, t.BotID, t.ID, t.Tags, false)
	})
}

func (r tasks) Get(ctx context.Context, botID, id string) (*model.Task, error) {
	return one(ctx, r.s, "task", scanTask, `SELECT `+taskCols+` FROM tasks WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r tasks) Update(ctx context.Context, t *model.Task) error {
	stamp(&t.UpdatedAt, model.Now())
	tags, err := tagsText(t.Tags)
	if err != nil {
		return err
	}
	return r.s.tx(ctx, func(s *Store) error {
		if err := s.execOne(ctx, "task", `UPDATE tasks SET title = ?, description = ?, data = ?, status = ?, failure_reason = ?,
			tags = ?, timeout_at = ?, updated_at = ? WHERE bot_id = ? AND id = ?`,
			t.Title, t.Description, objText(t.Data), t.Status, t.FailureReason, tags, msOrZero(t.TimeoutAt), ms(t.UpdatedAt),
			t.BotID, t.ID); err != nil {
			return err
		}
		return putRowTags(ctx, s, tagTables.task, t.BotID, t.ID, t.Tags, true)
	})
}

func (r tasks) Delete(ctx context.Context, botID, id string) error {
	return r.s.execOne(ctx, "task", `DELETE FROM tasks WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r tasks) List(ctx context.Context, botID string, f store.TaskFilter, p store.Page) ([]*model.Task, string, error) {
	ls := listSpec{sel: `SELECT ` + taskCols + ` FROM tasks`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: "created_at", idcol: "id"}
	for _, c := range []struct{ col, v string }{{"conversation_id", f.ConversationID}, {"user_id", f.UserID},
		{"parent_task_id", f.ParentTaskID}, {"type", f.Type}} {
		if c.v != "" {
			ls.where = append(ls.where, c.col+" = ?")
			ls.args = append(ls.args, c.v)
		}
	}
	inList(&ls, "status", f.Status)
	tagConds(&ls, tagTables.task, f.Tags)
	return list(ctx, r.s, p, ls, "tasks", scanTask, func(t *model.Task) (int64, string) { return ms(t.CreatedAt), t.ID })
}

// ---- analytics

type analytics struct{ s *Store }

func (r analytics) Add(ctx context.Context, botID, name, day string, count int64) error {
	_, err := r.s.exec(ctx, `INSERT INTO analytics (bot_id, name, day, count) VALUES (?, ?, ?, ?)
		ON CONFLICT (bot_id, name, day) DO UPDATE SET count = analytics.count + excluded.count`, botID, name, day, count)
	return r.s.fail(err, "analytics")
}

func (r analytics) List(ctx context.Context, botID, from, to string) ([]model.AnalyticsCount, error) {
	return all(ctx, r.s, "analytics", func(sc scanner) (model.AnalyticsCount, error) {
		var a model.AnalyticsCount
		return a, sc.Scan(&a.BotID, &a.Name, &a.Day, &a.Count)
	}, `SELECT bot_id, name, day, count FROM analytics WHERE bot_id = ? AND day >= ? AND day <= ? ORDER BY day, name`, botID, from, to)
}
