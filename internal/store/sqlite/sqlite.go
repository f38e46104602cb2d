// Package sqlite opens Parley's store on an SQLite file (pure Go driver).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// Dialect is SQLite's sqlstore dialect.
var Dialect = sqlstore.Dialect{Name: "sqlite", Classify: classify, Transient: transient, CacheStatements: true, LiteralLimits: true,
	PinnedBegin: "BEGIN IMMEDIATE", LocalWrites: true}

// Open opens (creating if needed) the database file at path and migrates it.
//
// WAL lets readers run beside the writer; busy_timeout makes writers wait
// for the lock instead of failing; _txlock=immediate takes the write lock at
// BEGIN, so a transaction never has to upgrade a read lock (the upgrade
// fails with SQLITE_BUSY at once, without waiting).
//
// maxConns caps the pool (0 = DefaultMaxConns): every connection holds
// file handles on the database, its WAL and shared memory.
func Open(ctx context.Context, path string, maxConns ...int) (store.DB, error) {
	var o Options
	if len(maxConns) > 0 {
		o.MaxConns = maxConns[0]
	}
	return OpenWith(ctx, path, o)
}

// Options tune OpenWith.
type Options struct {
	// MaxConns caps the pool (0 = DefaultMaxConns).
	MaxConns int
	// SyncFull fsyncs the WAL at every commit (synchronous=FULL): a
	// commit then survives power loss. Otherwise (synchronous=NORMAL in
	// WAL mode) a commit survives a crash of the process, and the last
	// commits before a power loss or an OS crash may be lost; the WAL is
	// fsynced at checkpoints.
	SyncFull bool
	// Exclusive holds the database for this store alone while it is open
	// (its lock file, lockDatabase): opened Exclusive again, by this
	// process or another, it fails. A server's store: where one server
	// runs per database file, every write that may change what a turn
	// starts with goes through its store, which then tells a start still
	// holds without reading it (sqlstore.Dialect.LocalWrites). Other
	// processes (parley token create) open it without, and write accounts
	// and tokens only.
	Exclusive bool

	// plainVFS opens the file through SQLite's default VFS instead of
	// walVFS (tests that compare the two).
	plainVFS bool
}

// OpenWith is Open with Options.
func OpenWith(ctx context.Context, path string, o Options) (store.DB, error) {
	return openAt(ctx, path, o, sqlstore.LatestVersion())
}

// openAt opens the store with the schema migrated up to version (the
// latest, but for upgrade tests).
func openAt(ctx context.Context, path string, o Options, version int) (store.DB, error) {
	if path == "" || path == ":memory:" || strings.Contains(path, "?") {
		return nil, fmt.Errorf("sqlite: need a plain file path, got %q", path)
	}
	unlock := func() {}
	if o.Exclusive {
		var err error
		if unlock, err = lockDatabase(path); err != nil {
			return nil, err
		}
	}
	opened := false
	defer func() {
		if !opened {
			unlock()
		}
	}()
	q := url.Values{}
	q.Set("_busy_timeout", "30000")
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL")
	if o.SyncFull {
		q.Set("_synchronous", "FULL")
	}
	q.Set("_txlock", "immediate")
	// walVFS writes a commit's WAL frames in one write (walvfs.go).
	if !o.plainVFS {
		if err := registerWALVFS(); err != nil {
			return nil, err
		}
		q.Set("vfs", walVFSName)
	}
	// The background checkpointer (checkpoint.go) does the usual work;
	// SQLite's own checkpoint is the backstop.
	q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(autocheckpointBackstop)+")")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// Keep connections (and the statements prepared on them) instead of
	// reopening the file, re-running the pragmas and re-preparing under
	// load: database/sql keeps only 2 idle connections by default. The
	// number open is capped (issue 12: 3,000 streams opened 3,000 handles
	// on the file): the group committer pins one connection for itself,
	// and a transaction holds one while it waits for the write lock, so
	// the cap leaves room for many of those beside the readers; the turn
	// order and load tests run under it. Idle ones close after a minute.
	n := DefaultMaxConns
	if o.MaxConns > 0 {
		n = max(o.MaxConns, 4)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := sqlstore.New(db, Dialect)
	if err := s.MigrateTo(ctx, version); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: migrate: %w", err)
	}
	opened = true
	return &DB{DB: s, ckpt: startCheckpointer(db, checkpointInterval), unlock: unlock}, nil
}

// DefaultMaxConns is the default cap of the SQLite pool.
const DefaultMaxConns = 64

// DB is the shared SQL store on SQLite, with group commit (groupcommit.go).
type DB struct {
	*sqlstore.DB
	ckpt   *checkpointer
	unlock func() // Options.Exclusive's lock
}

// Close stops the checkpointer, then closes the database and lets its lock
// go.
func (db *DB) Close() error {
	db.ckpt.close()
	defer db.unlock()
	return db.DB.Close()
}

func classify(err error) sqlstore.Violation {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return sqlstore.NoViolation
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.UniqueViolation
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.ForeignKeyViolation
	}
	// Without extended codes, fall back on the message.
	if e.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		switch msg := e.Error(); {
		case strings.Contains(msg, "UNIQUE constraint"), strings.Contains(msg, "PRIMARY KEY constraint"):
			return sqlstore.UniqueViolation
		case strings.Contains(msg, "FOREIGN KEY constraint"):
			return sqlstore.ForeignKeyViolation
		}
	}
	return sqlstore.NoViolation
}

// transient: the database is locked past the busy timeout, or the file
// could not be read or written (I/O error, disk full).
func transient(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}
