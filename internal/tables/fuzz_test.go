package tables_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/sqlstore"
	"github.com/parley-bots/parley/internal/tables"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// FuzzFindRows feeds findTableRows bodies to the parser, the compiler of
// both engines, and both engines (PostgreSQL when reachable): every input
// is either refused with a 400 (or a LimitExceeded) model error or runs on
// each engine; an SQL error or a panic is a failure. The compiled SQL
// never contains the input's text (values and column names are
// parameters).
func FuzzFindRows(f *testing.F) {
	for _, c := range filterCases {
		f.Add(c.body)
	}
	for _, c := range groupCases {
		f.Add(c.body)
	}
	for _, c := range invalidCases {
		f.Add(c.body)
	}
	f.Add(`{"filter":{"name":{"$regex":"a'; DROP TABLE table_rows; --"}}}`)
	f.Add(`{"filter":{"name":"x\"); DROP TABLE bot_tables; --"}}`)
	f.Add(`{"search":"%_\\'"}`)
	f.Add(`{"filter":{"name":{"$regex":"(?P<n>a)\\z"}}}`)
	f.Add(`{"filter":{"name":{"$regex":"a(?i)b\\pL[[:^alpha:]]\\Q.\\E"}}}`)
	f.Add(`{"filter":{"name":"a\u0000b"}}`)
	f.Add(`{"filter":{"age":{"$gt":1e308}},"orderBy":"age"}`)
	type engine struct {
		name string
		bot  string
		rows *tables.Rows
	}
	var dbs []engine
	var table *model.Table
	for _, db := range []store.DB{testdb.SQLite(f), testdb.PostgresIfReachable(f)} {
		if db == nil {
			continue
		}
		bot, ts, rs, _ := seed(f, db)
		dbs = append(dbs, engine{db.Engine(), bot, rs})
		info, err := ts.Get(context.Background(), bot, "PeopleTable")
		if err != nil {
			f.Fatal(err)
		}
		table = info.Table
	}
	f.Fuzz(func(t *testing.T, body string) {
		var in tables.FindInput
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		if q, err := tables.Query(table, in); err == nil && q.Filter != nil {
			for _, engine := range []string{"sqlite", "postgres"} {
				sql, args := sqlstore.TableFilterSQL(engine, q.Filter)
				if n := strings.Count(sql, "?"); n != len(args) {
					t.Fatalf("%s: %d placeholders, %d args: %s", engine, n, len(args), sql)
				}
				for _, bad := range []string{"DROP", ";", "--", "\""} {
					if strings.Contains(sql, bad) {
						t.Fatalf("%s: input text reached the SQL: %s", engine, sql)
					}
				}
			}
		}
		for _, e := range dbs {
			_, err := e.rows.Find(context.Background(), e.bot, "PeopleTable", in)
			if err == nil {
				continue
			}
			switch model.TypeOf(err) {
			case model.ErrInvalidPayload, model.ErrInvalidQuery, model.ErrLimitExceeded:
			default:
				t.Fatalf("%s: %s: %v", e.name, body, err)
			}
		}
	})
}

// FuzzCreateRows writes fuzzed rows to the people table on both engines
// (PostgreSQL when reachable): each write is refused with a 400 (or a
// LimitExceeded) or stored; stored rows are then read back, sorted by
// every column, and deleted, with no SQL error on either engine.
func FuzzCreateRows(f *testing.F) {
	for _, p := range people {
		f.Add(`[` + p + `]`)
	}
	f.Add(`[{"name":"x","langs":[1,{"a":null}],"age":-0.0}]`)
	f.Add(`[{"name":"\u0000"}]`)
	f.Add(`[{"name":"é\ud800","city":"` + strings.Repeat("z", 5000) + `"}]`)
	f.Add(`[{"name":"y","age":1e308},{"name":"z","age":-1e-308}]`)
	type engine struct {
		name string
		bot  string
		rows *tables.Rows
	}
	var dbs []engine
	for _, db := range []store.DB{testdb.SQLite(f), testdb.PostgresIfReachable(f)} {
		if db != nil {
			bot, _, rs, _ := seed(f, db)
			dbs = append(dbs, engine{db.Engine(), bot, rs})
		}
	}
	f.Fuzz(func(t *testing.T, body string) {
		var rows []map[string]any
		if json.Unmarshal([]byte(body), &rows) != nil {
			return
		}
		for _, e := range dbs {
			ctx := context.Background()
			var in []map[string]any
			_ = json.Unmarshal([]byte(body), &in)
			created, err := e.rows.Create(ctx, e.bot, "PeopleTable", in)
			if err != nil {
				switch model.TypeOf(err) {
				case model.ErrInvalidPayload, model.ErrLimitExceeded:
					continue
				}
				t.Fatalf("%s: create %s: %v", e.name, body, err)
			}
			ids := make([]any, 0, len(created))
			var del []int64
			for _, r := range created {
				ids = append(ids, r.ID)
				del = append(del, r.ID)
			}
			for _, col := range []string{"name", "age", "active", "city", "langs", "id"} {
				q := tables.FindInput{Filter: map[string]any{"id": map[string]any{"$in": ids}}, OrderBy: col}
				if col == "langs" {
					q = tables.FindInput{Filter: map[string]any{"id": map[string]any{"$in": ids}, "langs": map[string]any{"$exists": true}}}
				}
				res, err := e.rows.Find(ctx, e.bot, "PeopleTable", q)
				if err != nil {
					t.Fatalf("%s: find by %s after %s: %v", e.name, col, body, err)
				}
				if len(res.Rows) == 0 && col != "langs" {
					t.Fatalf("%s: stored rows not found: %s", e.name, body)
				}
			}
			if _, err := e.rows.Delete(ctx, e.bot, "PeopleTable", del, nil, false); err != nil {
				t.Fatalf("%s: delete: %v", e.name, err)
			}
		}
	})
}
