package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestAnalyzerRefreshesGrownTables: a hot table that grew past what the
// planner knows gets ANALYZE (its pg_class.reltuples then counts its rows),
// once; a table that did not grow does not.
func TestAnalyzerRefreshesGrownTables(t *testing.T) {
	ctx := t.Context()
	db := testdb.Postgres(t).(*postgres.DB)
	postgres.StopAnalyzer(db) // the passes below are the only ones
	acct := &model.Account{Email: "a@example.com"}
	must(t, db.Accounts().Create(ctx, acct))
	ws := &model.Workspace{Name: "w", OwnerID: acct.ID}
	must(t, db.Workspaces().Create(ctx, ws))
	bot := &model.Bot{WorkspaceID: ws.ID, Name: "b", Type: model.DefaultBotType, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	must(t, db.Bots().Create(ctx, bot))

	raw := db.SQL()
	reltuples := func(table string) float64 {
		t.Helper()
		var n float64
		must(t, raw.QueryRowContext(ctx, `SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)`, table).Scan(&n))
		return n
	}
	// Nor may autovacuum's own ANALYZE come in between.
	_, err := raw.ExecContext(ctx, `ALTER TABLE chat_users SET (autovacuum_enabled = false)`)
	must(t, err)
	_, err = raw.ExecContext(ctx, `INSERT INTO chat_users (bot_id, id, created_at, updated_at)
		SELECT $1, 'u' || g, g, g FROM generate_series(1, 1500) g`, bot.ID)
	must(t, err)
	// The statistics collector reports a backend's counts when its
	// transaction ends, at most once a second (PGSTAT_MIN_INTERVAL).
	var analyzed []string
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(analyzed, "chat_users"); {
		if time.Now().After(deadline) {
			t.Fatalf("chat_users (1,500 rows, reltuples %v) not analyzed; analyzed %v", reltuples("chat_users"), analyzed)
		}
		time.Sleep(100 * time.Millisecond)
		analyzed, err = postgres.AnalyzeNow(ctx, db)
		must(t, err)
	}
	if slices.Contains(analyzed, "messages") {
		t.Errorf("messages analyzed while empty: %v", analyzed)
	}
	if n := reltuples("chat_users"); n < 1500 {
		t.Fatalf("chat_users reltuples %v after ANALYZE, want 1500", n)
	}
	analyzed, err = postgres.AnalyzeNow(ctx, db)
	must(t, err)
	if len(analyzed) != 0 {
		t.Fatalf("analyzed again without growth: %v", analyzed)
	}

	// An ANALYZE that changed nothing (a role that does not own the table
	// gets a warning) is not repeated until the table doubled again.
	_, err = raw.ExecContext(ctx, `INSERT INTO chat_users (bot_id, id, created_at, updated_at)
		SELECT $1, 'v' || g, g, g FROM generate_series(1, 3500) g`, bot.ID)
	must(t, err)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var live int64
		must(t, raw.QueryRowContext(ctx, `SELECT n_live_tup FROM pg_stat_user_tables WHERE relid = to_regclass('chat_users')`).Scan(&live))
		if live >= 5000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statistics still count %d users", live)
		}
	}
	postgres.SetAnalyzed(db, "chat_users", 4000) // as if tried at 4,000 rows, to no effect
	analyzed, err = postgres.AnalyzeNow(ctx, db)
	must(t, err)
	if slices.Contains(analyzed, "chat_users") {
		t.Fatalf("chat_users (5,000 rows) analyzed again though tried at 4,000: %v", analyzed)
	}
	postgres.SetAnalyzed(db, "chat_users", 2000)
	analyzed, err = postgres.AnalyzeNow(ctx, db)
	must(t, err)
	if !slices.Contains(analyzed, "chat_users") {
		var live int64
		var rt float64
		must(t, raw.QueryRowContext(ctx, `SELECT s.n_live_tup, c.reltuples FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relid = to_regclass('chat_users')`).Scan(&live, &rt))
		t.Fatalf("chat_users (%d rows, the planner knows %v) not analyzed: %v", live, rt, analyzed)
	}
}
