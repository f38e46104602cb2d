package sqlstore

import (
	"testing"
	"testing/fstest"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

func TestMigrationsNumbered(t *testing.T) {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || LatestVersion() != len(ms) {
		t.Fatalf("loaded %d migrations, LatestVersion %d", len(ms), LatestVersion())
	}
	for i, m := range ms {
		if m.version != i+1 {
			t.Fatalf("migration %s has version %d, want %d", m.name, m.version, i+1)
		}
	}
}

func TestLoadMigrationsRejects(t *testing.T) {
	file := &fstest.MapFile{Data: []byte("SELECT 1;")}
	cases := map[string]fstest.MapFS{
		"gap":       {"migrations/0001_a.sql": file, "migrations/0003_c.sql": file},
		"duplicate": {"migrations/0001_a.sql": file, "migrations/0001_b.sql": file},
		"no start":  {"migrations/0002_a.sql": file},
		"bad name":  {"migrations/1_a.sql": file},
	}
	for name, fsys := range cases {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := loadMigrations(fstest.MapFS{"migrations/0001_a.sql": file, "migrations/0002_b.sql": file}); err != nil {
		t.Errorf("valid set rejected: %v", err)
	}
}

func TestBind(t *testing.T) {
	s := New(nil, Dialect{Numbered: true}).Store
	got := s.bind("SELECT a FROM t WHERE a = ? AND (b, c) < (?, ?) LIMIT ?")
	want := "SELECT a FROM t WHERE a = $1 AND (b, c) < ($2, $3) LIMIT $4"
	if got != want {
		t.Fatalf("bind = %q", got)
	}
	if again := s.bind("SELECT a FROM t WHERE a = ? AND (b, c) < (?, ?) LIMIT ?"); again != want {
		t.Fatalf("cached bind = %q", again)
	}
	if q := New(nil, Dialect{}).bind("a = ?"); q != "a = ?" {
		t.Fatalf("sqlite bind changed the query: %q", q)
	}
}

func TestTokens(t *testing.T) {
	tok := encodeToken(1234, "id-1")
	c, err := decodeToken(tok)
	if err != nil || c.T != 1234 || c.ID != "id-1" {
		t.Fatalf("round trip: %+v %v", c, err)
	}
	for _, bad := range []string{"", "%%%", tok + "x", "e30"} {
		if _, err := decodeToken(bad); model.TypeOf(err) != model.ErrInvalidQuery {
			t.Errorf("decodeToken(%q) = %v", bad, err)
		}
	}
	for size, want := range map[int]int{-1: 20, 0: 20, 1: 1, 100: 100, 101: 100} {
		if got := pageSize(store.Page{Size: size}); got != want {
			t.Errorf("pageSize(%d) = %d, want %d", size, got, want)
		}
	}
}
