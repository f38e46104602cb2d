package tables_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/tables"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// engines runs fn on SQLite and PostgreSQL (skipped when unreachable,
// unless PARLEY_TEST_REQUIRE_POSTGRES=1).
func engines(t *testing.T, fn func(t *testing.T, db store.DB)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, testdb.SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, testdb.Postgres(t)) })
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newBot(t testing.TB, db store.DB) string {
	ctx := context.Background()
	a := &model.Account{Email: model.NewID() + "@example.com"}
	must(t, db.Accounts().Create(ctx, a))
	w := &model.Workspace{Name: "ws", OwnerID: a.ID, Handle: "h" + strings.ToLower(a.ID[len(a.ID)-10:])}
	must(t, db.Workspaces().Create(ctx, w))
	b := &model.Bot{WorkspaceID: w.ID, Name: "bot", Type: model.DefaultBotType}
	must(t, db.Bots().Create(ctx, b))
	return b.ID
}

func obj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(s + ": " + err.Error())
	}
	return m
}

const peopleSchema = `{"type":"object","properties":{
	"name":{"type":"string","x-zui":{"searchable":true}},
	"age":{"type":"number"},
	"active":{"type":"boolean"},
	"city":{"type":"string","nullable":true},
	"langs":{"type":"array","items":{"type":"string"}}
},"required":["name"]}`

var people = []string{
	`{"name":"Ada","age":36,"active":true,"city":"London","langs":["en"]}`,
	`{"name":"Grace","age":85,"active":false,"city":"New York"}`,
	`{"name":"Alan","age":41,"active":true,"city":"London"}`,
	`{"name":"Linus","age":28,"active":true,"city":null}`,
	`{"name":"Barbara","age":67,"active":false}`,
	`{"name":"ada lovelace","age":36,"active":false,"city":"Paris"}`,
}

func seed(t testing.TB, db store.DB) (string, *tables.Tables, *tables.Rows, *tables.Jobs) {
	ts, rs, js := tables.New(db, nil, tables.Limits{})
	bot := newBot(t, db)
	_, err := ts.Create(context.Background(), bot, tables.TableInput{Name: "PeopleTable", Schema: obj(peopleSchema)})
	must(t, err)
	var rows []map[string]any
	for _, p := range people {
		rows = append(rows, obj(p))
	}
	_, err = rs.Create(context.Background(), bot, "PeopleTable", rows)
	must(t, err)
	return bot, ts, rs, js
}

// filterCases: the same expected row ids on both engines.
var filterCases = []struct {
	name, body string
	ids        []int64
}{
	{"all", `{}`, []int64{1, 2, 3, 4, 5, 6}},
	{"shorthand eq", `{"filter":{"city":"London"}}`, []int64{1, 3}},
	{"eq", `{"filter":{"age":{"$eq":36}}}`, []int64{1, 6}},
	{"ne includes missing", `{"filter":{"city":{"$ne":"London"}}}`, []int64{2, 4, 5, 6}},
	{"gt", `{"filter":{"age":{"$gt":41}}}`, []int64{2, 5}},
	{"gte lte", `{"filter":{"age":{"$gte":36,"$lte":41}}}`, []int64{1, 3, 6}},
	{"lt", `{"filter":{"age":{"$lt":30}}}`, []int64{4}},
	{"string range", `{"filter":{"name":{"$gte":"B","$lt":"H"}}}`, []int64{2, 5}},
	{"boolean", `{"filter":{"active":false}}`, []int64{2, 5, 6}},
	{"in", `{"filter":{"city":{"$in":["Paris","New York"]}}}`, []int64{2, 6}},
	{"nin includes missing", `{"filter":{"city":{"$nin":["London"]}}}`, []int64{2, 4, 5, 6}},
	{"exists", `{"filter":{"city":{"$exists":true}}}`, []int64{1, 2, 3, 6}},
	{"not exists", `{"filter":{"city":{"$exists":false}}}`, []int64{4, 5}},
	{"eq null", `{"filter":{"city":null}}`, []int64{4, 5}},
	{"exists array", `{"filter":{"langs":{"$exists":true}}}`, []int64{1}},
	{"regex", `{"filter":{"name":{"$regex":"^a"}}}`, []int64{6}},
	{"regex options", `{"filter":{"name":{"$regex":"^a","$options":"i"}}}`, []int64{1, 3, 6}},
	{"regex alternation", `{"filter":{"name":{"$regex":"(ace|ara)$"}}}`, []int64{2, 5, 6}},
	// Go syntax PostgreSQL's own would refuse or read otherwise (model.PostgresRegex)
	{"regex named group, inline flag group", `{"filter":{"name":{"$regex":"^(?P<first>A)(?i:LA)"}}}`, []int64{3}},
	{"regex flag mid-pattern", `{"filter":{"name":{"$regex":"a(?i)C"}}}`, []int64{2, 6}},
	{"regex Unicode class, \\s", `{"filter":{"name":{"$regex":"^\\pL+\\s\\pL+$"}}}`, []int64{6}},
	{"regex quoted", `{"filter":{"name":{"$regex":"\\Qa l\\E"}}}`, []int64{6}},
	{"regex word boundary", `{"filter":{"city":{"$regex":"\\bYork$"}}}`, []int64{2}},
	{"regex POSIX class, bounded repeat", `{"filter":{"name":{"$regex":"^[[:upper:]][^aeiou]{0,3}a"}}}`, []int64{1, 2, 3, 5}},
	{"regex multi-line anchors", `{"filter":{"city":{"$regex":"(?m)^London$"}}}`, []int64{1, 3}},
	{"regex dot", `{"filter":{"city":{"$regex":"^N.w"}}}`, []int64{2}},
	{"and", `{"filter":{"$and":[{"active":true},{"age":{"$gt":30}}]}}`, []int64{1, 3}},
	{"or", `{"filter":{"$or":[{"city":"Paris"},{"age":{"$lt":30}}]}}`, []int64{4, 6}},
	{"not", `{"filter":{"$not":{"city":"London"}}}`, []int64{2, 4, 5, 6}},
	{"field not", `{"filter":{"age":{"$not":{"$gt":40}}}}`, []int64{1, 4, 6}},
	{"nested", `{"filter":{"$or":[{"$and":[{"active":true},{"$not":{"city":{"$exists":true}}}]},{"$and":[{"age":{"$gte":60}},{"$not":{"$or":[{"name":"Grace"},{"city":"Paris"}]}}]}]}}`, []int64{4, 5}},
	{"id and createdAt", `{"filter":{"id":{"$in":[2,3,9]},"createdAt":{"$gt":"2000-01-01T00:00:00Z"}}}`, []int64{2, 3}},
	{"search", `{"search":"ADA"}`, []int64{1, 6}},
	{"search with filter", `{"search":"a","filter":{"active":true}}`, []int64{1, 3}},
	{"order desc", `{"orderBy":"age","orderDirection":"desc","limit":3}`, []int64{2, 5, 3}},
	{"order string, offset", `{"orderBy":"name","offset":1,"limit":2}`, []int64{3, 5}},
	{"order nulls first", `{"orderBy":"city","limit":3}`, []int64{4, 5, 1}},
}

func TestFindRowsFilters(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		bot, _, rs, _ := seed(t, db)
		for _, c := range filterCases {
			var in tables.FindInput
			must(t, json.Unmarshal([]byte(c.body), &in))
			res, err := rs.Find(context.Background(), bot, "PeopleTable", in)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			ids := []int64{}
			for _, r := range res.Rows {
				ids = append(ids, r.ID)
			}
			if !reflect.DeepEqual(ids, c.ids) {
				t.Errorf("%s: got ids %v, want %v", c.name, ids, c.ids)
			}
		}
	})
}

var groupCases = []struct {
	name, body, want string
}{
	{"count by key", `{"group":{"active":"key","id":"count"}}`,
		`[{"activeKey":false,"idCount":3},{"activeKey":true,"idCount":3}]`},
	{"aggregates", `{"group":{"city":"key","age":["sum","avg","min","max"]},"filter":{"city":{"$exists":true}}}`,
		`[{"ageAvg":38.5,"ageMax":41,"ageMin":36,"ageSum":77,"cityKey":"London"},{"ageAvg":85,"ageMax":85,"ageMin":85,"ageSum":85,"cityKey":"New York"},{"ageAvg":36,"ageMax":36,"ageMin":36,"ageSum":36,"cityKey":"Paris"}]`},
	{"unique without key", `{"group":{"city":"unique","name":"count"}}`,
		`[{"cityUnique":["London","New York","Paris"],"nameCount":6}]`},
}

func TestFindRowsGroup(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		bot, _, rs, _ := seed(t, db)
		for _, c := range groupCases {
			var in tables.FindInput
			must(t, json.Unmarshal([]byte(c.body), &in))
			res, err := rs.Find(context.Background(), bot, "PeopleTable", in)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			got, _ := json.Marshal(res.Groups)
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(c.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
			}
		}
	})
}

// invalid filters: a 400 naming the operator or column, on both engines
// (the parser runs before SQL).
var invalidCases = []struct{ body, mention string }{
	{`{"filter":{"nope":1}}`, `"nope"`},
	{`{"filter":{"age":{"$gtx":1}}}`, `"$gtx"`},
	{`{"filter":{"$nor":[]}}`, `"$nor"`},
	{`{"filter":{"age":{"$gt":"x"}}}`, `"age"`},
	{`{"filter":{"$and":{"a":1}}}`, `$and`},
	{`{"filter":{"name":{"$regex":"("}}}`, `"name"`},
	{`{"filter":{"age":{"$regex":"1"}}}`, `"age"`},
	{`{"filter":{"name":{"$in":"x"}}}`, `"name"`},
	{`{"orderBy":"nope"}`, `"nope"`},
	{`{"select":["nope"]}`, `"nope"`},
	{`{"group":{"name":"median"}}`, `"median"`},
	{`{"group":{"name":"sum"}}`, `group.name`},
	{`{"limit":0}`, `limit`},
	{`{"filter":{"name":"a\u0000"}}`, `NUL`},
	{`{"filter":{"$or":[{"name":{"$in":["x","\u0000"]}}]}}`, `NUL`},
	{`{"search":"a\u0000"}`, `NUL`},
	{`{"filter":{"name":{"$regex":"a{256}"}}}`, `255`},
	{`{"filter":{"name":{"$regex":"([a-z]{0,30}x{0,30}y{0,30}){0,33}"}}}`, `too complex`},
	{`{"filter":{"name":{"$regex":"\\x00"}}}`, `NUL`},
}

func TestFindRowsInvalid(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		bot, _, rs, _ := seed(t, db)
		for _, c := range invalidCases {
			var in tables.FindInput
			must(t, json.Unmarshal([]byte(c.body), &in))
			_, err := rs.Find(context.Background(), bot, "PeopleTable", in)
			if model.TypeOf(err) != model.ErrInvalidPayload || !strings.Contains(err.Error(), c.mention) {
				t.Errorf("%s: got %v, want InvalidPayload naming %s", c.body, err, c.mention)
			}
		}
	})
}

func TestRowsLifecycle(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		bot, ts, rs, js := seed(t, db)
		// invalid rows: nothing written
		for _, bad := range []string{`{"name":1}`, `{"nme":"x"}`, `{"age":3}`, `{"name":"a\u0000b"}`, `{"name":"x","langs":["\u0000"]}`} {
			_, err := rs.Create(ctx, bot, "PeopleTable", []map[string]any{obj(`{"name":"ok"}`), obj(bad)})
			if model.TypeOf(err) != model.ErrInvalidPayload || !strings.Contains(err.Error(), "column") {
				t.Errorf("%s: got %v", bad, err)
			}
		}
		info, err := ts.Get(ctx, bot, "PeopleTable")
		must(t, err)
		if info.Rows != 6 {
			t.Fatalf("rows after invalid writes: %d", info.Rows)
		}
		// update merges
		up, err := rs.Update(ctx, bot, "PeopleTable", []map[string]any{obj(`{"id":2,"city":"Arlington"}`)})
		must(t, err)
		if up[0].Data["city"] != "Arlington" || up[0].Data["name"] != "Grace" {
			t.Fatalf("update: %v", up[0].Data)
		}
		// upsert by name
		ins, upd, err := rs.Upsert(ctx, bot, "PeopleTable", "name", []map[string]any{obj(`{"name":"Ada","age":37}`), obj(`{"name":"Katherine","age":101}`)})
		must(t, err)
		if len(ins) != 1 || ins[0].ID != 7 || len(upd) != 1 || upd[0].ID != 1 || upd[0].Data["age"] != float64(37) {
			t.Fatalf("upsert: %v %v", ins, upd)
		}
		// delete by filter and ids
		n, err := rs.Delete(ctx, bot, "PeopleTable", nil, obj(`{"age":{"$gt":80}}`), false)
		must(t, err)
		if n != 2 {
			t.Fatalf("deleted %d", n)
		}
		n, err = rs.Delete(ctx, bot, "PeopleTable", []int64{1, 99}, nil, false)
		must(t, err)
		if n != 1 {
			t.Fatalf("deleted by ids %d", n)
		}
		// rename a column: schema and rows
		_, err = ts.RenameColumn(ctx, bot, "PeopleTable", "city", "town")
		must(t, err)
		row, err := rs.Get(ctx, bot, "PeopleTable", 3)
		must(t, err)
		if row.Data["town"] != "London" || row.Data["city"] != nil {
			t.Fatalf("renamed: %v", row.Data)
		}
		// export, import into a copy
		for _, format := range []string{"csv", "json"} {
			job, err := js.Export(ctx, bot, "PeopleTable", format)
			must(t, err)
			dup, err := ts.Duplicate(ctx, bot, "PeopleTable", "Copy"+format+"Table", true, nil)
			must(t, err)
			imp, err := js.Import(ctx, bot, dup.Table.Name, tables.OutputFileID(job))
			must(t, err)
			if imp.Status != "completed" {
				t.Fatalf("%s import: %+v", format, imp)
			}
			got, err := ts.Get(ctx, bot, dup.Table.Name)
			must(t, err)
			if got.Rows != 4 {
				t.Fatalf("%s import: %d rows", format, got.Rows)
			}
			jobs, err := js.List(ctx, bot, dup.Table.Name)
			must(t, err)
			if len(jobs) != 1 || jobs[0].Type != "import" {
				t.Fatalf("jobs: %+v", jobs)
			}
		}
		// a schema without a column: rows show and merge without it
		_, err = ts.Update(ctx, bot, "PeopleTable", tables.TableInput{Schema: obj(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"number"},"active":{"type":"boolean"},"langs":{"type":"array"}}}`)})
		must(t, err)
		up, err = rs.Update(ctx, bot, "PeopleTable", []map[string]any{obj(`{"id":3,"age":42}`)})
		must(t, err)
		if _, ok := up[0].Data["town"]; ok || up[0].Data["age"] != float64(42) {
			t.Fatalf("after schema change: %v", up[0].Data)
		}
		// another bot sees nothing
		other := newBot(t, db)
		if _, err := rs.Get(ctx, other, "PeopleTable", 3); !model.IsNotFound(err) {
			t.Fatalf("another bot: %v", err)
		}
		must(t, ts.Delete(ctx, bot, "PeopleTable"))
		if _, err := ts.Get(ctx, bot, "PeopleTable"); !model.IsNotFound(err) {
			t.Fatalf("deleted table: %v", err)
		}
	})
}

// TestTableLimits hits each cap of a table (docs/tables-api.md, Limits):
// a LimitExceeded error, and nothing written. The rows-per-table cap is
// lowered to 10 (tables.Limits) to be reached quickly.
func TestTableLimits(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		ts, rs, js := tables.New(db, nil, tables.Limits{RowsPerTable: 10})
		bot := newBot(t, db)
		_, err := ts.Create(ctx, bot, tables.TableInput{Name: "NotesTable", KeyColumn: ptr("key"),
			Schema: obj(`{"type":"object","properties":{"key":{"type":"string"},"text":{"type":"string"}}}`)})
		must(t, err)
		rows := func(n int, prefix string) []map[string]any {
			out := make([]map[string]any, n)
			for i := range out {
				out[i] = map[string]any{"key": fmt.Sprintf("%s%d", prefix, i)}
			}
			return out
		}
		count := func() int {
			info, err := ts.Get(ctx, bot, "NotesTable")
			must(t, err)
			return info.Rows
		}
		_, err = rs.Create(ctx, bot, "NotesTable", rows(8, "a"))
		must(t, err)
		big := strings.Repeat("x", model.MaxTableRowBytes)
		export, err := js.Export(ctx, bot, "NotesTable", "json")
		must(t, err)
		refusals := []struct {
			name string
			run  func() error
		}{
			{"rows per table (create)", func() error { _, err := rs.Create(ctx, bot, "NotesTable", rows(3, "b")); return err }},
			{"rows per table (upsert)", func() error {
				_, _, err := rs.Upsert(ctx, bot, "NotesTable", "", append(rows(2, "a"), rows(3, "c")...))
				return err
			}},
			{"rows per request", func() error {
				_, err := rs.Create(ctx, bot, "NotesTable", rows(model.MaxRowsPerRequest+1, "d"))
				return err
			}},
			{"row size", func() error {
				_, err := rs.Create(ctx, bot, "NotesTable", []map[string]any{{"key": "e", "text": big}})
				return err
			}},
			{"row size (update)", func() error {
				_, err := rs.Update(ctx, bot, "NotesTable", []map[string]any{{"id": float64(1), "text": big}})
				return err
			}},
			{"columns per table", func() error {
				props := map[string]any{}
				for i := 0; i <= model.MaxTableColumns; i++ {
					props[fmt.Sprintf("c%d", i)] = map[string]any{"type": "string"}
				}
				_, err := ts.Update(ctx, bot, "NotesTable", tables.TableInput{Schema: map[string]any{"type": "object", "properties": props}})
				return err
			}},
		}
		for _, r := range refusals {
			if err := r.run(); model.TypeOf(err) != model.ErrLimitExceeded {
				t.Errorf("%s: got %v, want LimitExceeded", r.name, err)
			}
			if n := count(); n != 8 {
				t.Fatalf("%s: %d rows after the refusal, want 8", r.name, n)
			}
		}
		// An import past the cap fails its job and writes nothing.
		job, err := js.Import(ctx, bot, "NotesTable", tables.OutputFileID(export))
		must(t, err)
		if job.Status != "failed" || !strings.Contains(job.Error, "at most 10 rows") || count() != 8 {
			t.Fatalf("import past the cap: %+v, %d rows", job, count())
		}
		// The factor raises the row size limit; the cap is reached exactly.
		_, err = ts.Update(ctx, bot, "NotesTable", tables.TableInput{Factor: ptr(2)})
		must(t, err)
		_, err = rs.Create(ctx, bot, "NotesTable", []map[string]any{{"key": "f", "text": big}, {"key": "g"}})
		must(t, err)
		if n := count(); n != 10 {
			t.Fatalf("%d rows, want 10", n)
		}
		// Tables per bot.
		for i := 1; i < model.MaxTablesPerBot; i++ {
			_, err := ts.Create(ctx, bot, tables.TableInput{Name: fmt.Sprintf("T%dTable", i), Schema: obj(`{"type":"object","properties":{}}`)})
			must(t, err)
		}
		if _, err := ts.Create(ctx, bot, tables.TableInput{Name: "OneTooManyTable", Schema: obj(`{"type":"object","properties":{}}`)}); model.TypeOf(err) != model.ErrLimitExceeded {
			t.Fatalf("table %d: got %v, want LimitExceeded", model.MaxTablesPerBot+1, err)
		}
		if list, err := ts.List(ctx, bot, nil); err != nil || len(list) != model.MaxTablesPerBot {
			t.Fatalf("%d tables, %v", len(list), err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestImportAllOrNothing imports 1,500 rows (two batches) into a table
// whose cap is reached by the second: the job fails and the first batch
// is not kept either.
func TestImportAllOrNothing(t *testing.T) {
	engines(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		ts, rs, js := tables.New(db, nil, tables.Limits{})
		bot := newBot(t, db)
		schema := obj(`{"type":"object","properties":{"n":{"type":"number"}}}`)
		_, err := ts.Create(ctx, bot, tables.TableInput{Name: "SourceTable", Schema: schema})
		must(t, err)
		for i := 0; i < 1500; i += 500 {
			batch := make([]map[string]any, 500)
			for j := range batch {
				batch[j] = map[string]any{"n": float64(i + j)}
			}
			_, err := rs.Create(ctx, bot, "SourceTable", batch)
			must(t, err)
		}
		for _, format := range []string{"csv", "json"} {
			export, err := js.Export(ctx, bot, "SourceTable", format)
			must(t, err)
			capped, _, cjs := tables.New(db, nil, tables.Limits{RowsPerTable: 1200})
			target := "Target" + format + "Table"
			_, err = capped.Create(ctx, bot, tables.TableInput{Name: target, Schema: schema})
			must(t, err)
			job, err := cjs.Import(ctx, bot, target, tables.OutputFileID(export))
			must(t, err)
			info, err := capped.Get(ctx, bot, target)
			must(t, err)
			if job.Status != "failed" || !strings.Contains(job.Error, "at most 1200 rows") || info.Rows != 0 {
				t.Fatalf("%s: job %+v, %d rows kept", format, job, info.Rows)
			}
			// Without the cap, the same file imports whole.
			job, err = js.Import(ctx, bot, target, tables.OutputFileID(export))
			must(t, err)
			info, err = ts.Get(ctx, bot, target)
			must(t, err)
			if job.Status != "completed" || job.Progress != 100 || info.Rows != 1500 {
				t.Fatalf("%s: job %+v, %d rows", format, job, info.Rows)
			}
		}
	})
}
