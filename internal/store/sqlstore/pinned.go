package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/parley-bots/parley/internal/store"
)

// InPinnedTx is InTx on one connection kept for it, calls running one at
// a time: a single writer that always uses the same connection keeps that
// connection's page cache warm (SQLite discards a connection's cache when
// another connection wrote since its last transaction) and its statements
// prepared. For the group commit's writer.
//
// With Dialect.PinnedBegin, the transaction is begun, committed and
// rolled back by statements on the connection, not by a database/sql Tx:
// inside a Tx, database/sql starts a goroutine for every query to close
// its rows should the Tx end (whatever the query's context), and binds
// every prepared statement to the Tx anew, allocating and locking; the
// pinned connection's own statements need neither. The connection is
// this writer's alone (pinMu), so nothing else runs on it meanwhile.
func (db *DB) InPinnedTx(ctx context.Context, fn func(tx store.Store) error) (err error) {
	e := db.e
	e.pinMu.Lock()
	defer e.pinMu.Unlock()
	e.bgMu.Lock()
	closed := e.closed
	e.bgMu.Unlock()
	if closed {
		return db.InTx(ctx, fn) // fails as the database is closed
	}
	if e.pinned == nil {
		c, err := e.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		e.pinned = c
	}
	if e.d.PinnedBegin == "" {
		return db.inPinnedSQLTx(ctx, fn)
	}
	st := &Store{e: e, q: e.pinned, inTx: true, pinned: true, nocache: db.nocache}
	defer e.changes.txEnded(st) // after the COMMIT or ROLLBACK below
	if _, err := st.exec(ctx, e.d.PinnedBegin); err != nil {
		// A broken connection: drop it, the next call opens another.
		e.dropPinned(true)
		return fmt.Errorf("begin: %w", err)
	}
	rollback := func() {
		e.pinnedSeqs.forget() // its numbers are undone
		if _, err := st.exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
			e.dropPinned(true) // the transaction may still be open on it
		}
	}
	defer func() {
		if p := recover(); p != nil {
			rollback()
			panic(p)
		}
	}()
	if err := fn(st); err != nil {
		rollback()
		return err
	}
	if _, err := st.exec(ctx, "COMMIT"); err != nil {
		rollback()
		return (&Store{e: e}).commitFailed(err)
	}
	return nil
}

// inPinnedSQLTx is InPinnedTx in a database/sql Tx on the pinned
// connection.
func (db *DB) inPinnedSQLTx(ctx context.Context, fn func(tx store.Store) error) error {
	e := db.e
	tx, err := e.pinned.BeginTx(ctx, nil)
	if err != nil {
		// A broken connection: drop it, the next call opens another.
		e.dropPinned(false)
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	st := &Store{e: e, q: tx, tx_: tx, inTx: true, nocache: db.nocache}
	defer e.changes.txEnded(st)
	if err := fn(st); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return (&Store{e: e}).commitFailed(err)
	}
	return nil
}

// pinnedStmt returns q prepared on the pinned connection, or nil to run it
// unprepared. Called with pinMu held.
func (e *engine) pinnedStmt(ctx context.Context, q string) *sql.Stmt {
	if st := e.pinnedStmts[q]; st != nil {
		return st
	}
	if len(e.pinnedStmts) >= maxStmts {
		return nil
	}
	st, err := e.pinned.PrepareContext(context.WithoutCancel(ctx), q)
	if err != nil {
		return nil // running it unprepared reports the error
	}
	if e.pinnedStmts == nil {
		e.pinnedStmts = make(map[string]*sql.Stmt)
	}
	e.pinnedStmts[q] = st
	return st
}

// dropPinned closes the pinned connection's statements and gives it back
// to the pool; with discard, it is closed instead (it may hold a
// transaction still open, which the pool would hand to someone else).
// Called with pinMu held.
func (e *engine) dropPinned(discard bool) {
	e.pinnedSeqs.forget()
	for q, st := range e.pinnedStmts {
		_ = st.Close()
		delete(e.pinnedStmts, q)
	}
	if e.pinned == nil {
		return
	}
	if discard {
		// database/sql closes a connection whose Raw returns ErrBadConn.
		_ = e.pinned.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = e.pinned.Close()
	e.pinned = nil
}
