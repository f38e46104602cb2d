package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded steps, checked to be numbered 1..n.
var migrations = mustLoadMigrations(migrationFiles)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 4 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", base)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d (no gaps or duplicates)", m.name, i+1)
		}
	}
	return ms, nil
}

// LatestVersion is the schema version this binary migrates to.
func LatestVersion() int { return len(migrations) }

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at BIGINT NOT NULL
)`

// Migrate applies pending migrations, one transaction per step. Each step
// takes the dialect's lock first and re-reads the version under it, so
// processes starting together never apply a step twice. A database newer
// than this binary is refused.
func (db *DB) Migrate(ctx context.Context) error { return db.MigrateTo(ctx, len(migrations)) }

// MigrateTo is Migrate up to version (at most LatestVersion): a database
// at an earlier schema, for the tests of a migration's upgrade.
func (db *DB) MigrateTo(ctx context.Context, version int) error {
	version = min(version, len(migrations))
	for {
		done, err := db.step(ctx, version)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

func (db *DB) step(ctx context.Context, target int) (done bool, err error) {
	raw := &Store{e: db.e, q: db.e.db, nocache: true} // DDL runs once: do not cache it
	err = raw.tx(ctx, func(s *Store) error {
		if l := db.e.d.MigrationLock; l != "" {
			if _, err := s.exec(ctx, l); err != nil {
				return fmt.Errorf("migration lock: %w", err)
			}
		}
		if _, err := s.exec(ctx, createMigrationsTable); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		v, err := s.version(ctx)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("database schema version %d is newer than this binary's %d: upgrade parley", v, len(migrations))
		}
		if v >= target {
			done = true
			return nil
		}
		m := migrations[v]
		if _, err := s.exec(ctx, forDialect(m.sql, db.e.d.Name)); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		_, err = s.exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.version, time.Now().UnixMilli())
		return err
	})
	return done, err
}

func (s *Store) version(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return int(v.Int64), nil
}

// SchemaVersion returns the highest applied migration.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	return db.version(ctx)
}

// Migrated reports an error unless the schema is at this binary's version.
func (db *DB) Migrated(ctx context.Context) error {
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v != len(migrations) {
		return fmt.Errorf("database schema version %d, want %d", v, len(migrations))
	}
	return nil
}

// forDialect keeps the lines of a migration meant for engine: lines
// between "-- only <name>" and "-- end" run only on engine <name>.
func forDialect(sql, engine string) string {
	var b strings.Builder
	keep := true
	for _, line := range strings.SplitAfter(sql, "\n") {
		t := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(t, "-- only "); ok {
			keep = strings.TrimSpace(name) == engine
			continue
		}
		if t == "-- end" {
			keep = true
			continue
		}
		if keep {
			b.WriteString(line)
		}
	}
	return b.String()
}
