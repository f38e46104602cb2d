package sqlstore

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// The pinned writer's conversation counters (issue 18). A folded message
// numbers its signal and its turn with an UPDATE of the conversation's
// row that must answer the new numbers; on SQLite, an UPDATE … RETURNING
// costs about 2.5 times the plain UPDATE (RETURNING runs as a trigger
// program with its own frame and an ephemeral table): 5 % of the server's
// CPU in the closed loop. The pinned writer (InPinnedTx, its
// transactions one at a time under pinMu) remembers the counters it last
// wrote, and numbers with a compare-and-set, a plain UPDATE whose WHERE
// also requires the counters as remembered: one row changed means they
// were, and the new numbers follow. Nothing trusts the memory beyond
// that: a conversation whose counters another connection moved (an API
// call's signal, a give-back, a delete) changes no row and is numbered
// again with RETURNING, which refreshes it. A rolled-back transaction
// forgets them all (its writes are undone; rare).

// maxPinnedSeqs bounds the counters remembered (about 100 bytes each);
// past it, one conversation's are forgotten for each new one (whichever
// the map's iteration gives first), which is numbered again from its row
// when it comes back.
const maxPinnedSeqs = 8192

type convSeqs struct{ last, turn int64 }

// number adds signals to the conversation's signal counter (last_seq)
// and turns to its turn counter (turn_seq) and returns both as they then
// are: on the pinned writer by a compare-and-set of the counters it
// remembers, else (or when that changes no row) by UPDATE … RETURNING,
// which it then remembers. For the engines without writes in WITH.
func (s *Store) number(ctx context.Context, ref model.ConversationRef, signals, turns int64) (last, turn int64, err error) {
	if c, known := s.remembered(ref); known {
		last, turn = c.last+signals, c.turn+turns
		res, err := s.exec(ctx, `UPDATE conversations SET last_seq = ?, turn_seq = ?
			WHERE bot_id = ? AND id = ? AND last_seq = ? AND turn_seq = ?`,
			last, turn, ref.BotID, ref.ConversationID, c.last, c.turn)
		if err != nil {
			return 0, 0, err
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			s.e.pinnedSeqs[ref] = convSeqs{last, turn}
			return last, turn, nil
		}
		delete(s.e.pinnedSeqs, ref) // moved by another connection: read them
	}
	err = s.queryRow(ctx, `UPDATE conversations SET last_seq = last_seq + ?, turn_seq = turn_seq + ?
		WHERE bot_id = ? AND id = ? RETURNING last_seq, turn_seq`,
		signals, turns, ref.BotID, ref.ConversationID).Scan(&last, &turn)
	if err != nil {
		return 0, 0, err
	}
	s.rememberSeqs(ref, last, turn)
	return last, turn, nil
}

// remembered is what the pinned writer remembers of the conversation's
// counters; other stores (not holding pinMu) remember nothing.
func (s *Store) remembered(ref model.ConversationRef) (convSeqs, bool) {
	if !s.pinned {
		return convSeqs{}, false
	}
	c, ok := s.e.pinnedSeqs[ref]
	return c, ok
}

// rememberSeqs keeps the counters the pinned writer just wrote.
func (s *Store) rememberSeqs(ref model.ConversationRef, last, turn int64) {
	if !s.pinned {
		return
	}
	m := s.e.pinnedSeqs
	if m == nil {
		m = make(map[model.ConversationRef]convSeqs)
		s.e.pinnedSeqs = m
	}
	if _, ok := m[ref]; !ok && len(m) >= maxPinnedSeqs {
		for k := range m {
			delete(m, k)
			break
		}
	}
	m[ref] = convSeqs{last, turn}
}

// forgetSeqs drops what the pinned writer remembers: its transaction
// rolled back, or its connection went. Called with pinMu held.
func (e *engine) forgetSeqs() { e.pinnedSeqs = nil }
