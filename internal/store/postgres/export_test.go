package postgres

import "context"

// OpenConfig opens the store with a connection config of the test's own
// (a dialer that counts what is sent).
var OpenConfig = openConfig

// AnalyzeNow runs one pass of db's analyzer and returns the tables it
// analyzed.
func AnalyzeNow(ctx context.Context, db *DB) ([]string, error) { return db.analyzer.analyze(ctx) }
