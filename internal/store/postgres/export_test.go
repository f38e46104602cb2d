package postgres

import "context"

// OpenConfig opens the store with a connection config of the test's own
// (a dialer that counts what is sent).
var OpenConfig = openConfig

// AnalyzeNow runs one pass of db's analyzer and returns the tables it
// analyzed.
func AnalyzeNow(ctx context.Context, db *DB) ([]string, error) { return db.analyzer.analyze(ctx) }

// SetAnalyzed tells db's analyzer that it analyzed table at rows rows.
func SetAnalyzed(db *DB, table string, rows int64) { db.analyzer.tried[table] = rows }

// StopAnalyzer stops db's background passes, so that a test runs its own.
func StopAnalyzer(db *DB) { db.analyzer.close() }
