package testdb

import (
	"net/url"
	"strings"
	"testing"
)

func TestSQLite(t *testing.T) {
	db := SQLite(t)
	if db.Engine() != "sqlite" {
		t.Fatalf("engine %q", db.Engine())
	}
	if err := db.Migrated(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestPostgres(t *testing.T) {
	db := Postgres(t)
	if db.Engine() != "postgres" {
		t.Fatalf("engine %q", db.Engine())
	}
	if err := db.Migrated(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestPostgresURLsAreDistinct(t *testing.T) {
	a, b := PostgresURL(t), PostgresURL(t)
	if a == b {
		t.Fatal("two calls returned the same schema")
	}
	u, err := url.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u.Query().Get("search_path"), "parley_test_") {
		t.Fatalf("no search_path in %s", a)
	}
}

func TestWithSearchPath(t *testing.T) {
	got, err := withSearchPath("postgres://u@h/db?sslmode=disable", "s1")
	if err != nil || !strings.Contains(got, "search_path=s1") || !strings.Contains(got, "sslmode=disable") {
		t.Fatalf("url form: %q %v", got, err)
	}
	// Tests also turn the idle-in-transaction timeout off (a -race run can
	// sit in a migration's transaction past the production default).
	got, _ = withSearchPath("host=h dbname=db", "s1")
	if got != "host=h dbname=db search_path=s1 idle_in_transaction_session_timeout=0" {
		t.Fatalf("dsn form: %q", got)
	}
}
