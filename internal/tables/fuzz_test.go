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
