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

// convCounters are the counters the pinned writer remembers, by
// conversation; only it uses them, under pinMu.
type convCounters struct {
	m map[model.ConversationRef]convSeqs
}

func (c *convCounters) get(ref model.ConversationRef) (convSeqs, bool) {
	v, ok := c.m[ref]
	return v, ok
}

// put remembers ref's counters, forgetting another conversation's past
// maxPinnedSeqs.
func (c *convCounters) put(ref model.ConversationRef, v convSeqs) {
	if c.m == nil {
		c.m = make(map[model.ConversationRef]convSeqs)
	}
	if _, ok := c.m[ref]; !ok && len(c.m) >= maxPinnedSeqs {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[ref] = v
}

func (c *convCounters) drop(ref model.ConversationRef) { delete(c.m, ref) }

// forget drops them all: the writer's transaction rolled back, or its
// connection went.
func (c *convCounters) forget() { c.m = nil }

// number adds signals to the conversation's signal counter (last_seq)
// and turns to its turn counter (turn_seq) and returns both as they then
// are: on the pinned writer by a compare-and-set of the counters it
// remembers, else (or when that changes no row) by UPDATE … RETURNING,
// which the pinned writer then remembers. For the engines without writes
// in WITH.
func number(ctx context.Context, s *Store, ref model.ConversationRef, signals, turns int64) (last, turn int64, err error) {
	var counters *convCounters // other stores (not holding pinMu) remember nothing
	if s.pinned {
		counters = &s.e.pinnedSeqs
	}
	if counters != nil {
		if c, known := counters.get(ref); known {
			last, turn = c.last+signals, c.turn+turns
			res, err := s.exec(ctx, `UPDATE conversations SET last_seq = ?, turn_seq = ?
				WHERE bot_id = ? AND id = ? AND last_seq = ? AND turn_seq = ?`,
				last, turn, ref.BotID, ref.ConversationID, c.last, c.turn)
			if err != nil {
				return 0, 0, err
			}
			if n, err := res.RowsAffected(); err == nil && n == 1 {
				counters.put(ref, convSeqs{last, turn})
				return last, turn, nil
			}
			counters.drop(ref) // moved by another connection: read them
		}
	}
	err = s.queryRow(ctx, `UPDATE conversations SET last_seq = last_seq + ?, turn_seq = turn_seq + ?
		WHERE bot_id = ? AND id = ? RETURNING last_seq, turn_seq`,
		signals, turns, ref.BotID, ref.ConversationID).Scan(&last, &turn)
	if err != nil {
		return 0, 0, err
	}
	if counters != nil {
		counters.put(ref, convSeqs{last, turn})
	}
	return last, turn, nil
}
