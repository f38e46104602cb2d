package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testapp"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// TestPoolWarmedBeforeServing: on PostgreSQL, a node started with
// --db-warm-connections (-1, `parley serve`'s default: the whole pool)
// serves on connections that have the reads of a user's first message
// planned already; with 0 (the zero Config) the pool's connections open
// as they are needed, and those have not.
func TestPoolWarmedBeforeServing(t *testing.T) {
	const pool = 4
	for _, tt := range []struct {
		name    string
		warm    int
		planned int // connections with the start's read planned, of pool
	}{
		{"the whole pool", -1, pool},
		{"none", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testapp.Config(t, testdb.PostgresURL(t))
			cfg.DBMaxConnections, cfg.DBWarmConnections = pool, tt.warm
			a := testapp.Start(t, cfg)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			db := a.Store().(*postgres.DB).SQL()
			planned := 0
			for range pool { // every connection of the pool, held at once
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var n int
				// The pattern is a parameter: in the query's text, it would
				// match the query itself.
				if err := c.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE $1 AND generic_plans > 0`,
					`%EXISTS (SELECT 1 FROM handoffs %`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					planned++
				}
			}
			if planned != tt.planned {
				t.Fatalf("%d of the pool's %d connections have the start's read planned, want %d", planned, pool, tt.planned)
			}
		})
	}
}
