package tables_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store/sqlstore"
	"github.com/parley-bots/parley/internal/tables"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// FuzzFindRows feeds findTableRows bodies to the parser, the compiler of
// both engines and SQLite: every input is either refused with a 400 (or
// 413-like LimitExceeded) model error or runs; an SQL error or a panic is a
// failure. The compiled SQL never contains the input's text (values and
// column names are parameters).
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
	db := testdb.SQLite(f)
	bot, ts, rs, _ := seed(f, db)
	table, err := ts.Get(context.Background(), bot, "PeopleTable")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var in tables.FindInput
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		if q, err := tables.Query(table.Table, in); err == nil && q.Filter != nil {
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
		_, err := rs.Find(context.Background(), bot, "PeopleTable", in)
		if err == nil {
			return
		}
		switch model.TypeOf(err) {
		case model.ErrInvalidPayload, model.ErrInvalidQuery, model.ErrLimitExceeded:
		default:
			t.Fatalf("%s: %v", body, err)
		}
	})
}
