package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Tables: a bot's tables, rows as JSON TEXT, filters compiled to SQL here
// (tableSQL). Column names and values are always bound parameters; only
// operators chosen from fixed strings reach the SQL text.

func (s *Store) Tables() store.Tables { return tablesStore{s} }

type tablesStore struct{ s *Store }

const tableCols = `id, bot_id, name, schema, key_column, frozen, factor, tags, created_at, updated_at`

func scanTable(sc scanner) (*model.Table, error) {
	var t model.Table
	var schema, tags string
	var c, u int64
	if err := sc.Scan(&t.ID, &t.BotID, &t.Name, &schema, &t.KeyColumn, &t.Frozen, &t.Factor, &tags, &c, &u); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(schema), &t.Schema); err != nil {
		return nil, fmt.Errorf("table %s: schema: %w", t.ID, err)
	}
	_, cols, err := model.ParseTableSchema(t.Schema)
	if err != nil {
		return nil, fmt.Errorf("table %s: schema: %w", t.ID, err)
	}
	t.Columns = cols
	_ = json.Unmarshal([]byte(tags), &t.Tags)
	t.CreatedAt, t.UpdatedAt = fromMS(c), fromMS(u)
	return &t, nil
}

func (r tablesStore) Create(ctx context.Context, t *model.Table) error {
	newID(&t.ID)
	stamp(&t.CreatedAt, model.Now())
	stamp(&t.UpdatedAt, t.CreatedAt)
	schema, err := json.Marshal(t.Schema)
	if err != nil {
		return err
	}
	tags, _ := json.Marshal(orEmpty(t.Tags))
	_, err = r.s.exec(ctx, `INSERT INTO bot_tables (`+tableCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		t.ID, t.BotID, t.Name, string(schema), t.KeyColumn, t.Frozen, t.Factor, string(tags), ms(t.CreatedAt), ms(t.UpdatedAt))
	if err != nil {
		if r.s.e.d.Classify(err) == UniqueViolation {
			return model.Conflict("table %q already exists", t.Name)
		}
		return r.s.fail(err, "table")
	}
	return nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func (r tablesStore) Get(ctx context.Context, botID, idOrName string) (*model.Table, error) {
	t, err := one(ctx, r.s, "table", scanTable, `SELECT `+tableCols+` FROM bot_tables WHERE bot_id = ? AND (id = ? OR name = ?)`, botID, idOrName, idOrName)
	if model.IsNotFound(err) {
		return nil, model.NotFound(fmt.Sprintf("table %q", idOrName))
	}
	return t, err
}

func (r tablesStore) List(ctx context.Context, botID string, tags map[string]string) ([]*model.Table, error) {
	all, err := all(ctx, r.s, "table", scanTable, `SELECT `+tableCols+` FROM bot_tables WHERE bot_id = ? ORDER BY created_at, id`, botID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, t := range all {
		ok := true
		for k, v := range tags {
			ok = ok && t.Tags[k] == v
		}
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func (r tablesStore) Update(ctx context.Context, t *model.Table) error {
	t.UpdatedAt = model.Now()
	schema, err := json.Marshal(t.Schema)
	if err != nil {
		return err
	}
	tags, _ := json.Marshal(orEmpty(t.Tags))
	_, err = r.s.exec(ctx, `UPDATE bot_tables SET name = ?, schema = ?, key_column = ?, frozen = ?, factor = ?, tags = ?, updated_at = ? WHERE id = ? AND bot_id = ?`,
		t.Name, string(schema), t.KeyColumn, t.Frozen, t.Factor, string(tags), ms(t.UpdatedAt), t.ID, t.BotID)
	if err != nil && r.s.e.d.Classify(err) == UniqueViolation {
		return model.Conflict("table %q already exists", t.Name)
	}
	return r.s.fail(err, "table")
}

func (r tablesStore) Delete(ctx context.Context, botID, id string) error {
	return r.s.tx(ctx, func(s *Store) error {
		if _, err := s.exec(ctx, `DELETE FROM table_rows WHERE table_id = ?`, id); err != nil {
			return s.fail(err, "table rows")
		}
		if _, err := s.exec(ctx, `DELETE FROM table_jobs WHERE table_id = ?`, id); err != nil {
			return s.fail(err, "table jobs")
		}
		return s.execOne(ctx, "table", `DELETE FROM bot_tables WHERE id = ? AND bot_id = ?`, id, botID)
	})
}

func (r tablesStore) CountRows(ctx context.Context, tableID string) (int, error) {
	var n int
	err := r.s.queryRow(ctx, `SELECT COUNT(*) FROM table_rows WHERE table_id = ?`, tableID).Scan(&n)
	return n, r.s.fail(err, "table rows")
}

const rowCols = `id, data, created_at, updated_at`

func scanRow(sc scanner) (*model.TableRow, error) {
	var row model.TableRow
	var data string
	var c, u int64
	if err := sc.Scan(&row.ID, &data, &c, &u); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(data), &row.Data); err != nil {
		return nil, err
	}
	row.CreatedAt, row.UpdatedAt = fromMS(c), fromMS(u)
	return &row, nil
}

func (r tablesStore) InsertRows(ctx context.Context, tableID string, data []map[string]any) ([]*model.TableRow, error) {
	var out []*model.TableRow
	err := r.s.tx(ctx, func(s *Store) error {
		var next int64
		if err := s.queryRow(ctx, `UPDATE bot_tables SET next_row_id = next_row_id + ? WHERE id = ? RETURNING next_row_id`, len(data), tableID).Scan(&next); err != nil {
			return s.fail(err, "table")
		}
		first := next - int64(len(data))
		now := model.Now()
		for i, d := range data {
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			row := &model.TableRow{ID: first + int64(i), Data: d, CreatedAt: now, UpdatedAt: now}
			if _, err := s.exec(ctx, `INSERT INTO table_rows (table_id, `+rowCols+`) VALUES (?,?,?,?,?)`, tableID, row.ID, string(b), ms(now), ms(now)); err != nil {
				return s.fail(err, "table row")
			}
			out = append(out, row)
		}
		return nil
	})
	return out, err
}

func (r tablesStore) GetRow(ctx context.Context, tableID string, id int64) (*model.TableRow, error) {
	row, err := one(ctx, r.s, "row", scanRow, `SELECT `+rowCols+` FROM table_rows WHERE table_id = ? AND id = ?`, tableID, id)
	if model.IsNotFound(err) {
		return nil, model.NotFound(fmt.Sprintf("row %d", id))
	}
	return row, err
}

func (r tablesStore) ReplaceRow(ctx context.Context, tableID string, row *model.TableRow) error {
	b, err := json.Marshal(row.Data)
	if err != nil {
		return err
	}
	row.UpdatedAt = model.Now()
	err = r.s.execOne(ctx, "row", `UPDATE table_rows SET data = ?, updated_at = ? WHERE table_id = ? AND id = ?`, string(b), ms(row.UpdatedAt), tableID, row.ID)
	if model.IsNotFound(err) {
		return model.NotFound(fmt.Sprintf("row %d", row.ID))
	}
	return err
}

func (r tablesStore) DeleteRows(ctx context.Context, tableID string, ids []int64, q *model.TableQuery) (int, error) {
	c := r.s.compiler()
	where := "table_id = ?"
	args := []any{tableID}
	if ids != nil {
		if len(ids) == 0 {
			return 0, nil
		}
		where += " AND id IN (" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")"
		for _, id := range ids {
			args = append(args, id)
		}
	} else if q != nil && q.Filter != nil {
		where += " AND " + c.cond(q.Filter)
		args = append(args, c.args...)
	}
	res, err := r.s.exec(ctx, `DELETE FROM table_rows WHERE `+where, args...)
	if err != nil {
		return 0, r.s.fail(err, "table rows")
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (r tablesStore) FindRows(ctx context.Context, tableID string, q *model.TableQuery) ([]*model.TableRow, error) {
	c := r.s.compiler()
	c.args = append(c.args, tableID)
	where := c.where(q)
	order := "id ASC"
	if q.OrderBy != nil {
		dir := "ASC NULLS FIRST"
		if q.Desc {
			dir = "DESC NULLS LAST"
		}
		order = c.expr(*q.OrderBy) + " " + dir + ", id ASC"
	}
	limit, arg := r.s.e.limitClause(q.Limit)
	c.args = append(append(c.args, arg...), q.Offset)
	rows, err := r.s.query(ctx, `SELECT `+rowCols+` FROM table_rows WHERE `+where+` ORDER BY `+order+` `+limit+` OFFSET ?`, c.args...)
	if err != nil {
		return nil, r.s.fail(err, "table rows")
	}
	return collect(rows, r.s, "table rows", max(q.Limit, 0), scanRow)
}

func (r tablesStore) GroupRows(ctx context.Context, tableID string, q *model.TableQuery) ([]map[string]any, error) {
	c := r.s.compiler()
	var sel, keys []string
	for i, a := range q.Group {
		e := c.expr(a.Field)
		switch a.Op {
		case "key":
			sel = append(sel, e)
			keys = append(keys, fmt.Sprint(i+1))
		case "count":
			sel = append(sel, "COUNT("+e+")")
		case "sum", "avg", "min", "max":
			sel = append(sel, strings.ToUpper(a.Op)+"("+e+")")
		case "unique":
			if c.pg {
				sel = append(sel, "CAST(jsonb_agg(DISTINCT "+e+") AS TEXT)")
			} else {
				sel = append(sel, "json_group_array(DISTINCT "+e+")")
			}
		}
	}
	c.args = append(c.args, tableID)
	where := c.where(q)
	query := `SELECT ` + strings.Join(sel, ", ") + ` FROM table_rows WHERE ` + where
	if len(keys) > 0 {
		query += " GROUP BY " + strings.Join(keys, ", ") + " ORDER BY " + strings.Join(keys, ", ")
	}
	limit, arg := r.s.e.limitClause(q.Limit)
	query += " " + limit + " OFFSET ?"
	c.args = append(append(c.args, arg...), q.Offset)
	rows, err := r.s.query(ctx, query, c.args...)
	if err != nil {
		return nil, r.s.fail(err, "table rows")
	}
	defer rows.Close()
	var out []map[string]any
	for len(out) < q.Limit && rows.Next() {
		vals := make([]any, len(q.Group))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for i, a := range q.Group {
			m[a.Name] = groupValue(a, vals[i])
		}
		out = append(out, m)
	}
	return out, r.s.fail(rows.Err(), "table rows")
}

// groupValue normalises what the engines return to JSON values.
func groupValue(a model.Aggregate, v any) any {
	if b, ok := v.([]byte); ok {
		v = string(b)
	}
	if a.Op == "unique" {
		s, _ := v.(string)
		var list []any
		_ = json.Unmarshal([]byte(s), &list)
		out := []any{}
		for _, e := range list {
			if e != nil {
				out = append(out, fixType(a.Field, e))
			}
		}
		sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
		return out
	}
	if a.Op == "count" {
		return toFloat(v)
	}
	if v == nil {
		return nil
	}
	if a.Op == "avg" || a.Op == "sum" {
		return toFloat(v)
	}
	return fixType(a.Field, v)
}

func fixType(f model.Field, v any) any {
	switch f.Type {
	case "number":
		return toFloat(v)
	case "boolean":
		switch b := v.(type) {
		case bool:
			return b
		default:
			return toFloat(v) != 0
		}
	}
	return v
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case float64:
		return n
	case float32:
		return float64(n)
	case string:
		var f float64
		fmt.Sscan(n, &f)
		return f
	}
	return 0
}

func (r tablesStore) PutJob(ctx context.Context, j *model.TableJob) error {
	newID(&j.ID)
	stamp(&j.CreatedAt, model.Now())
	j.UpdatedAt = model.Now()
	_, err := r.s.exec(ctx, `INSERT INTO table_jobs (id, bot_id, table_id, type, status, progress, input_file, output, format, error, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, progress = excluded.progress, output = excluded.output, error = excluded.error, updated_at = excluded.updated_at`,
		j.ID, j.BotID, j.TableID, j.Type, j.Status, j.Progress, j.InputFile, j.Output, j.Format, j.Error, ms(j.CreatedAt), ms(j.UpdatedAt))
	return r.s.fail(err, "table job")
}

const jobCols = `id, bot_id, table_id, type, status, progress, input_file, output, format, error, created_at, updated_at`

func scanJob(sc scanner) (*model.TableJob, error) {
	var j model.TableJob
	var c, u int64
	if err := sc.Scan(&j.ID, &j.BotID, &j.TableID, &j.Type, &j.Status, &j.Progress, &j.InputFile, &j.Output, &j.Format, &j.Error, &c, &u); err != nil {
		return nil, err
	}
	j.CreatedAt, j.UpdatedAt = fromMS(c), fromMS(u)
	return &j, nil
}

func (r tablesStore) GetJob(ctx context.Context, botID, id string) (*model.TableJob, error) {
	return one(ctx, r.s, "table job", scanJob, `SELECT `+jobCols+` FROM table_jobs WHERE bot_id = ? AND id = ?`, botID, id)
}

func (r tablesStore) ListJobs(ctx context.Context, tableID string) ([]*model.TableJob, error) {
	return all(ctx, r.s, "table job", scanJob, `SELECT `+jobCols+` FROM table_jobs WHERE table_id = ? ORDER BY created_at, id`, tableID)
}

// ---- the filter compiler

// tableSQL compiles model.Cond trees to SQL for one engine, collecting the
// bound arguments in order.
type tableSQL struct {
	pg   bool
	args []any
}

func (s *Store) compiler() *tableSQL { return &tableSQL{pg: s.e.d.Name == "postgres"} }

// TableFilterSQL compiles a filter for engine ("sqlite" or "postgres"):
// the WHERE fragment and its arguments (for tests and the fuzz target).
func TableFilterSQL(engine string, c model.Cond) (string, []any) {
	t := &tableSQL{pg: engine == "postgres"}
	sql := t.cond(c)
	return sql, t.args
}

func (c *tableSQL) bind(v any) string {
	c.args = append(c.args, v)
	return "?"
}

// where is the WHERE clause after "table_id = ?" (whose argument the
// caller added): the filter and the search.
func (c *tableSQL) where(q *model.TableQuery) string {
	w := "table_id = ?"
	if q.Filter != nil {
		w += " AND " + c.cond(q.Filter)
	}
	if q.Search != "" && len(q.SearchColumns) > 0 {
		var ors []string
		pat := "%" + likeEscape(strings.ToLower(q.Search)) + "%"
		for _, f := range q.SearchColumns {
			ors = append(ors, "COALESCE(LOWER("+c.expr(f)+") LIKE "+c.bind(pat)+` ESCAPE '\', FALSE)`)
		}
		w += " AND (" + strings.Join(ors, " OR ") + ")"
	}
	return w
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// expr is the SQL value of a field, typed by the column's type.
func (c *tableSQL) expr(f model.Field) string {
	if f.System != "" {
		switch f.System {
		case "id":
			return "id"
		case "created_at":
			return "created_at"
		default:
			return "updated_at"
		}
	}
	if !c.pg {
		return "json_extract(data, " + c.bind(`$."`+f.Name+`"`) + ")"
	}
	e := "(CAST(data AS jsonb) ->> " + c.bind(f.Name) + "::text)"
	switch f.Type {
	case "number":
		return "CAST(" + e + " AS float8)"
	case "boolean":
		return "CAST(" + e + " AS boolean)"
	}
	return e
}

// value binds a filter value with the engine's type.
func (c *tableSQL) value(f model.Field, v any) string {
	if f.System != "" {
		if c.pg {
			return c.bind(v) + "::float8"
		}
		return c.bind(v)
	}
	switch x := v.(type) {
	case bool:
		if c.pg {
			return c.bind(x) + "::boolean"
		}
		if x {
			return c.bind(int64(1))
		}
		return c.bind(int64(0))
	case float64:
		if c.pg {
			return c.bind(x) + "::float8"
		}
		return c.bind(x)
	case string:
		if c.pg {
			return c.bind(x) + "::text"
		}
		return c.bind(x)
	}
	return c.bind(fmt.Sprint(v))
}

var cmpOps = map[string]string{"eq": "=", "ne": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

// cond compiles a condition; every leaf is COALESCEd to true or false so
// that NOT behaves on missing values.
func (c *tableSQL) cond(cd model.Cond) string {
	switch x := cd.(type) {
	case model.AndCond:
		if len(x.Items) == 0 {
			return "TRUE"
		}
		parts := make([]string, len(x.Items))
		for i, it := range x.Items {
			parts[i] = c.cond(it)
		}
		return "(" + strings.Join(parts, " AND ") + ")"
	case model.OrCond:
		if len(x.Items) == 0 {
			return "FALSE"
		}
		parts := make([]string, len(x.Items))
		for i, it := range x.Items {
			parts[i] = c.cond(it)
		}
		return "(" + strings.Join(parts, " OR ") + ")"
	case model.NotCond:
		return "(NOT " + c.cond(x.Item) + ")"
	case model.CmpCond:
		e := c.expr(x.Field)
		if x.Value == nil {
			if x.Op == "ne" {
				return "(" + e + " IS NOT NULL)"
			}
			return "(" + e + " IS NULL)"
		}
		op, ok := cmpOps[x.Op]
		if !ok {
			panic("tables: unknown comparison " + x.Op) // the parser never builds one
		}
		missing := "FALSE"
		if x.Op == "ne" {
			missing = "TRUE"
		}
		return "COALESCE(" + e + " " + op + " " + c.value(x.Field, x.Value) + ", " + missing + ")"
	case model.InCond:
		if len(x.Values) == 0 {
			if x.Negate {
				return "TRUE"
			}
			return "FALSE"
		}
		e := c.expr(x.Field)
		vals := make([]string, len(x.Values))
		for i, v := range x.Values {
			vals[i] = c.value(x.Field, v)
		}
		if x.Negate {
			return "COALESCE(" + e + " NOT IN (" + strings.Join(vals, ", ") + "), TRUE)"
		}
		return "COALESCE(" + e + " IN (" + strings.Join(vals, ", ") + "), FALSE)"
	case model.ExistsCond:
		var e string
		if x.Field.System != "" {
			e = "TRUE"
		} else if c.pg {
			e = "COALESCE(jsonb_typeof(CAST(data AS jsonb) -> " + c.bind(x.Field.Name) + "::text) <> 'null', FALSE)"
		} else {
			e = "COALESCE(json_type(data, " + c.bind(`$."`+x.Field.Name+`"`) + ") <> 'null', FALSE)"
		}
		if !x.Exists {
			return "(NOT " + e + ")"
		}
		return e
	case model.RegexCond:
		e := c.expr(x.Field)
		if c.pg {
			return "COALESCE(" + e + " ~ " + c.bind(x.PGPattern) + "::text, FALSE)"
		}
		return "COALESCE(" + e + " REGEXP " + c.bind(x.Pattern) + ", FALSE)"
	}
	panic(fmt.Sprintf("tables: unknown condition %T", cd))
}
