package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/store/sqlstore"
	"github.com/parley-bots/parley/internal/store/storetest"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// These tests need PostgreSQL (see testdb); they skip when it is
// unreachable unless PARLEY_TEST_REQUIRE_POSTGRES=1.

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.DB { return testdb.Postgres(t) })
}

func TestUpgradeTurnTables(t *testing.T) {
	u := testdb.PostgresURL(t)
	storetest.UpgradeTurnTables(t, func(version int) store.DB {
		db, err := postgres.OpenAt(t.Context(), u, version)
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// TestConcurrentOpen starts several nodes on one empty schema at once: the
// advisory lock must let exactly one apply each migration.
func TestConcurrentOpen(t *testing.T) {
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	const n = 4
	dbs := make([]store.DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = postgres.Open(ctx, url)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer dbs[i].Close()
		if err := dbs[i].Migrated(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := dbs[0].(*postgres.DB).SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != sqlstore.LatestVersion() {
		t.Fatalf("schema_migrations has %d rows, want %d", rows, sqlstore.LatestVersion())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	url := testdb.PostgresURL(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.(*postgres.DB).SQL().ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)`, sqlstore.LatestVersion()+1)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrated(ctx); err == nil {
		t.Fatal("Migrated accepted a newer schema")
	}
	db.Close()
	db, err = postgres.Open(ctx, url)
	if err == nil {
		db.Close()
		t.Fatal("opened a database newer than the binary")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Fatalf("unclear error: %v", err)
	}
}

// TestSearchPath checks that the schema in the URL is where tables go.
func TestSearchPath(t *testing.T) {
	ctx := context.Background()
	db := testdb.Postgres(t)
	var schema string
	if err := db.(*postgres.DB).SQL().QueryRowContext(ctx,
		`SELECT table_schema FROM information_schema.tables WHERE table_name = 'bots' AND table_schema = current_schema()`).Scan(&schema); err != nil {
		t.Fatalf("bots table not in the current schema: %v", err)
	}
	if !strings.HasPrefix(schema, "parley_test_") {
		t.Fatalf("tables created in %q", schema)
	}
}

func BenchmarkTurnRead(b *testing.B) { storetest.BenchTurnRead(b, testdb.Postgres(b)) }

func BenchmarkTurnStart(b *testing.B) { storetest.BenchTurnStart(b, testdb.Postgres(b)) }

func BenchmarkTurnStartCheck(b *testing.B) { storetest.BenchTurnStartCheck(b, testdb.Postgres(b)) }

// BenchmarkCommit: a user's message and its reply through the Committer,
// 32 writers (storetest.BenchCommit).
func BenchmarkCommit(b *testing.B) { storetest.BenchCommit(b, testdb.Postgres(b)) }

func BenchmarkCommitFolded(b *testing.B) { storetest.BenchCommitFolded(b, testdb.Postgres(b)) }

func BenchmarkListMessages(b *testing.B) { storetest.BenchListMessages(b, testdb.Postgres(b)) }

func BenchmarkSignalsAfter(b *testing.B) { storetest.BenchSignalsAfter(b, testdb.Postgres(b)) }

// TestTransient checks which real errors of PostgreSQL count as the
// database being unavailable for now (store.Store.Transient): a refused
// connection, a server out of connections and a connection cut under a
// statement do; a bad statement, a constraint and a cancelled context do
// not.
func TestTransient(t *testing.T) {
	ctx := context.Background()
	db := testdb.Postgres(t)
	raw := db.(*postgres.DB).SQL()
	connect := func(url string) error {
		c, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.PingContext(ctx)
	}
	// A role allowed no connection: the server refuses it with
	// too_many_connections (53300), as when max_connections is reached.
	role := fmt.Sprintf("parley_limited_%d", time.Now().UnixNano())
	if _, err := raw.ExecContext(ctx, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 0"); err != nil {
		t.Fatal(err)
	}
	defer raw.ExecContext(ctx, "DROP ROLE "+role)
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	storetest.CheckTransient(t, db, raw, []storetest.TransientCase{
		{Name: "refused connection", Err: testdb.Unavailable(t, "postgres"), Want: true},
		{Name: "too many connections", Err: connect(u.String()), Want: true},
		{Name: "a connection cut under a statement", Err: cutUnder(t), Want: true},
	})
}

// cutUnder returns the error of a statement whose connection was cut
// while its rows came (a proxy in between closed it): pgx's unexpected EOF.
func cutUnder(t *testing.T) error {
	ctx := context.Background()
	u, proxy := testdb.PostgresBehindProxy(t)
	c, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One connection, so that database/sql does not retry on another.
	conn, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Cut once its first rows came: the rest never does.
	rows, err := conn.QueryContext(ctx, "SELECT repeat('x', 1000) FROM generate_series(1, 1000000)")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	proxy.Cut()
	for rows.Next() {
	}
	if rows.Err() == nil {
		t.Fatal("a statement whose connection was cut succeeded")
	}
	return rows.Err()
}

// TestPlanCacheMode: Parley's sessions plan a prepared statement
// generically from its first run (postgres.PlanCacheMode), unless the URL
// sets plan_cache_mode; PostgreSQL's counters of the connection's prepared
// statements tell which plans were made.
func TestPlanCacheMode(t *testing.T) {
	tests := []struct {
		name         string
		param        string // plan_cache_mode in the URL; empty: none
		wantGeneric  int
		wantCustomed int
	}{
		{"default: generic from the first run", "", 3, 0},
		{"the URL's own setting wins", "auto", 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			u, err := url.Parse(testdb.PostgresURL(t))
			if err != nil {
				t.Fatal(err)
			}
			if tt.param != "" {
				q := u.Query()
				q.Set("plan_cache_mode", tt.param)
				u.RawQuery = q.Encode()
			}
			db, err := postgres.Open(ctx, u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.(*postgres.DB).SQL().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A keyed read, as the store's are, run three times on one
			// connection (pgx prepares it once and caches it).
			const read = `SELECT id FROM bots WHERE workspace_id = $1 AND id = $2`
			for i := range 3 {
				var id string
				err := conn.QueryRowContext(ctx, read, "ws", fmt.Sprint("bot-", i)).Scan(&id)
				if err != sql.ErrNoRows {
					t.Fatalf("read %d: %v", i, err)
				}
			}
			var generic, custom int
			if err := conn.QueryRowContext(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, read).Scan(&generic, &custom); err != nil {
				t.Fatal(err)
			}
			if generic != tt.wantGeneric || custom != tt.wantCustomed {
				t.Fatalf("generic plans %d, custom plans %d; want %d and %d", generic, custom, tt.wantGeneric, tt.wantCustomed)
			}
		})
	}
}

// TestWarm: Warm prepares and plans the reads of a user's first message on
// every connection of the pool, at most its cap, so that none plans them
// under the first burst.
func TestWarm(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const pool = 4
	db, err := postgres.Open(ctx, testdb.PostgresURL(t), pool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pg := db.(*postgres.DB)
	n, err := pg.Warm(ctx, 10) // more than the pool has: its cap
	if err != nil {
		t.Fatal(err)
	}
	if n != pool {
		t.Fatalf("warmed %d connections, want %d", n, pool)
	}
	// Every connection of the pool, held at once.
	conns := make([]*sql.Conn, pool)
	for i := range conns {
		if conns[i], err = pg.SQL().Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	reads := map[string]string{
		"participation": `%FROM participants WHERE%`,
		"conversation":  `SELECT bot_id, id, owner_id, % FROM conversations WHERE bot_id = $1 AND id = $2`,
		"turn's start":  `%EXISTS (SELECT 1 FROM handoffs %`,
	}
	for i, c := range conns {
		for name, like := range reads {
			var generic, custom int
			err := c.QueryRowContext(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE $1`, like).Scan(&generic, &custom)
			if err != nil {
				t.Fatalf("connection %d: the %s read: %v", i, name, err)
			}
			if generic != 1 || custom != 0 {
				t.Errorf("connection %d: the %s read planned %d generic and %d custom plans, want 1 and 0", i, name, generic, custom)
			}
		}
	}
}
