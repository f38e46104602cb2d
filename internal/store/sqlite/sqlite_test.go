package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlite"
	"github.com/parley-bots/parley/internal/store/sqlstore"
	"github.com/parley-bots/parley/internal/store/storetest"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.DB { return testdb.SQLite(t) })
}

func TestUpgradeTurnTables(t *testing.T) {
	path := testdb.SQLitePath(t)
	storetest.UpgradeTurnTables(t, func(version int) store.DB {
		db, err := sqlite.OpenAt(t.Context(), path, version)
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
	// The rebuilt tables are clustered on their keys (one b-tree each).
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"turns", "turn_runs"} {
		var ddl string
		if err := db.(*sqlite.DB).SQL().QueryRowContext(t.Context(), `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(ddl, "WITHOUT ROWID") {
			t.Errorf("%s is not WITHOUT ROWID: %s", table, ddl)
		}
	}
}

// TestUpgradeLeavesOrphansOut: a turn or a run whose conversation or bot
// is gone (impossible with the foreign keys on, as Parley always opens the
// file) is left out of migration 0015's copies instead of failing them,
// and the server's start with them.
func TestUpgradeLeavesOrphansOut(t *testing.T) {
	ctx := t.Context()
	path := testdb.SQLitePath(t)
	old, err := sqlite.OpenAt(ctx, path, 14)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := old.(*sqlite.DB).SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`PRAGMA foreign_keys = OFF`,
		`INSERT INTO turn_runs (bot_id, conversation_id, seq, ran_at, duration_ms, failed) VALUES ('gone', 'c', 1, 1, 1, FALSE)`,
		`INSERT INTO turns (bot_id, conversation_id, seq, kind, created_at) VALUES ('gone', 'c', 1, 'message', 1)`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	old.Close()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("the upgrade failed on orphan rows: %v", err)
	}
	defer db.Close()
	for _, table := range []string{"turns", "turn_runs"} {
		var n int
		if err := db.(*sqlite.DB).SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s has %d rows after the upgrade, want the orphan left out", table, n)
		}
	}
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Reopening an up-to-date database applies nothing and succeeds.
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	v, err := db.(*sqlite.DB).SchemaVersion(ctx)
	if err != nil || v != sqlstore.LatestVersion() {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, sqlstore.LatestVersion())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.(*sqlite.DB).SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, sqlstore.LatestVersion()+1)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrated(ctx); err == nil {
		t.Fatal("Migrated accepted a newer schema")
	}
	db.Close()
	db, err = sqlite.Open(ctx, path)
	if err == nil {
		db.Close()
		t.Fatal("opened a database newer than the binary")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Fatalf("unclear error: %v", err)
	}
}

func TestOpenRejectsMemory(t *testing.T) {
	if _, err := sqlite.Open(context.Background(), ":memory:"); err == nil {
		t.Fatal(":memory: accepted (each pooled connection would be a separate database)")
	}
}

// TestSyncMode checks that Options.SyncFull sets synchronous=FULL (2) on
// the pool's connections, and that the default is NORMAL (1).
func TestSyncMode(t *testing.T) {
	for _, tc := range []struct {
		full bool
		want int
	}{{false, 1}, {true, 2}} {
		db, err := sqlite.OpenWith(context.Background(), testdb.SQLitePath(t), sqlite.Options{SyncFull: tc.full})
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := db.(*sqlite.DB).SQL().QueryRow("PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if got != tc.want {
			t.Errorf("SyncFull %v: synchronous = %d, want %d", tc.full, got, tc.want)
		}
	}
}

func BenchmarkTurnRead(b *testing.B) { storetest.BenchTurnRead(b, testdb.SQLite(b)) }

func BenchmarkTurnStart(b *testing.B) { storetest.BenchTurnStart(b, testdb.SQLite(b)) }

func BenchmarkTurnStartCheck(b *testing.B) { storetest.BenchTurnStartCheck(b, testdb.SQLite(b)) }

// BenchmarkCommit: a user's message and its reply through the Committer,
// 32 writers (storetest.BenchCommit).
func BenchmarkCommit(b *testing.B) { storetest.BenchCommit(b, testdb.SQLite(b)) }

func BenchmarkCommitFolded(b *testing.B) { storetest.BenchCommitFolded(b, testdb.SQLite(b)) }

func BenchmarkListMessages(b *testing.B) { storetest.BenchListMessages(b, testdb.SQLite(b)) }

func BenchmarkSignalsAfter(b *testing.B) { storetest.BenchSignalsAfter(b, testdb.SQLite(b)) }

// TestBackgroundCheckpoint checks that group-committed writes reach the
// database file without anyone asking for a checkpoint, well below
// SQLite's own threshold: the pages are in the WAL at commit, and the
// file grows only when the checkpointer copies them back.
func TestBackgroundCheckpoint(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// A checkpoint now, so that the file holds the schema and what
	// follows is only in the WAL.
	if _, err := db.(*sqlite.DB).SQL().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	before := size()
	c := db.NewCommitter(nil)
	name := strings.Repeat("n", 2000)
	for i := range 200 { // ~400 KB: ~100 pages, far below the backstop
		err := c.Commit(ctx, &store.Write{Apply: func(ctx context.Context, tx store.Store) error {
			return tx.Accounts().Create(ctx, &model.Account{Email: fmt.Sprintf("a%d@example.com", i), DisplayName: name})
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for size() < before+200*2000 {
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes, %d before the writes: the WAL was not checkpointed", size(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTransient checks which real errors of SQLite count as the database
// being unavailable for now (store.Store.Transient): the write lock held
// by another connection does; a constraint, a bad statement and a
// cancelled context do not.
func TestTransient(t *testing.T) {
	db := testdb.SQLite(t)
	storetest.CheckTransient(t, db, db.(*sqlite.DB).SQL(), []storetest.TransientCase{
		{Name: "locked", Err: testdb.Unavailable(t, "sqlite"), Want: true}})
}

// TestPinnedTx checks the writer's transaction on its pinned connection,
// begun and ended by statements (sqlstore.Dialect.PinnedBegin): a failed
// or panicking function leaves nothing written, the connection goes on
// serving the next transaction, and a committed one is seen by others.
func TestPinnedTx(t *testing.T) {
	db := testdb.SQLite(t).(*sqlite.DB)
	ctx := t.Context()
	a := &model.Account{Email: "pinned@example.com"}
	if err := db.Accounts().Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	w := &model.Workspace{Name: "pinned", OwnerID: a.ID, CreatedAt: time.Now()}
	if err := db.Workspaces().Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	bot := &model.Bot{WorkspaceID: w.ID, Name: "pinned", Type: model.DefaultBotType, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	write := func(id string, then func() error) error {
		return db.InPinnedTx(ctx, func(tx store.Store) error {
			if err := tx.Chat().CreateUser(ctx, &model.ChatUser{BotID: bot.ID, ID: id, Name: id}); err != nil {
				return err
			}
			return then()
		})
	}
	exists := func(id string) bool {
		_, err := db.Chat().GetUser(ctx, bot.ID, id)
		if err != nil && !model.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if err := db.Bots().Create(ctx, bot); err != nil {
		t.Fatal(err)
	}
	failed := fmt.Errorf("refused")
	if err := write("a", func() error { return failed }); err != failed {
		t.Fatalf("failed function: err = %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was not passed on")
			}
		}()
		_ = write("b", func() error { panic("boom") })
	}()
	// A statement that fails inside the transaction: a taken key.
	if err := write("c", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := write("c", func() error { return nil }); err == nil {
		t.Fatal("a taken key was written")
	}
	if err := write("d", func() error { return nil }); err != nil {
		t.Fatalf("after a failed statement: %v", err)
	}
	for id, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true} {
		if got := exists(id); got != want {
			t.Errorf("user %s stored: %v, want %v", id, got, want)
		}
	}
}

// TestExclusive: a store opened Exclusive holds its database: opened
// Exclusive again it fails, saying so, while a store opened without
// (parley token create) opens beside it; closed, it lets it go.
func TestExclusive(t *testing.T) {
	ctx := context.Background()
	path := testdb.SQLitePath(t)
	first, err := sqlite.OpenWith(ctx, path, sqlite.Options{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	if second, err := sqlite.OpenWith(ctx, path, sqlite.Options{Exclusive: true}); err == nil {
		second.Close()
		t.Fatal("a second Exclusive store opened on the same file")
	} else if !strings.Contains(err.Error(), "in use by another Parley server") {
		t.Fatalf("second Exclusive open: %v", err)
	}
	beside, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("a store without Exclusive beside it: %v", err)
	}
	beside.Close()
	first.Close()
	again, err := sqlite.OpenWith(ctx, path, sqlite.Options{Exclusive: true})
	if err != nil {
		t.Fatalf("Exclusive once the first closed: %v", err)
	}
	again.Close()
}
