// Package postgres opens Parley's store on PostgreSQL through pgx's
// database/sql driver.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

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
	Classify:      classify,
	MigrationLock: `SELECT pg_advisory_xact_lock(1885434988, hashtext(COALESCE(current_schema(), '')))`,
}

// Open connects to the database at url (a postgres:// URL or key=value DSN;
// a search_path parameter selects the schema) and migrates it.
func Open(ctx context.Context, url string) (store.DB, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.SetMaxOpenConns(32)
	// As many idle as open: under load, closing and reopening connections
	// (TCP, authentication, pgx statement cache) cost more than the queries.
	db.SetMaxIdleConns(32)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := sqlstore.New(db, Dialect)
	if err := s.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	return s, nil
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
