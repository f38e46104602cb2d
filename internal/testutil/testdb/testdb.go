// Package testdb opens fresh, migrated databases for tests: a temp SQLite
// file, or a PostgreSQL schema of its own that is dropped afterwards.
//
// PostgreSQL is found at $PARLEY_TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). When it is
// unreachable the test is skipped, unless PARLEY_TEST_REQUIRE_POSTGRES=1,
// in which case it fails.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for schema admin

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/store/sqlite"
)

// DefaultPostgresURL is used when PARLEY_TEST_DATABASE_URL is unset.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// SQLite returns a migrated store on a fresh temp file, closed at cleanup.
func SQLite(t testing.TB) store.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), SQLitePath(t))
	if err != nil {
		t.Fatalf("testdb: open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// SQLitePath returns a path for a database file in a fresh temp directory.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "parley.db")
}

// Postgres returns a migrated store on a fresh schema, closed (and the
// schema dropped) at cleanup.
func Postgres(t testing.TB) store.DB {
	t.Helper()
	u := PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatalf("testdb: open postgres: %v", err)
	}
	t.Cleanup(func() { db.Close() }) // runs before the schema drop
	return db
}

// PostgresIfReachable is Postgres, or nil when PostgreSQL is unreachable
// (a failure when PARLEY_TEST_REQUIRE_POSTGRES=1), for a test that also
// does work without it (a fuzz target over both engines).
func PostgresIfReachable(t testing.TB) store.DB {
	t.Helper()
	if _, err := adminDB(baseURL()); err != nil {
		if os.Getenv("PARLEY_TEST_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("testdb: PostgreSQL required but unreachable: %v", err)
		}
		t.Logf("testdb: PostgreSQL unreachable, not used: %v", err)
		return nil
	}
	return Postgres(t)
}

// PostgresURL creates an empty schema and returns a URL whose search_path
// selects it, for tests that open the database themselves (several times,
// or in several processes). The schema is dropped at cleanup.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := baseURL()
	admin, err := adminDB(base)
	if err != nil {
		unreachable(t, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "parley_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("testdb: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("testdb: drop schema %s: %v", schema, err)
		}
	})
	u, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return u
}

func baseURL() string {
	if u := os.Getenv("PARLEY_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

func unreachable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("PARLEY_TEST_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("testdb: PostgreSQL required but unreachable: %v", err)
	}
	t.Skipf("testdb: PostgreSQL unreachable (set PARLEY_TEST_DATABASE_URL): %v", err)
}

var (
	adminMu  sync.Mutex
	adminDBs = map[string]*sql.DB{}
)

// adminDB is one shared pool per base URL for creating and dropping
// schemas; it lives as long as the test binary.
func adminDB(base string) (*sql.DB, error) {
	adminMu.Lock()
	defer adminMu.Unlock()
	if db, ok := adminDBs[base]; ok {
		return db, nil
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	db.SetMaxIdleConns(2)
	adminDBs[base] = db
	return db, nil
}

// withSearchPath adds search_path to a URL or key=value connection string.
// withSearchPath also turns off postgres.IdleInTransactionTimeout: tests
// under -race on a loaded machine can pause a second between two
// statements of a transaction. The failover test (cmd/parley) removes
// it to test the default.
func withSearchPath(base, schema string) (string, error) {
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema + " idle_in_transaction_session_timeout=0", nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("idle_in_transaction_session_timeout", "0")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Unavailable returns a real error of engine's database being unavailable
// for now (store.Store.Transient): on "postgres" a refused connection
// (nothing listens on 127.0.0.1:1), on "sqlite" the write lock held by
// another connection of a temp file.
func Unavailable(t testing.TB, engine string) error {
	t.Helper()
	ctx := context.Background()
	if engine == "postgres" {
		db, err := sql.Open("pgx", "postgres://parley@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err = db.PingContext(ctx); err == nil {
			t.Fatal("testdb: a server answered on 127.0.0.1:1")
		}
		return err
	}
	path := SQLitePath(t)
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	c, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(ctx, "ROLLBACK")
	other, err := sql.Open("sqlite", path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err = other.ExecContext(ctx, "BEGIN IMMEDIATE"); err == nil {
		t.Fatal("testdb: two connections took the write lock")
	}
	return err
}
