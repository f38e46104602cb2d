package postgres

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Warm opens n of the pool's connections at once (at most its cap; n < 0:
// the whole pool) and runs on each the reads of a user's first message in a conversation:
// its participation, its conversation (a listen's), the start its turn
// begins from. It returns how many connections it warmed.
//
// Why: a PostgreSQL session loads the catalog entries of a table and its
// indexes the first time a statement uses them, and plans each prepared
// statement once (PlanCacheMode). For the start's read, a join of five
// tables, that was 2-10 ms of the server's CPU on each connection, against
// 0.1 ms for a run of its cached plan; the benchmark's first burst of 100
// new conversations made it on connections that had not run it yet, all at
// once (PostgreSQL's statement log, README, Performance). A node warms its
// pool before it serves, so that a burst after a start (a deploy, a
// restart under traffic) finds its connections ready. A connection opened
// later (the pool refilled after a failure) warms as it is used.
func (db *DB) Warm(ctx context.Context, n int) (int, error) {
	pool := db.SQL()
	if limit := pool.Stats().MaxOpenConnections; n < 0 || n > limit {
		n = limit
	}
	// Opened side by side, and all held until every one is warm: released
	// one by one, the pool would hand the same idle connection back.
	conns := make([]*sql.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if conns[i], errs[i] = pool.Conn(ctx); errs[i] == nil {
				errs[i] = firstMessageReads(ctx, db.OnConn(conns[i]))
			}
		})
	}
	wg.Wait()
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return n, nil
}

// firstMessageReads runs the reads of a user's first message, for ids no
// row has (ids are never empty): each statement is prepared, planned and
// run once, on empty results.
func firstMessageReads(ctx context.Context, st store.Store) error {
	const none = ""
	if _, err := st.Chat().IsParticipant(ctx, none, none, none); err != nil {
		return err
	}
	if _, err := st.Chat().GetConversation(ctx, none, none); err != nil && !model.IsNotFound(err) {
		return err
	}
	_, err := st.States().GetIdleTurn(ctx, none, none, none)
	return err
}
