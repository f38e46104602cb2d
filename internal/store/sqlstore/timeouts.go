package sqlstore

import (
	"context"
	"time"

	"github.com/parley-bots/parley/internal/store"
)

// DialogTimeouts implements store.DialogTimeouts on the dialog_timeouts
// table (migration 0004).
func (s *Store) DialogTimeouts() store.DialogTimeouts { return dialogTimeouts{s} }

type dialogTimeouts struct{ s *Store }

func (r dialogTimeouts) Set(ctx context.Context, t *store.DialogTimeout) error {
	_, err := r.s.exec(ctx, `INSERT INTO dialog_timeouts (bot_id, conversation_id, user_id, due_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (bot_id, conversation_id) DO UPDATE SET user_id = excluded.user_id, due_at = excluded.due_at`,
		t.BotID, t.ConversationID, t.UserID, ms(t.DueAt))
	return r.s.fail(err, "dialog timeout")
}

func (r dialogTimeouts) Clear(ctx context.Context, botID, conversationID string) error {
	_, err := r.s.exec(ctx, `DELETE FROM dialog_timeouts WHERE bot_id = ? AND conversation_id = ?`, botID, conversationID)
	return r.s.fail(err, "dialog timeout")
}

func (r dialogTimeouts) Due(ctx context.Context, now time.Time, limit int) ([]*store.DialogTimeout, error) {
	if limit <= 0 {
		limit = 100
	}
	return upTo(ctx, r.s, "dialog timeout", limit, func(sc scanner) (*store.DialogTimeout, error) {
		var t store.DialogTimeout
		var due int64
		err := sc.Scan(&t.BotID, &t.ConversationID, &t.UserID, &due)
		t.DueAt = fromMS(due)
		return &t, err
	}, `SELECT bot_id, conversation_id, user_id, due_at FROM dialog_timeouts
		WHERE due_at <= ? ORDER BY due_at, bot_id, conversation_id`, ms(now))
}

func (r dialogTimeouts) Claim(ctx context.Context, botID, conversationID string, dueAt time.Time) (bool, error) {
	res, err := r.s.exec(ctx, `DELETE FROM dialog_timeouts WHERE bot_id = ? AND conversation_id = ? AND due_at = ?`,
		botID, conversationID, ms(dueAt))
	if err != nil {
		return false, r.s.fail(err, "dialog timeout")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// ScheduleFires implements store.ScheduleFires on the schedule_fires
// table (migration 0010).
func (s *Store) ScheduleFires() store.ScheduleFires { return scheduleFires{s} }

type scheduleFires struct{ s *Store }

func (r scheduleFires) List(ctx context.Context) ([]store.ScheduleFire, error) {
	rows, err := r.s.query(ctx, `SELECT bot_id, trigger_id, fired_up_to FROM schedule_fires ORDER BY bot_id, trigger_id`)
	if err != nil {
		return nil, r.s.fail(err, "schedule")
	}
	defer rows.Close()
	var out []store.ScheduleFire
	for rows.Next() {
		var f store.ScheduleFire
		var upTo int64
		if err := rows.Scan(&f.BotID, &f.TriggerID, &upTo); err != nil {
			return nil, r.s.fail(err, "schedule")
		}
		f.FiredUpTo = time.UnixMilli(upTo)
		out = append(out, f)
	}
	return out, r.s.fail(rows.Err(), "schedule")
}

func (r scheduleFires) Start(ctx context.Context, botID, triggerID string, firedUpTo time.Time) error {
	_, err := r.s.exec(ctx, `INSERT INTO schedule_fires (bot_id, trigger_id, fired_up_to) VALUES (?, ?, ?)
		ON CONFLICT (bot_id, trigger_id) DO NOTHING`, botID, triggerID, firedUpTo.UnixMilli())
	return r.s.fail(err, "schedule")
}

func (r scheduleFires) Advance(ctx context.Context, botID, triggerID string, from, to time.Time) (bool, error) {
	res, err := r.s.exec(ctx, `UPDATE schedule_fires SET fired_up_to = ? WHERE bot_id = ? AND trigger_id = ? AND fired_up_to = ?`,
		to.UnixMilli(), botID, triggerID, from.UnixMilli())
	if err != nil {
		return false, r.s.fail(err, "schedule")
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
