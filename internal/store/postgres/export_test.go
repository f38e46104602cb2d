package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
)

// OpenConfig opens the store with a connection config of the test's own
// (a dialer that counts what is sent).
func OpenConfig(ctx context.Context, cfg *pgx.ConnConfig, maxConns ...int) (store.DB, error) {
	return openConfig(ctx, cfg, sqlstore.LatestVersion(), maxConns...)
}

// OpenAt opens the store at url with its schema at version, as an older
// binary left it, for the tests of a migration.
func OpenAt(ctx context.Context, url string, version int) (store.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	return openConfig(ctx, cfg, version)
}

// AnalyzeNow runs one pass of db's analyzer and returns the tables it
// analyzed.
func AnalyzeNow(ctx context.Context, db *DB) ([]string, error) { return db.analyzer.analyze(ctx) }

// SetAnalyzed tells db's analyzer that it analyzed table at rows rows.
func SetAnalyzed(db *DB, table string, rows int64) { db.analyzer.tried[table] = rows }

// StopAnalyzer stops db's background passes, so that a test runs its own.
func StopAnalyzer(db *DB) { db.analyzer.close() }
