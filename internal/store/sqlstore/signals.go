package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// The conversations' signal logs and pending turns (store.Signals), the
// turn pipeline's side of the chat data (chat.go has the users,
// conversations, messages and events).

type signals struct{ s *Store }

// deferRows tells whether the signals' numbers may be filled in once
// their statement ran (store.WithReturnedRow), so that it goes out with
// the write's COMMIT: in a pipelined transaction of an engine that can.
func (s *Store) deferRows(ctx context.Context) bool {
	return s.e.d.DeferredRows && s.inTx && store.Pipelined(ctx)
}

// ---- signals

// AppendSignal bumps conversations.last_seq and inserts the signal in one
// transaction (joining the caller's). The UPDATE's row lock serialises
// appenders of a conversation, and a rollback undoes the bump, so sequence
// numbers have no gaps.
func (r signals) AppendSignal(ctx context.Context, sg *model.Signal) error {
	stamp(&sg.CreatedAt, model.Now())
	if a := store.SignalsAheadOf(ctx); a.Left() > 0 && a.BotID == sg.BotID && a.ConversationID == sg.ConversationID {
		// A number taken ahead with an earlier signal of this transaction.
		if a.Deferred > 0 {
			return r.appendDeferredAhead(ctx, sg, a)
		}
		_, err := r.s.exec(ctx, `INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			sg.BotID, sg.ConversationID, a.Next, sg.Type, rawText(sg.Data), ms(sg.CreatedAt))
		if err != nil {
			return r.s.fail(err, "signal")
		}
		sg.Seq = a.Next
		a.Next++
		return nil
	}
	return r.s.tx(ctx, func(s *Store) error {
		var seq int64
		const bump = `WITH c AS (
			UPDATE conversations SET last_seq = last_seq + 1 WHERE bot_id = ? AND id = ? RETURNING bot_id, id, last_seq),
			sg AS (INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at)
				SELECT bot_id, id, last_seq, ?, ?, ? FROM c)`
		args := []any{sg.BotID, sg.ConversationID, sg.Type, rawText(sg.Data), ms(sg.CreatedAt)}
		if s.deferRows(ctx) { // sg.Seq is filled in when the statement ran
			_, err := s.exec(store.WithReturnedRow(store.WithRequiredRow(ctx, model.NotFound("conversation")), &sg.Seq, new(int64)),
				bump+requiredFrom("c", "id", "last_seq"), args...)
			return s.fail(err, "conversation")
		}
		if s.e.d.CTEWrites { // one statement instead of two
			if err := s.queryRow(ctx, bump+` SELECT last_seq FROM c`, args...).Scan(&seq); err != nil {
				return s.fail(err, "conversation")
			}
			sg.Seq = seq
			return nil
		}
		seq, _, err := number(ctx, s, model.ConversationRef{BotID: sg.BotID, ConversationID: sg.ConversationID}, 1, 0)
		if err != nil {
			return s.fail(err, "conversation")
		}
		_, err = s.exec(ctx, `INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			sg.BotID, sg.ConversationID, seq, sg.Type, rawText(sg.Data), ms(sg.CreatedAt))
		if err != nil {
			return s.fail(err, "signal")
		}
		sg.Seq = seq
		return nil
	})
}

// appendDeferredAhead inserts sg with the next of the numbers a took in a
// pipelined transaction: the conversation's last number, less those still
// unused after this one (nothing else moved it since they were taken:
// store.SignalsAhead), filled in when the statement ran.
func (r signals) appendDeferredAhead(ctx context.Context, sg *model.Signal, a *store.SignalsAhead) error {
	a.Deferred--
	_, err := r.s.exec(store.WithReturnedRow(store.WithRequiredRow(ctx, model.NotFound("conversation")), &sg.Seq, new(int64)),
		`WITH sg AS (INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at)
			SELECT bot_id, id, last_seq - ?, ?, ?, ? FROM conversations WHERE bot_id = ? AND id = ? RETURNING seq)
		`+requiredFrom("sg", "seq", "seq"),
		a.Deferred, sg.Type, rawText(sg.Data), ms(sg.CreatedAt), sg.BotID, sg.ConversationID)
	return r.s.fail(err, "signal")
}

// AppendSignalTurn appends sg and, when t is not nil, enqueues t, taking
// both conversation numbers with one UPDATE of the conversation row (and,
// where the engine allows writes in WITH, the inserts in the same
// statement: one round trip). A t with a non-zero Seq keeps it.
func (r signals) AppendSignalTurn(ctx context.Context, sg *model.Signal, t *model.Turn) error {
	if t == nil {
		return r.AppendSignal(ctx, sg)
	}
	stamp(&sg.CreatedAt, model.Now())
	stamp(&t.CreatedAt, model.Now())
	if t.BotID != sg.BotID || t.ConversationID != sg.ConversationID {
		return model.Invalid("signal and turn of different conversations")
	}
	bump := 1
	if t.Seq != 0 {
		bump = 0
	}
	if store.UnstoredTurn(ctx) == t {
		return r.appendSignalNumberTurn(ctx, sg, t, bump)
	}
	return r.s.tx(ctx, func(s *Store) error {
		var seq, tseq int64
		const bumpBoth = signalTurnCTE + `,
		tn AS (INSERT INTO turns (bot_id, conversation_id, seq, kind, ref_id, user_id, attempts, created_at)
			SELECT bot_id, id, CASE WHEN ? = 0 THEN turn_seq ELSE ? END, ?, ?, ?, ?, ? FROM c)`
		args := []any{bump, sg.BotID, sg.ConversationID,
			sg.Type, rawText(sg.Data), ms(sg.CreatedAt),
			t.Seq, t.Seq, t.Kind, t.RefID, t.UserID, t.Attempts, ms(t.CreatedAt)}
		if s.deferRows(ctx) {
			return deferSignalTurn(ctx, s, bumpBoth, sg, t, args...)
		}
		if s.e.d.CTEWrites {
			if err := s.queryRow(ctx, bumpBoth+` SELECT last_seq, turn_seq FROM c`, args...).Scan(&seq, &tseq); err != nil {
				return s.fail(err, "conversation")
			}
		} else {
			var err error
			seq, tseq, err = number(ctx, s, model.ConversationRef{BotID: sg.BotID, ConversationID: sg.ConversationID}, 1, int64(bump))
			if err != nil {
				return s.fail(err, "conversation")
			}
			if _, err := s.exec(ctx, `INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
				sg.BotID, sg.ConversationID, seq, sg.Type, rawText(sg.Data), ms(sg.CreatedAt)); err != nil {
				return s.fail(err, "signal")
			}
			if t.Seq != 0 {
				tseq = t.Seq
			}
			if _, err := s.exec(ctx, `INSERT INTO turns (bot_id, conversation_id, seq, kind, ref_id, user_id, attempts, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				t.BotID, t.ConversationID, tseq, t.Kind, t.RefID, t.UserID, t.Attempts, ms(t.CreatedAt)); err != nil {
				return s.fail(err, "turn")
			}
		}
		sg.Seq = seq
		if t.Seq == 0 {
			t.Seq = tseq
		}
		return nil
	})
}

// signalTurnCTE numbers a signal and a turn of a conversation (c: its
// new last_seq and turn_seq) and stores the signal (sg). Its arguments:
// the turn's bump, the conversation, then the signal's type, data and
// time.
const signalTurnCTE = `WITH c AS (
			UPDATE conversations SET last_seq = last_seq + 1, turn_seq = turn_seq + ?
			WHERE bot_id = ? AND id = ? RETURNING bot_id, id, last_seq, turn_seq),
		sg AS (INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at)
			SELECT bot_id, id, last_seq, ?, ?, ? FROM c)`

// deferSignalTurn runs cte (signalTurnCTE, and what follows it) in a
// pipelined transaction: sg's number, and t's unless it has one, are
// filled in when the statement ran, and a missing conversation fails it
// in the engine.
func deferSignalTurn(ctx context.Context, s *Store, cte string, sg *model.Signal, t *model.Turn, args ...any) error {
	tdest := any(&t.Seq)
	if t.Seq != 0 {
		tdest = new(int64)
	}
	_, err := s.exec(store.WithReturnedRow(store.WithRequiredRow(ctx, model.NotFound("conversation")), &sg.Seq, tdest, new(int64)),
		cte+requiredFrom("c", "id", "last_seq", "turn_seq"), args...)
	return s.fail(err, "conversation")
}

// appendSignalNumberTurn is AppendSignalTurn for a turn left unstored
// (store.WithUnstoredTurn): the signal is stored, the turn only numbered,
// and the numbers asked for by store.WithSignalsAhead taken after sg's
// (pipelined, as a count: the engine knows them once the statement ran).
func (r signals) appendSignalNumberTurn(ctx context.Context, sg *model.Signal, t *model.Turn, bump int) error {
	var more int64
	a := store.SignalsAheadOf(ctx)
	if a != nil && !a.Taken() {
		more = int64(a.Want)
	}
	return r.s.tx(ctx, func(s *Store) error {
		var seq, tseq int64
		if s.deferRows(ctx) {
			if more == 0 {
				return deferSignalTurn(ctx, s, signalTurnCTE, sg, t,
					bump, sg.BotID, sg.ConversationID, sg.Type, rawText(sg.Data), ms(sg.CreatedAt))
			}
			err := deferSignalTurn(ctx, s, `WITH c AS (
					UPDATE conversations SET last_seq = last_seq + 1 + ?, turn_seq = turn_seq + ?
					WHERE bot_id = ? AND id = ? RETURNING bot_id, id, last_seq - ? AS last_seq, turn_seq),
				sg AS (INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at)
					SELECT bot_id, id, last_seq, ?, ?, ? FROM c)`, sg, t,
				more, bump, sg.BotID, sg.ConversationID, more, sg.Type, rawText(sg.Data), ms(sg.CreatedAt))
			if err == nil {
				a.TakeDeferred(sg.BotID, sg.ConversationID, more)
			}
			return err
		}
		const bumpBoth = `UPDATE conversations SET last_seq = last_seq + 1 + ?, turn_seq = turn_seq + ?
			WHERE bot_id = ? AND id = ? RETURNING last_seq - ? AS seq, turn_seq`
		if s.e.d.CTEWrites {
			err := s.queryRow(ctx, `WITH c AS (`+bumpBoth+`),
				sg AS (INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at)
					SELECT ?, ?, seq, ?, ?, ? FROM c)
				SELECT seq, turn_seq FROM c`,
				more, bump, sg.BotID, sg.ConversationID, more, sg.BotID, sg.ConversationID, sg.Type, rawText(sg.Data), ms(sg.CreatedAt)).Scan(&seq, &tseq)
			if err != nil {
				return s.fail(err, "conversation")
			}
		} else {
			last, turn, err := number(ctx, s, model.ConversationRef{BotID: sg.BotID, ConversationID: sg.ConversationID}, 1+more, int64(bump))
			if err != nil {
				return s.fail(err, "conversation")
			}
			seq, tseq = last-more, turn
			if _, err := s.exec(ctx, `INSERT INTO signals (bot_id, conversation_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
				sg.BotID, sg.ConversationID, seq, sg.Type, rawText(sg.Data), ms(sg.CreatedAt)); err != nil {
				return s.fail(err, "signal")
			}
		}
		sg.Seq = seq
		if t.Seq == 0 {
			t.Seq = tseq
		}
		if more > 0 {
			a.Take(sg.BotID, sg.ConversationID, seq+1, seq+more)
		}
		return nil
	})
}

// GiveBackSignals implements store.Signals.
func (r signals) GiveBackSignals(ctx context.Context, botID, conversationID string, n int64) error {
	return execRequired(ctx, r.s, "conversation", model.NotFound("conversation"),
		`UPDATE conversations SET last_seq = last_seq - ? WHERE bot_id = ? AND id = ?`, n, botID, conversationID)
}

func (r signals) RedactMessageSignal(ctx context.Context, botID, conversationID, messageID, typ string, data json.RawMessage) error {
	// The message's data starts with its id (wire.MessageCreatedData).
	b, _ := json.Marshal(messageID)
	_, err := r.s.exec(ctx, `UPDATE signals SET type = ?, data = ? WHERE bot_id = ? AND conversation_id = ? AND type = ? AND data LIKE ?`,
		typ, rawText(data), botID, conversationID, model.SignalMessageCreated, `{"id":`+string(b)+`,%`)
	return r.s.fail(err, "signal")
}

func (r signals) SignalsAfter(ctx context.Context, botID, conversationID string, after int64, limit int) ([]*model.Signal, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "signals", limit, func(sc scanner) (*model.Signal, error) {
		var sg model.Signal
		var data string
		var c int64
		if err := sc.Scan(&sg.BotID, &sg.ConversationID, &sg.Seq, &sg.Type, &data, &c); err != nil {
			return nil, err
		}
		sg.Data, sg.CreatedAt = json.RawMessage(data), fromMS(c)
		return &sg, nil
	}, `SELECT bot_id, conversation_id, seq, type, data, created_at FROM signals
		WHERE bot_id = ? AND conversation_id = ? AND seq > ? ORDER BY seq`, botID, conversationID, after)
}

// ---- turns

// EnqueueTurn stores t; a zero Seq is replaced by the conversation's next
// turn number (taken like signal numbers, so concurrent enqueues are safe).
func (r signals) EnqueueTurn(ctx context.Context, t *model.Turn) error {
	stamp(&t.CreatedAt, model.Now())
	return r.s.tx(ctx, func(s *Store) error {
		if t.Seq == 0 {
			var err error
			if _, t.Seq, err = number(ctx, s, model.ConversationRef{BotID: t.BotID, ConversationID: t.ConversationID}, 0, 1); err != nil {
				return s.fail(err, "conversation")
			}
		}
		_, err := s.exec(ctx, `INSERT INTO turns (bot_id, conversation_id, seq, kind, ref_id, user_id, attempts, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			t.BotID, t.ConversationID, t.Seq, t.Kind, t.RefID, t.UserID, t.Attempts, ms(t.CreatedAt))
		return s.fail(err, "turn")
	})
}

func (r signals) PendingTurns(ctx context.Context, botID, conversationID string, limit int) ([]*model.Turn, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "turns", limit, func(sc scanner) (*model.Turn, error) {
		var t model.Turn
		var c int64
		if err := sc.Scan(&t.BotID, &t.ConversationID, &t.Seq, &t.Kind, &t.RefID, &t.UserID, &t.Attempts, &c); err != nil {
			return nil, err
		}
		t.CreatedAt = fromMS(c)
		return &t, nil
	}, `SELECT bot_id, conversation_id, seq, kind, ref_id, user_id, attempts, created_at FROM turns
		WHERE bot_id = ? AND conversation_id = ? ORDER BY seq`, botID, conversationID)
}

// PendingTurnInputs joins each pending turn with its message or event
// (LEFT JOINs: a turn whose row is gone comes back alone).
func (r signals) PendingTurnInputs(ctx context.Context, botID, conversationID string, limit int) ([]store.PendingTurn, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "turns", limit, func(sc scanner) (store.PendingTurn, error) {
		var t model.Turn
		var c int64
		var mID, mConv, mUser, mPayload, mMeta, mTags, mDir sql.NullString
		var mAt sql.NullInt64
		var eID, eConv, eUser, eType, ePayload, eStatus, eMsg sql.NullString
		var eAt sql.NullInt64
		var handoff sql.NullString
		var st turnStartCols
		if err := sc.Scan(append([]any{&t.BotID, &t.ConversationID, &t.Seq, &t.Kind, &t.RefID, &t.UserID, &t.Attempts, &c,
			&mID, &mConv, &mUser, &mPayload, &mMeta, &mTags, &mDir, &mAt,
			&eID, &eConv, &eUser, &eType, &ePayload, &eAt, &eStatus, &eMsg, &handoff}, st.dest()...)...); err != nil {
			return store.PendingTurn{}, err
		}
		t.CreatedAt = fromMS(c)
		start, err := st.start(t.BotID)
		if err != nil {
			return store.PendingTurn{}, err
		}
		p := store.PendingTurn{Turn: &t, Handoff: handoff.Valid, Start: start}
		if mID.Valid {
			m := &model.Message{BotID: t.BotID, ID: mID.String, ConversationID: mConv.String, UserID: mUser.String,
				Payload: json.RawMessage(mPayload.String), Direction: mDir.String, CreatedAt: fromMS(mAt.Int64)}
			if mMeta.Valid {
				m.Metadata = json.RawMessage(mMeta.String)
			}
			if err := fromJSON(mTags.String, &m.Tags); err != nil {
				return store.PendingTurn{}, err
			}
			p.Message = m
		}
		if eID.Valid {
			p.Event = &model.Event{BotID: t.BotID, ID: eID.String, ConversationID: eConv.String, UserID: eUser.String,
				Type: eType.String, Payload: json.RawMessage(ePayload.String), CreatedAt: fromMS(eAt.Int64),
				Status: eStatus.String, MessageID: eMsg.String}
		}
		return p, nil
	}, `SELECT t.bot_id, t.conversation_id, t.seq, t.kind, t.ref_id, t.user_id, t.attempts, t.created_at,
		m.id, m.conversation_id, m.user_id, m.payload, m.metadata, m.tags, m.direction, m.created_at,
		e.id, e.conversation_id, e.user_id, e.type, e.payload, e.created_at, e.status, e.message_id, h.status, `+turnStartSelect+`
		FROM turns t
		LEFT JOIN messages m ON t.kind = ? AND m.bot_id = t.bot_id AND m.id = t.ref_id
		LEFT JOIN events e ON t.kind = ? AND e.bot_id = t.bot_id AND e.id = t.ref_id
		LEFT JOIN handoffs h ON h.bot_id = t.bot_id AND h.conversation_id = t.conversation_id
		`+turnStartJoins+`
		WHERE t.bot_id = ? AND t.conversation_id = ? ORDER BY t.seq`,
		store.ScopeUser, store.ScopeConversation, store.ScopeBot, model.TurnMessage, model.TurnEvent, botID, conversationID)
}

// scanPendingConversation scans a row of (bot_id, conversation_id, oldest).
func scanPendingConversation(sc scanner) (model.ConversationRef, error) {
	var c model.ConversationRef
	var oldest int64
	return c, sc.Scan(&c.BotID, &c.ConversationID, &oldest)
}

// PendingConversations lists conversations with turns, oldest waiting first.
func (r signals) PendingConversations(ctx context.Context, limit int) ([]model.ConversationRef, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "turns", limit, scanPendingConversation, `SELECT bot_id, conversation_id, MIN(created_at) AS oldest FROM turns
		GROUP BY bot_id, conversation_id ORDER BY oldest, bot_id, conversation_id`)
}

// UnleasedPendingConversations joins the pending turns with their
// conversations' leases (one index lookup each).
func (r signals) UnleasedPendingConversations(ctx context.Context, leasePrefix string, limit int) ([]model.ConversationRef, error) {
	if limit <= 0 {
		limit = maxPageSize
	}
	return upTo(ctx, r.s, "turns", limit, scanPendingConversation, `SELECT t.bot_id, t.conversation_id, MIN(t.created_at) AS oldest FROM turns t
		LEFT JOIN leases l ON l.name = CAST(? AS TEXT) || t.bot_id || ':' || t.conversation_id
		WHERE l.name IS NULL OR l.expires_at <= ?
		GROUP BY t.bot_id, t.conversation_id ORDER BY oldest, t.bot_id, t.conversation_id`,
		leasePrefix, time.Now().UnixMilli())
}

// CompleteTurn is idempotent: completing a turn twice (say, after a
// recovery) is not an error.
func (r signals) CompleteTurn(ctx context.Context, botID, conversationID string, seq int64) error {
	if t := store.UnstoredTurn(ctx); t != nil && t.BotID == botID && t.ConversationID == conversationID && t.Seq == seq {
		return nil // never stored (store.WithUnstoredTurn)
	}
	_, err := r.s.exec(ctx, `DELETE FROM turns WHERE bot_id = ? AND conversation_id = ? AND seq = ?`, botID, conversationID, seq)
	return r.s.fail(err, "turn")
}

// requiredFrom is the SELECT that ends a pipelined write whose WITH query
// cte must give one row: its cols, then a division by zero unless the row
// is there (key not null; store.WithRequiredRow). The row is read from
// (VALUES (1)) v LEFT JOIN cte, not by a scalar subquery per column.
func requiredFrom(cte, key string, cols ...string) string {
	q := ` SELECT `
	for _, c := range cols {
		q += cte + `.` + c + `, `
	}
	return q + `1 / ` + asInt(cte+`.`+key+` IS NOT NULL`) + ` FROM (VALUES (1)) v LEFT JOIN ` + cte + ` ON true`
}

// RequireLastTurn fails with store.ErrTurnBetween unless the
// conversation's last turn number is seq. A read, not an UPDATE: it leaves
// no row version behind.
func (r signals) RequireLastTurn(ctx context.Context, botID, conversationID string, seq int64) error {
	return r.s.require(ctx, store.ErrTurnBetween, "conversation",
		`EXISTS (SELECT 1 FROM conversations WHERE bot_id = ? AND id = ? AND turn_seq = ?)`, botID, conversationID, seq)
}

// RequireFirstTurn fails with store.ErrTurnBetween when a turn of the
// conversation numbered before seq is pending.
func (r signals) RequireFirstTurn(ctx context.Context, botID, conversationID string, seq int64) error {
	return r.s.require(ctx, store.ErrTurnBetween, "turn",
		`NOT EXISTS (SELECT 1 FROM turns WHERE bot_id = ? AND conversation_id = ? AND seq < ?)`,
		botID, conversationID, seq)
}
