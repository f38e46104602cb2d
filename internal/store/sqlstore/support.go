package sqlstore

import (
	"context"
	"sort"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Support teams' data (issue 19): handoffs and the activity analytics read.

func (s *Store) Handoffs() store.Handoffs { return handoffs{s} }
func (s *Store) Activity() store.Activity { return activity{s} }

// ---- handoffs

type handoffs struct{ s *Store }

const handoffCols = `bot_id, conversation_id, status, reason, requested_by, requested_at, agent_account_id, agent_user_id, agent_name, taken_at`

func handoffArgs(h *model.Handoff) []any {
	return []any{h.BotID, h.ConversationID, h.Status, h.Reason, h.RequestedBy, ms(h.RequestedAt),
		h.AgentAccountID, h.AgentUserID, h.AgentName, msOrZero(h.TakenAt)}
}

func scanHandoff(sc scanner) (*model.Handoff, error) {
	var h model.Handoff
	var req, taken int64
	if err := sc.Scan(&h.BotID, &h.ConversationID, &h.Status, &h.Reason, &h.RequestedBy, &req,
		&h.AgentAccountID, &h.AgentUserID, &h.AgentName, &taken); err != nil {
		return nil, err
	}
	h.RequestedAt, h.TakenAt = fromMS(req), fromMSOrZero(taken)
	return &h, nil
}

func (r handoffs) Request(ctx context.Context, h *model.Handoff) (bool, error) {
	stamp(&h.RequestedAt, model.Now())
	res, err := r.s.exec(ctx, `INSERT INTO handoffs (`+handoffCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bot_id, conversation_id) DO NOTHING`, handoffArgs(h)...)
	if err != nil {
		return false, r.s.fail(err, "conversation")
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (r handoffs) Put(ctx context.Context, h *model.Handoff) error {
	stamp(&h.RequestedAt, model.Now())
	_, err := r.s.exec(ctx, `INSERT INTO handoffs (`+handoffCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bot_id, conversation_id) DO UPDATE SET status = excluded.status, reason = excluded.reason,
		requested_by = excluded.requested_by, requested_at = excluded.requested_at,
		agent_account_id = excluded.agent_account_id, agent_user_id = excluded.agent_user_id,
		agent_name = excluded.agent_name, taken_at = excluded.taken_at`, handoffArgs(h)...)
	return r.s.fail(err, "conversation")
}

func (r handoffs) Get(ctx context.Context, botID, conversationID string) (*model.Handoff, error) {
	return one(ctx, r.s, "handoff", scanHandoff,
		`SELECT `+handoffCols+` FROM handoffs WHERE bot_id = ? AND conversation_id = ?`, botID, conversationID)
}

func (r handoffs) Delete(ctx context.Context, botID, conversationID string) error {
	return r.s.execOne(ctx, "handoff", `DELETE FROM handoffs WHERE bot_id = ? AND conversation_id = ?`, botID, conversationID)
}

func (r handoffs) List(ctx context.Context, botID, status string, p store.Page) ([]*model.Handoff, string, error) {
	ls := listSpec{sel: `SELECT ` + handoffCols + ` FROM handoffs`, where: []string{"bot_id = ?"}, args: []any{botID},
		tcol: "requested_at", idcol: "conversation_id", asc: true}
	if status != "" {
		ls.where = append(ls.where, "status = ?")
		ls.args = append(ls.args, status)
	}
	return list(ctx, r.s, p, ls, "handoffs", scanHandoff, func(h *model.Handoff) (int64, string) {
		return ms(h.RequestedAt), h.ConversationID
	})
}

// ---- activity

type activity struct{ s *Store }

// RecordTurn records a run once: a completion committed again carries the
// same run, ran_at included, which the key (bot_id, ran_at,
// conversation_id, seq; migration 0015) catches.
func (r activity) RecordTurn(ctx context.Context, t *model.TurnRun) error {
	_, err := r.s.exec(ctx, `INSERT INTO turn_runs (bot_id, conversation_id, seq, ran_at, duration_ms, failed)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		t.BotID, t.ConversationID, t.Seq, ms(t.RanAt), t.Duration.Milliseconds(), t.Failed)
	return r.s.fail(err, "turn run")
}

// Buckets reads the bot's messages, users, conversations and turn runs in
// [from, to), grouped by period in SQL (integer division of the
// millisecond timestamps, the same on both engines); turn times come back
// one by one for the percentiles.
func (r activity) Buckets(ctx context.Context, botID string, from, to time.Time, bucket time.Duration) ([]model.ActivityBucket, error) {
	size := bucket.Milliseconds()
	if size <= 0 {
		return nil, model.Invalid("bucket: must be at least 1 ms")
	}
	lo, hi := ms(from), ms(to)
	out := map[int64]*model.ActivityBucket{}
	at := func(b int64) *model.ActivityBucket {
		x := out[b]
		if x == nil {
			x = &model.ActivityBucket{Start: fromMS(b * size)}
			out[b] = x
		}
		return x
	}
	type row struct {
		b    int64
		kind string
		n    int64
	}
	msgs, err := all(ctx, r.s, "messages", func(sc scanner) (row, error) {
		var x row
		return x, sc.Scan(&x.b, &x.kind, &x.n)
	}, `SELECT created_at / ?, CASE WHEN direction = 'incoming' THEN 'in' WHEN user_id = bot_id THEN 'out' ELSE 'agent' END, COUNT(*)
		FROM messages WHERE bot_id = ? AND created_at >= ? AND created_at < ? GROUP BY 1, 2`, size, botID, lo, hi)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		x := at(m.b)
		switch m.kind {
		case "in":
			x.MessagesIn += m.n
		case "out":
			x.MessagesOut += m.n
		default:
			x.AgentMessages += m.n
		}
	}
	type active struct{ b, convs, users, returning int64 }
	acts, err := all(ctx, r.s, "messages", func(sc scanner) (active, error) {
		var x active
		return x, sc.Scan(&x.b, &x.convs, &x.users, &x.returning)
	}, `SELECT m.created_at / ?, COUNT(DISTINCT m.conversation_id),
		COUNT(DISTINCT CASE WHEN m.direction = 'incoming' THEN m.user_id END),
		COUNT(DISTINCT CASE WHEN m.direction = 'incoming' AND u.created_at < (m.created_at / ?) * ? THEN m.user_id END)
		FROM messages m LEFT JOIN chat_users u ON u.bot_id = m.bot_id AND u.id = m.user_id
		WHERE m.bot_id = ? AND m.created_at >= ? AND m.created_at < ? GROUP BY 1`, size, size, size, botID, lo, hi)
	if err != nil {
		return nil, err
	}
	for _, a := range acts {
		x := at(a.b)
		x.Conversations, x.ActiveUsers, x.ReturningUsers = a.convs, a.users, a.returning
	}
	type count struct{ b, n int64 }
	scanCount := func(sc scanner) (count, error) {
		var x count
		return x, sc.Scan(&x.b, &x.n)
	}
	// New users: people, not the bot's own user nor operators' (agent_...).
	users, err := all(ctx, r.s, "users", scanCount, `SELECT created_at / ?, COUNT(*) FROM chat_users
		WHERE bot_id = ? AND created_at >= ? AND created_at < ? AND id <> bot_id AND substr(id, 1, 6) <> 'agent_' GROUP BY 1`,
		size, botID, lo, hi)
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		at(u.b).NewUsers = u.n
	}
	convs, err := all(ctx, r.s, "conversations", scanCount, `SELECT created_at / ?, COUNT(*) FROM conversations
		WHERE bot_id = ? AND created_at >= ? AND created_at < ? GROUP BY 1`, size, botID, lo, hi)
	if err != nil {
		return nil, err
	}
	for _, c := range convs {
		at(c.b).NewConversations = c.n
	}
	type run struct {
		b, d   int64
		failed bool
	}
	runs, err := all(ctx, r.s, "turn runs", func(sc scanner) (run, error) {
		var x run
		return x, sc.Scan(&x.b, &x.d, &x.failed)
	}, `SELECT ran_at / ?, duration_ms, failed FROM turn_runs WHERE bot_id = ? AND ran_at >= ? AND ran_at < ? ORDER BY 1, 2`,
		size, botID, lo, hi)
	if err != nil {
		return nil, err
	}
	for _, t := range runs {
		x := at(t.b)
		x.Turns++
		if t.failed {
			x.TurnFailures++
		}
		x.TurnDurations = append(x.TurnDurations, time.Duration(t.d)*time.Millisecond)
	}
	res := make([]model.ActivityBucket, 0, len(out))
	for _, x := range out {
		res = append(res, *x)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Start.Before(res[j].Start) })
	return res, nil
}
