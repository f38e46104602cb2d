// Package sqlstore implements store.DB once over database/sql for both
// SQLite and PostgreSQL. Queries are written with ? placeholders and rebound
// to $n for PostgreSQL; a Dialect carries the few other differences.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Violation is the kind of constraint an error reports.
type Violation int

const (
	NoViolation Violation = iota
	UniqueViolation
	ForeignKeyViolation
)

// Dialect carries what differs between engines.
type Dialect struct {
	// Name is returned by Engine: "sqlite" or "postgres".
	Name string
	// Numbered makes placeholders $1, $2, ... instead of ?.
	Numbered bool
	// Classify tells which constraint, if any, err violates.
	Classify func(err error) Violation
	// Table, when set, names the table of a violated constraint (""
	// when unknown): a pipelined transaction reports a queued
	// statement's error at a later call, whose resource is another.
	Table func(err error) string
	// Transient tells whether err is the engine being unavailable for
	// now (store.Store.Transient); nil: never.
	Transient func(err error) bool
	// MigrationLock, when set, runs first in every migration transaction so
	// that processes starting together apply migrations one at a time.
	MigrationLock string
	// CacheStatements keeps a prepared statement per distinct query and
	// reuses it (inside transactions through Tx.StmtContext), so hot
	// queries are parsed once per connection. For drivers without a
	// statement cache of their own (SQLite; pgx caches already).
	CacheStatements bool
	// LiteralLimits writes a query's LIMIT into its text instead of
	// binding it (limitClause): SQLite parses a statement with a bound
	// LIMIT again at every run.
	LiteralLimits bool
	// LocalWrites says every write that may change what a turn starts
	// with goes through this process's store (SQLite: the server holds its
	// database file alone, sqlite.Options.Exclusive; parley token create
	// writes accounts and tokens only), so that a start read while no such
	// write ran holds until one begins (startmark.go), with no read to
	// tell.
	LocalWrites bool
	// CTEWrites says data-modifying statements may appear in WITH (one
	// round trip for several writes); PostgreSQL has them, SQLite not.
	CTEWrites bool
	// DeferredRows says the driver honours store.WithRequiredRow and
	// store.WithReturnedRow in pipelined transactions (PostgreSQL's), and
	// that a required row's statement fails with a division by zero when
	// it finds none.
	DeferredRows bool
	// UnkeyedChat says messages and signals have no foreign key to their
	// conversation (migration 0016, PostgreSQL): CreateMessage checks
	// that the conversation exists itself.
	UnkeyedChat bool
	// KeyLocks, when set, is the statement that takes a lock until the
	// transaction ends on each of its one argument's keys (an array of
	// 64-bit integers), in the array's order (States.LockShared); empty:
	// the engine runs one writer at a time and needs none.
	KeyLocks string
	// PinnedBegin, when set, is the statement that begins InPinnedTx's
	// transactions on the pinned connection, which then runs without a
	// database/sql Tx (SQLite's "BEGIN IMMEDIATE"); empty: a Tx.
	PinnedBegin string
	// Committer, when set, is the engine's store.Committer (NewCommitter);
	// nil: each write in a transaction of its own.
	Committer func(db *DB, after store.AfterCommit) store.Committer
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type engine struct {
	d     Dialect
	db    *sql.DB
	cache sync.Map // ?-query -> $n-query

	stmts     sync.Map // query -> *sql.Stmt (Dialect.CacheStatements)
	preparing sync.Map // query -> true while prepared in the background
	bgMu      sync.Mutex
	bg        sync.WaitGroup // background prepares, waited for by Close
	closed    bool           // under bgMu
	nstmts    atomic.Int32

	changes *startChanges // Dialect.LocalWrites; else nil

	pinMu       sync.Mutex           // serialises InPinnedTx; guards pinned, pinnedStmts and pinnedSeqs
	pinned      *sql.Conn            // InPinnedTx's connection, opened on first use
	pinnedStmts map[string]*sql.Stmt // statements prepared on pinned (Dialect.PinnedBegin)
	pinnedSeqs  convCounters         // counters pinned wrote last (pinnedseqs.go)
}

// maxStmts bounds the statement cache: queries are a fixed set of
// constants plus the few shapes list builds, so this is never reached in
// practice; past it, queries run unprepared.
const maxStmts = 512

// Store implements store.Store on a database or inside a transaction.
type Store struct {
	e   *engine
	q   querier
	tx_ *sql.Tx // when inTx
	// txStmts are the cached statements bound to tx_, each bound once per
	// transaction: a group commit's batch runs the same few statements for
	// each of its writes, and each binding allocates and locks.
	txStmts map[string]*sql.Stmt
	inTx    bool
	// pinned is set in InPinnedTx's transaction begun by a statement
	// (Dialect.PinnedBegin): q is the pinned connection, whose statements
	// are prepared on it (engine.pinnedStmts).
	pinned bool
	// nocache runs queries unprepared (migrations: DDL, run once).
	nocache bool
	// changeOpen is set in a transaction that ran a statement that may
	// change a turn's start, until it ends (startChanges.txEnded).
	changeOpen bool
}

// DB implements store.DB.
type DB struct {
	*Store
}

var _ store.DB = (*DB)(nil)

// New wraps an open database. Call Migrate before use.
func New(db *sql.DB, d Dialect) *DB {
	if d.Classify == nil {
		d.Classify = func(error) Violation { return NoViolation }
	}
	e := &engine{d: d, db: db}
	if d.LocalWrites {
		e.changes = newStartChanges()
	}
	return &DB{Store: &Store{e: e, q: db}}
}

// SQL returns the underlying database (for tests and tooling).
func (db *DB) SQL() *sql.DB { return db.e.db }

// OnConn is the store on c, one connection taken from the pool
// (SQL().Conn): a warm-up runs its reads there, one connection at a time
// being what PostgreSQL's caches are per.
func (db *DB) OnConn(c *sql.Conn) store.Store { return &Store{e: db.e, q: c} }

// Stats reports the connection pool.
func (db *DB) Stats() sql.DBStats { return db.e.db.Stats() }

func (db *DB) Ping(ctx context.Context) error { return db.e.db.PingContext(ctx) }
func (db *DB) Engine() string                 { return db.e.d.Name }

// Transient implements store.Store. A context that ended is not the
// database's doing: a turn past its time limit fails, it is not retried.
func (s *Store) Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || s.e.d.Transient == nil {
		return false
	}
	return errors.Is(err, driver.ErrBadConn) || s.e.d.Transient(err)
}

// Close closes the cached statements and the database.
func (db *DB) Close() error {
	db.e.bgMu.Lock()
	db.e.closed = true
	db.e.bgMu.Unlock()
	db.e.bg.Wait() // no connection opens behind Close
	db.e.pinMu.Lock()
	db.e.dropPinned(false)
	db.e.pinMu.Unlock()
	db.e.stmts.Range(func(k, v any) bool {
		_ = v.(*sql.Stmt).Close()
		db.e.stmts.Delete(k)
		return true
	})
	return db.e.db.Close()
}

func (s *Store) Accounts() store.Accounts         { return accounts{s} }
func (s *Store) Tokens() store.Tokens             { return tokens{s} }
func (s *Store) Workspaces() store.Workspaces     { return workspaces{s} }
func (s *Store) Members() store.Members           { return members{s} }
func (s *Store) Bots() store.Bots                 { return bots{s} }
func (s *Store) Audit() store.Audit               { return audit{s} }
func (s *Store) Logs() store.Logs                 { return logs{s} }
func (s *Store) Issues() store.Issues             { return issues{s} }
func (s *Store) Chat() store.Chat                 { return chat{s} }
func (s *Store) Signals() store.Signals           { return signals{s} }
func (s *Store) States() store.States             { return states{s} }
func (s *Store) Leases() store.Leases             { return leases{s} }
func (s *Store) Integrations() store.Integrations { return integrations{s} }

// InTx runs fn in a transaction; inside one already, fn joins it.
func (s *Store) InTx(ctx context.Context, fn func(tx store.Store) error) (err error) {
	if s.inTx {
		return fn(s)
	}
	tx, err := s.e.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	st := &Store{e: s.e, q: tx, tx_: tx, inTx: true, nocache: s.nocache}
	defer s.e.changes.txEnded(st)
	if err := fn(st); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.commitFailed(err)
	}
	return nil
}

// tx runs fn in a transaction, typed for internal use.
func (s *Store) tx(ctx context.Context, fn func(s *Store) error) error {
	return s.InTx(ctx, func(tx store.Store) error { return fn(tx.(*Store)) })
}

// bind rewrites ? placeholders to $n for engines that need it, caching the
// result since the same few queries run over and over.
func (s *Store) bind(q string) string {
	if !s.e.d.Numbered {
		return q
	}
	if v, ok := s.e.cache.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	r := b.String()
	s.e.cache.Store(q, r)
	return r
}

// stmt returns the cached prepared statement for q (bound to the
// transaction when in one), or nil to run q unprepared.
func (s *Store) stmt(ctx context.Context, q string) *sql.Stmt {
	if !s.e.d.CacheStatements || s.nocache {
		return nil
	}
	if s.pinned {
		return s.e.pinnedStmt(ctx, q)
	}
	v, ok := s.e.stmts.Load(q)
	if !ok {
		if s.e.nstmts.Load() >= maxStmts {
			return nil
		}
		if s.tx_ != nil {
			// Preparing on the database needs a second connection, which
			// may not come while this transaction holds the write lock:
			// run this one unprepared, prepare for the next.
			if _, busy := s.e.preparing.LoadOrStore(q, true); !busy {
				s.e.bgMu.Lock()
				if !s.e.closed {
					s.e.bg.Add(1)
					go func() {
						defer s.e.bg.Done()
						defer s.e.preparing.Delete(q)
						s.e.prepare(context.WithoutCancel(ctx), q)
					}()
				}
				s.e.bgMu.Unlock()
			}
			return nil
		}
		if v, ok = s.e.prepare(ctx, q); !ok {
			return nil // running it unprepared reports the error
		}
	}
	st := v.(*sql.Stmt)
	if s.tx_ != nil {
		if bound := s.txStmts[q]; bound != nil {
			return bound
		}
		// Reuses the statement prepared on the transaction's connection
		// (preparing it there the first time).
		bound := s.tx_.StmtContext(ctx, st)
		if s.txStmts == nil {
			s.txStmts = make(map[string]*sql.Stmt, 16)
		}
		s.txStmts[q] = bound
		return bound
	}
	return st
}

// prepare prepares q on the database and caches it.
func (e *engine) prepare(ctx context.Context, q string) (any, bool) {
	p, err := e.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, false
	}
	v, loaded := e.stmts.LoadOrStore(q, p)
	if loaded {
		_ = p.Close()
	} else {
		e.nstmts.Add(1)
	}
	return v, true
}

func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	defer s.e.changes.statement(s, q, false)()
	q = s.bind(q)
	if st := s.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.q.ExecContext(ctx, q, args...)
}

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	s.e.changes.statement(s, q, true)
	q = s.bind(q)
	if st := s.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.q.QueryContext(ctx, q, args...)
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	s.e.changes.statement(s, q, true)
	q = s.bind(q)
	if st := s.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.q.QueryRowContext(ctx, q, args...)
}

// execOne runs a statement that must touch a row: none is NotFound(what).
func (s *Store) execOne(ctx context.Context, what, q string, args ...any) error {
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return s.fail(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return model.NotFound(what)
	}
	return nil
}

// execRequired runs q, a write that must change a row, and fails with
// missing when it changes none: in a pipelined transaction of an engine
// that can (deferRows), in the engine (RETURNING 1, then a division by
// zero: store.WithRequiredRow), so that it goes out with the COMMIT;
// elsewhere by its row count. Driver errors are fail's, of what.
func execRequired(ctx context.Context, s *Store, what string, missing error, q string, args ...any) error {
	if s.deferRows(ctx) {
		_, err := s.exec(store.WithRequiredRow(ctx, missing), `WITH w AS (`+q+` RETURNING 1) SELECT 1 / `+asInt(`EXISTS (SELECT 1 FROM w)`), args...)
		return s.fail(err, what)
	}
	res, err := s.exec(ctx, q, args...)
	n, err := affected(res, err)
	if err != nil {
		return s.fail(err, what)
	}
	if n == 0 {
		return missing
	}
	return nil
}

// fail turns driver errors into model errors.
func (s *Store) fail(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return model.NotFound(what)
	}
	switch s.e.d.Classify(err) {
	case UniqueViolation:
		if s.e.d.Table != nil {
			if noun := tableNouns[s.e.d.Table(err)]; noun != "" {
				what = noun
			}
		}
		return model.Conflict("%s already exists", what)
	case ForeignKeyViolation:
		return model.Errorf(model.ErrNotFound, "%s refers to a resource that was not found", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// require fails with err unless cond, an SQL condition, holds. In a
// pipelined transaction (deferRows) it is written to fail in the server
// instead (a division by zero, store.WithRequiredRow), so that it needs no
// answer before the COMMIT. A condition (EXISTS, not a COUNT) keeps an
// aggregate out of the statement: PostgreSQL's executor sets one up at
// every run (the wrappers' ExecInitAgg was 7 % of its CPU in the closed
// loop, perf record).
func (s *Store) require(ctx context.Context, err error, what, cond string, args ...any) error {
	if s.deferRows(ctx) {
		_, qerr := s.exec(store.WithRequiredRow(ctx, err), `SELECT 1 / `+asInt(cond), args...)
		return s.fail(qerr, what)
	}
	var n int
	if qerr := s.queryRow(ctx, `SELECT `+asInt(cond), args...).Scan(&n); qerr != nil {
		return s.fail(qerr, what)
	}
	if n == 0 {
		return err
	}
	return nil
}

// asInt is cond as an integer: 1 when it holds, else 0 (a division by it
// fails).
func asInt(cond string) string { return `CAST(` + cond + ` AS integer)` }

// commitFailed is the error of a failed COMMIT. A pipelined transaction's
// queued statements go out with its COMMIT, so their errors come back
// here: the driver's own (a fenced write, a conversation not found) as
// they are, a taken id or a missing row a key refers to as at the
// statement.
func (s *Store) commitFailed(err error) error {
	var known *model.Error
	if errors.Is(err, store.ErrFenced) || errors.As(err, &known) {
		return err
	}
	switch s.e.d.Classify(err) {
	case UniqueViolation, ForeignKeyViolation:
		what := "record"
		if s.e.d.Table != nil && tableNouns[s.e.d.Table(err)] != "" {
			what = tableNouns[s.e.d.Table(err)]
		}
		return s.fail(err, what)
	}
	return fmt.Errorf("commit: %w", err)
}

// tableNouns names, in errors, the resource of the tables whose unique
// keys the chat pipeline's statements can hit.
var tableNouns = map[string]string{
	"messages": "message", "signals": "signal", "turns": "turn", "events": "event",
	"conversations": "conversation", "chat_users": "user", "participants": "participant",
}

// NewCommitter implements store.DB: each write in a transaction of its
// own (the sqlite package overrides it with group commit).
func (db *DB) NewCommitter(after store.AfterCommit) store.Committer {
	if db.e.d.Committer != nil {
		return db.e.d.Committer(db, after)
	}
	return store.DirectCommitter{DB: db, After: after}
}
