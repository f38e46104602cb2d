// Package postgres opens Parley's store on PostgreSQL through pgx's
// database/sql driver.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" driver

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// Dialect is PostgreSQL's sqlstore dialect. Migrations take a transaction
// advisory lock keyed by the current schema, so nodes migrating the same
// schema queue up while different schemas (one per test) do not.
var Dialect = sqlstore.Dialect{
	Name:          "postgres",
	Numbered:      true,
	CTEWrites:     true,
	DeferredRows:  true,
	UnkeyedChat:   true,
	Committer:     newCommitter,
	Classify:      classify,
	Table:         table,
	Transient:     transient,
	MigrationLock: `SELECT pg_advisory_xact_lock(1885434988, hashtext(COALESCE(current_schema(), '')))`,
	// The one-key form: its locks never meet the migrations' two-key ones.
	KeyLocks: `SELECT pg_advisory_xact_lock(k) FROM unnest(?::bigint[]) AS k`,
}

// IdleInTransactionTimeout is the server-side idle_in_transaction_session_timeout
// of Parley's sessions (unless the URL sets one): a node stopped or cut
// off in the middle of a transaction (a paused VM, SIGSTOP) would
// otherwise keep its row locks, and the node taking its conversations over
// would wait on them; PostgreSQL ends such a session after this long, and
// its transaction commits nothing. Parley's transactions never wait
// between statements.
const IdleInTransactionTimeout = time.Second

// PlanCacheMode is the plan_cache_mode of Parley's sessions (unless the URL
// sets one; PostgreSQL 12 or later, which the schema's generated columns
// need already): its statements are prepared once per connection (pgx's
// statement cache) and find rows by key or by a key's prefix, so the
// generic plan that PostgreSQL settles on after five runs is the plan
// they keep. In the
// default mode (auto) each of those five runs on each connection plans the
// statement for its values first: the read of a turn's start took 0.4-3 ms
// to bind in each of them (a join of five tables), against 0.02-0.1 ms for
// its cached generic plan, and a burst of new conversations on a fresh
// node made them all at once, on every connection (PostgreSQL's statement
// log under parley-bench, README, Performance). Forced, a statement is
// planned once per connection, and again only when the statistics of its
// tables change (ANALYZE invalidates cached plans in either mode).
const PlanCacheMode = "force_generic_plan"

// DefaultMaxConns is the default cap of the PostgreSQL pool.
const DefaultMaxConns = 32

// Open connects to the database at url (a postgres:// URL or key=value DSN;
// a search_path parameter selects the schema) and migrates it.
// maxConns caps the pool (0 = DefaultMaxConns).
func Open(ctx context.Context, url string, maxConns ...int) (store.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return openConfig(ctx, cfg, sqlstore.LatestVersion(), maxConns...)
}

// openConfig opens the store with the schema migrated up to version (the
// latest, but for upgrade tests).
func openConfig(ctx context.Context, cfg *pgx.ConnConfig, version int, maxConns ...int) (store.DB, error) {
	if _, set := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.Itoa(int(IdleInTransactionTimeout.Milliseconds()))
	}
	if _, set := cfg.RuntimeParams["plan_cache_mode"]; !set {
		cfg.RuntimeParams["plan_cache_mode"] = PlanCacheMode
	}
	db := sql.OpenDB(pipeConnector{stdlib.GetConnector(*cfg)})
	n := DefaultMaxConns
	if len(maxConns) > 0 && maxConns[0] > 0 {
		n = max(maxConns[0], 4)
	}
	db.SetMaxOpenConns(n)
	// As many idle as open: under load, closing and reopening connections
	// (TCP, authentication, pgx statement cache) cost more than the queries.
	db.SetMaxIdleConns(n)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := sqlstore.New(db, Dialect)
	if err := s.MigrateTo(ctx, version); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	return &DB{DB: s, analyzer: startAnalyzer(db)}, nil
}

// DB is the shared SQL store on PostgreSQL, with the hot tables' statistics
// kept fresh (analyze.go).
type DB struct {
	*sqlstore.DB
	analyzer *analyzer
}

// Close stops the analyzer, then closes the database.
func (db *DB) Close() error {
	db.analyzer.close()
	return db.DB.Close()
}

func classify(err error) sqlstore.Violation {
	var e *pgconn.PgError
	if !errors.As(err, &e) {
		return sqlstore.NoViolation
	}
	switch e.Code {
	case "23505": // unique_violation
		return sqlstore.UniqueViolation
	case "23503": // foreign_key_violation
		return sqlstore.ForeignKeyViolation
	}
	return sqlstore.NoViolation
}

// table is the table of the constraint err violates.
func table(err error) string {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e.TableName
	}
	return ""
}

// transient: the server could not be reached or refused the connection,
// the connection broke, the server ran out of connections or is shutting
// down, or the transaction lost a serialization or deadlock race.
func transient(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return true
	}
	var e *pgconn.PgError
	if errors.As(err, &e) {
		switch {
		case strings.HasPrefix(e.Code, "08"), // connection_exception
			strings.HasPrefix(e.Code, "53"),                         // insufficient_resources: too_many_connections, out of memory, disk full
			e.Code == "57P01", e.Code == "57P02", e.Code == "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			e.Code == "40001", e.Code == "40P01": // serialization_failure, deadlock_detected
			return true
		}
		return false
	}
	// The server's connection closed under a statement (the server gone,
	// a proxy or a network in between cut): pgx reads an unexpected EOF.
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
