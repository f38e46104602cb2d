package postgres

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// analyzeEvery is how often the analyzer looks at the hot tables' counters:
// a query of pg_stat_user_tables, which costs nothing measurable.
const analyzeEvery = 2 * time.Second

// analyzeMinRows is the size from which a hot table gets its statistics
// here: autovacuum's own base threshold (autovacuum_analyze_threshold), but
// looked at every analyzeEvery instead of once a minute. A few dozen rows
// of one bot are enough for the planner to see that bot_id alone is not
// selective; until then a generic plan may find a row by bot_id and scan
// (TestTurnReadPlansByKeyOnceAnalyzed: 568 index entries per turn read at
// 300 rows, where 1,000 was the threshold).
const analyzeMinRows = 50

// analyzeMaxRows is the planner's count past which a hot table is left to
// autovacuum. By then its statistics have the shape that picks the right
// plans (one bot, many rows: TestTurnReadPlansByKeyOnceAnalyzed plans by
// key at 300), and each ANALYZE more here only invalidated every
// connection's cached plans. Their replanning made the reply latency's
// tail: in PostgreSQL's log (log_min_duration_statement) under the
// benchmark's 1,000 messages/s, each ANALYZE of messages (50-190 ms) was
// followed by binds of the pending turns' join taking 5-25 ms on most
// connections at once, while a bind of its cached plan takes microseconds.
const analyzeMaxRows = 1_000

// hotTables are the tables every chat message reads or writes through
// prepared statements (the pending turns' join, the signal appends).
var hotTables = []string{"messages", "events", "chat_users", "conversations", "signals", "states", "turn_runs"}

// analyzer refreshes the statistics of the hot tables once they hold more
// than twice the rows the planner knows of (or it knows none) while it
// knows fewer than analyzeMaxRows, without waiting for autovacuum, which
// looks only once a minute (autovacuum_naptime) and may be busy elsewhere.
//
// Why: PostgreSQL plans a prepared statement generically after five runs
// on a connection and keeps that plan until the table's statistics change.
// On a new database the first plans are made on empty tables, for which an
// index of (bot_id, conversation_id, created_at, id) looks as good as the
// primary key (bot_id, id) to find one message: the pending turns' join
// then scanned a bot's whole message index for each turn (9,000 buffers and
// 90 ms for 32 turns, seen with auto_explain under the benchmark), for the
// minute until autovacuum came, and far longer when it was busy. Fresh
// statistics (one bot, many messages) make the planner pick the primary
// key, and ANALYZE invalidates the cached plans. Because a table must
// double between two runs, the work stays a small fraction of the writes.
// Several nodes on one database each run it; an ANALYZE more costs little.
type analyzer struct {
	db   *sql.DB
	done chan struct{}
	// ctx ends with close, and with it a pass in progress: Close does not
	// wait out a query to a database that no longer answers.
	ctx    context.Context
	cancel context.CancelFunc
	// tried is each table's row count when it was last analyzed here: a
	// table is tried again only once it doubled since, so an ANALYZE that
	// did nothing (a role that does not own the table gets a warning, not
	// an error) is not repeated every pass.
	tried map[string]int64
}

func startAnalyzer(db *sql.DB) *analyzer {
	a := &analyzer{db: db, done: make(chan struct{}), tried: map[string]int64{}}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	go a.run()
	return a
}

func (a *analyzer) run() {
	defer close(a.done)
	t := time.NewTicker(analyzeEvery)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
			if _, err := a.analyze(a.ctx); err != nil {
				slog.Debug("postgres: analyzing the hot tables", "err", err)
			}
		}
	}
}

// analyze runs ANALYZE on the hot tables of the current schema that need
// it and returns their names. Passes run one at a time (run, or a test).
func (a *analyzer) analyze(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// pg_class.reltuples is the row count the planner knows (-1: never
	// counted); n_live_tup the count now. Tables whose rows churn (turns)
	// do not grow, and are left to autovacuum.
	rows, err := a.db.QueryContext(ctx, `SELECT s.relname, s.n_live_tup FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
		WHERE s.schemaname = current_schema() AND s.relname = ANY($1)
		AND s.n_live_tup >= $2 AND s.n_live_tup > 2 * c.reltuples AND c.reltuples < $3`,
		hotTables, analyzeMinRows, analyzeMaxRows)
	if err != nil {
		return nil, err
	}
	var due []string
	var live []int64
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			rows.Close()
			return nil, err
		}
		if n > 2*a.tried[name] {
			due, live = append(due, name), append(live, n)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	for i, name := range due { // names from the fixed list above
		if _, err := a.db.ExecContext(ctx, `ANALYZE `+name); err != nil {
			return nil, err
		}
		a.tried[name] = live[i]
	}
	return due, nil
}

func (a *analyzer) close() {
	a.cancel()
	<-a.done
}
