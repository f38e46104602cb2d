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
	_, err := raw.ExecContext(ctx, `INSERT INTO chat_users (bot_id, id, created_at, updated_at)
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
}
