package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/parley-bots/parley/internal/store"
)

// Deliveries implements store.Deliveries on the turn_deliveries and
// turn_replies tables (migration 0006).
func (s *Store) Deliveries() store.Deliveries { return deliveries{s} }

type deliveries struct{ s *Store }

func (r deliveries) Begin(ctx context.Context, botID, convID string, seq int64) error {
	return r.s.InTx(ctx, func(tx store.Store) error {
		s := tx.(*Store)
		if _, err := s.exec(ctx, `DELETE FROM turn_replies WHERE bot_id = ? AND conversation_id = ? AND seq <> ?`,
			botID, convID, seq); err != nil {
			return s.fail(err, "turn delivery")
		}
		_, err := s.exec(ctx, `INSERT INTO turn_deliveries (bot_id, conversation_id, seq, replies, active) VALUES (?, ?, ?, 0, TRUE)
			ON CONFLICT (bot_id, conversation_id) DO UPDATE SET seq = excluded.seq, replies = 0, active = TRUE`,
			botID, convID, seq)
		return s.fail(err, "turn delivery")
	})
}

func (r deliveries) End(ctx context.Context, botID, convID string) error {
	_, err := r.s.exec(ctx, `UPDATE turn_deliveries SET active = FALSE WHERE bot_id = ? AND conversation_id = ?`, botID, convID)
	return r.s.fail(err, "turn delivery")
}

func (r deliveries) NextReply(ctx context.Context, botID, convID string) (seq int64, k int, messageID string, ok bool, err error) {
	err = r.s.InTx(ctx, func(tx store.Store) error {
		s := tx.(*Store)
		err := s.queryRow(ctx, `UPDATE turn_deliveries SET replies = replies + 1
			WHERE bot_id = ? AND conversation_id = ? AND active = TRUE RETURNING seq, replies`, botID, convID).Scan(&seq, &k)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return s.fail(err, "turn delivery")
		}
		ok = true
		err = s.queryRow(ctx, `SELECT message_id FROM turn_replies WHERE bot_id = ? AND conversation_id = ? AND seq = ? AND k = ?`,
			botID, convID, seq, k).Scan(&messageID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return s.fail(err, "turn reply")
	})
	return seq, k, messageID, ok, err
}

func (r deliveries) RecordReply(ctx context.Context, botID, convID string, seq int64, k int, messageID string) error {
	_, err := r.s.exec(ctx, `INSERT INTO turn_replies (bot_id, conversation_id, seq, k, message_id) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (bot_id, conversation_id, seq, k) DO UPDATE SET message_id = excluded.message_id`,
		botID, convID, seq, k, messageID)
	return r.s.fail(err, "turn reply")
}
