package postgres_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestAnalyzerRefreshesGrownTables: a hot table that grew past what the
// planner knows gets ANALYZE (its pg_class.reltuples then counts its rows),
// once; a table that did not grow does not; one the planner knows at
// analyzeMaxRows or more is left to autovacuum however it grows.
func TestAnalyzerRefreshesGrownTables(t *testing.T) {
	ctx := t.Context()
	db := testdb.Postgres(t).(*postgres.DB)
	postgres.StopAnalyzer(db) // the passes below are the only ones
	bot := createBot(t, db)

	raw := db.SQL()
	reltuples := func() float64 {
		t.Helper()
		var n float64
		must(t, raw.QueryRowContext(ctx, `SELECT reltuples FROM pg_class WHERE oid = to_regclass('chat_users')`).Scan(&n))
		return n
	}
	// Nor may autovacuum's own ANALYZE come in between.
	_, err := raw.ExecContext(ctx, `ALTER TABLE chat_users SET (autovacuum_enabled = false)`)
	must(t, err)
	users := 0
	// grow adds users up to n, and waits for the statistics to count them:
	// the collector reports a backend's counts when its transaction ends,
	// at most once a second (PGSTAT_MIN_INTERVAL).
	grow := func(n int) {
		t.Helper()
		_, err := raw.ExecContext(ctx, `INSERT INTO chat_users (bot_id, id, created_at, updated_at)
			SELECT $1, 'u' || g, g, g FROM generate_series($2::int, $3::int) g`, bot.ID, users+1, n)
		must(t, err)
		users = n
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var live int64
			must(t, raw.QueryRowContext(ctx, `SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = to_regclass('chat_users')`).Scan(&live))
			if live >= int64(n) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the statistics still count %d users, want %d", live, n)
			}
		}
	}
	pass := func() []string {
		t.Helper()
		analyzed, err := postgres.AnalyzeNow(ctx, db)
		must(t, err)
		return analyzed
	}

	grow(300)
	if analyzed := pass(); !slices.Contains(analyzed, "chat_users") || slices.Contains(analyzed, "messages") {
		t.Fatalf("analyzed %v, want chat_users (300 rows) and not messages (empty)", analyzed)
	}
	if n := reltuples(); n != 300 {
		t.Fatalf("chat_users reltuples %v after ANALYZE, want 300", n)
	}
	if analyzed := pass(); len(analyzed) != 0 {
		t.Fatalf("analyzed again without growth: %v", analyzed)
	}

	// An ANALYZE that changed nothing (a role that does not own the table
	// gets a warning) is not repeated until the table doubled again.
	grow(1200)
	postgres.SetAnalyzed(db, "chat_users", 700) // as if tried at 700 rows, to no effect
	if analyzed := pass(); slices.Contains(analyzed, "chat_users") {
		t.Fatalf("chat_users (1,200 rows) analyzed again though tried at 700: %v", analyzed)
	}
	postgres.SetAnalyzed(db, "chat_users", 400)
	if analyzed := pass(); !slices.Contains(analyzed, "chat_users") {
		t.Fatalf("chat_users (1,200 rows, the planner knows %v) not analyzed: %v", reltuples(), analyzed)
	}

	// The planner now knows 1,200 rows, past analyzeMaxRows: each ANALYZE
	// would invalidate every connection's plans for statistics of the same
	// shape, so the table is autovacuum's from now on.
	grow(2700)
	postgres.SetAnalyzed(db, "chat_users", 0)
	if analyzed := pass(); slices.Contains(analyzed, "chat_users") {
		t.Fatalf("chat_users analyzed at 2,700 rows though the planner knew %v: %v", reltuples(), analyzed)
	}
}

// TestTurnReadPlansByKeyOnceAnalyzed: a pending turn's read finds its
// message and user by primary key under the generic plan PostgreSQL
// caches for a prepared statement, once the analyzer has seen the tables
// hold a few hundred rows. Planned on empty statistics, "bot_id = $1"
// looks as selective as the whole key, and the read scanned the bot's
// every message and user for each turn, for as long as the analyzer
// waited (it used to wait for 1,000 rows; autovacuum for a minute).
func TestTurnReadPlansByKeyOnceAnalyzed(t *testing.T) {
	ctx := t.Context()
	u := testdb.PostgresURL(t)
	open := func(generic bool) *postgres.DB {
		t.Helper()
		cfg, err := pgx.ParseConfig(u)
		must(t, err)
		if generic { // as after a statement's first five runs on a connection
			cfg.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		}
		db, err := postgres.OpenConfig(ctx, cfg)
		must(t, err)
		postgres.StopAnalyzer(db.(*postgres.DB)) // the test's passes are the only ones
		t.Cleanup(func() { db.Close() })         // closing twice is harmless
		return db.(*postgres.DB)
	}
	db := open(false)
	bot := createBot(t, db)
	raw := db.SQL()
	const n = 300
	for _, q := range []string{
		`ALTER TABLE messages SET (autovacuum_enabled = false)`,
		`ALTER TABLE chat_users SET (autovacuum_enabled = false)`,
		`INSERT INTO chat_users (bot_id, id, created_at, updated_at) SELECT $1, 'u' || g, g, g FROM generate_series(1, $2::int) g`,
		`INSERT INTO conversations (bot_id, id, owner_id, created_at, updated_at) SELECT $1, 'c' || g, 'u' || g, g, g FROM generate_series(1, $2::int) g`,
		`INSERT INTO messages (bot_id, id, conversation_id, user_id, payload, direction, created_at)
			SELECT $1, 'm' || g, 'c' || g, 'u' || g, '{"type":"text","text":"hi"}', 'incoming', g FROM generate_series(1, $2::int) g`,
		`INSERT INTO turns (bot_id, conversation_id, seq, kind, ref_id, user_id, created_at) VALUES ($1, 'c7', 1, 'message', 'm7', 'u7', 7)`,
	} {
		var args []any
		switch {
		case strings.Contains(q, "$2"):
			args = []any{bot.ID, n}
		case strings.Contains(q, "$1"):
			args = []any{bot.ID}
		}
		_, err := raw.ExecContext(ctx, q, args...)
		must(t, err)
	}
	var analyzed []string
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(analyzed, "messages") || !slices.Contains(analyzed, "chat_users"); {
		if time.Now().After(deadline) {
			t.Fatalf("messages and chat_users (%d rows each) not both analyzed: %v", n, analyzed)
		}
		time.Sleep(100 * time.Millisecond)
		got, err := postgres.AnalyzeNow(ctx, db)
		must(t, err)
		analyzed = append(analyzed, got...)
	}
	must(t, db.Close()) // a backend reports its statistics when it ends

	indexReads := func() int64 {
		t.Helper()
		c, err := pgx.Connect(ctx, u)
		must(t, err)
		defer c.Close(ctx)
		var reads int64
		must(t, c.QueryRow(ctx, `SELECT COALESCE(SUM(idx_tup_read), 0) FROM pg_stat_user_indexes
			WHERE relid IN (to_regclass('messages'), to_regclass('chat_users'))`).Scan(&reads))
		return reads
	}
	before := indexReads()
	db = open(true)
	const reads = 20
	for range reads {
		got, err := db.Signals().PendingTurnInputs(ctx, bot.ID, "c7", 10)
		must(t, err)
		if len(got) != 1 || got[0].Message == nil || got[0].Message.ID != "m7" || got[0].Start.User == nil || got[0].Start.User.ID != "u7" {
			t.Fatalf("PendingTurnInputs = %+v, want turn 1 with message m7 and user u7", got)
		}
	}
	must(t, db.Close())
	// By key, each read takes one index entry of each table; a scan of the
	// bot's rows takes n. The backends report as they exit, after Close
	// returned: wait for at least the reads by key.
	d := indexReads() - before
	for deadline := time.Now().Add(5 * time.Second); d < 2*reads && time.Now().Before(deadline); d = indexReads() - before {
		time.Sleep(50 * time.Millisecond)
	}
	if d < 2*reads {
		t.Fatalf("the statistics count %d index entries read by %d reads of a pending turn, want at least %d", d, reads, 2*reads)
	}
	if d > 4*reads {
		t.Fatalf("%d reads of a pending turn read %d index entries of messages and chat_users (%d rows each), want at most %d",
			reads, d, n, 4*reads)
	}
	t.Logf("%d reads of a pending turn read %d index entries of messages and chat_users", reads, d)
}

// createBot stores a bot with its account and workspace.
func createBot(t *testing.T, db *postgres.DB) *model.Bot {
	t.Helper()
	ctx := t.Context()
	acct := &model.Account{Email: "a@example.com"}
	must(t, db.Accounts().Create(ctx, acct))
	ws := &model.Workspace{Name: "w", OwnerID: acct.ID}
	must(t, db.Workspaces().Create(ctx, ws))
	bot := &model.Bot{WorkspaceID: ws.ID, Name: "b", Type: model.DefaultBotType, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	must(t, db.Bots().Create(ctx, bot))
	return bot
}
