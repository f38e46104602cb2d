package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/parley-bots/parley/internal/store"
)

// TestPinnedTxAfterFailedRollback: a transaction that ended under the
// function (here its own COMMIT, so the ROLLBACK of the failed function
// fails) costs the writer its connection, not its next transactions.
func TestPinnedTxAfterFailedRollback(t *testing.T) {
	ctx := context.Background()
	db, raw := pinnedSQLite(t)
	if _, err := raw.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	insert := func(v string, then func(s *Store) error) error {
		return db.InPinnedTx(ctx, func(tx store.Store) error {
			s := tx.(*Store)
			if _, err := s.exec(ctx, `INSERT INTO t (v) VALUES (?)`, v); err != nil {
				return err
			}
			return then(s)
		})
	}
	failed := errors.New("failed")
	err := insert("a", func(s *Store) error {
		if _, err := s.exec(ctx, "COMMIT"); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("err = %v", err)
	}
	first := db.e.pinned
	if err := insert("b", func(*Store) error { return nil }); err != nil {
		t.Fatalf("the next transaction: %v", err)
	}
	if db.e.pinned == first {
		t.Error("the connection whose ROLLBACK failed is still the writer's")
	}
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM t WHERE v = 'b'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("b committed: %d rows, err %v", n, err)
	}
}

// pinnedSQLite opens a store on a fresh SQLite file, with the pinned
// writer's dialect of the SQLite engine, and the database under it.
func pinnedSQLite(t *testing.T) (*DB, *sql.DB) {
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "p.db")+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	db := New(raw, Dialect{Name: "sqlite", CacheStatements: true, PinnedBegin: "BEGIN IMMEDIATE"})
	t.Cleanup(func() { _ = db.Close() })
	return db, raw
}
