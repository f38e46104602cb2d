package tables

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Rows manages a table's rows.
type Rows struct {
	st      store.Store
	maxRows int
}

// FindInput is findTableRows' body (and deleteTableRows' filter).
type FindInput struct {
	Limit          *int           `json:"limit"`
	Offset         int            `json:"offset"`
	Filter         map[string]any `json:"filter"`
	Group          map[string]any `json:"group"`
	Search         string         `json:"search"`
	Select         []string       `json:"select"`
	OrderBy        string         `json:"orderBy"`
	OrderDirection string         `json:"orderDirection"`
}

// FindResult is findTableRows' answer: rows, or groups when group was given.
type FindResult struct {
	Rows    []*model.TableRow
	Groups  []map[string]any
	Select  []string
	HasMore bool
	Offset  int
	Limit   int
}

func (s *Rows) table(ctx context.Context, tx store.Store, botID, idOrName string) (*model.Table, error) {
	return tx.Tables().Get(ctx, botID, idOrName)
}

func validateRows(t *model.Table, rows []map[string]any, partial bool) error {
	if len(rows) == 0 {
		return model.Errorf(model.ErrInvalidPayload, "rows: expected at least one row")
	}
	if len(rows) > model.MaxRowsPerRequest {
		return model.Errorf(model.ErrLimitExceeded, "rows: at most %d rows per request", model.MaxRowsPerRequest)
	}
	for i, r := range rows {
		if err := model.ValidateTableRow(t, r, partial); err != nil {
			return model.Errorf(model.TypeOf(err), "rows[%d]: %s", i, messageOf(err))
		}
	}
	return nil
}

func messageOf(err error) string {
	if e, ok := err.(*model.Error); ok {
		return e.Message
	}
	return err.Error()
}

// Create is createTableRows: all rows are valid and stored, or none.
func (s *Rows) Create(ctx context.Context, botID, table string, rows []map[string]any) ([]*model.TableRow, error) {
	var out []*model.TableRow
	err := s.st.InTx(ctx, func(tx store.Store) error {
		t, err := s.table(ctx, tx, botID, table)
		if err != nil {
			return err
		}
		for _, r := range rows {
			delete(r, "id")
		}
		if err := validateRows(t, rows, false); err != nil {
			return err
		}
		n, err := tx.Tables().CountRows(ctx, t.ID)
		if err != nil {
			return err
		}
		if n+len(rows) > s.maxRows {
			return rowCountError(s.maxRows, n+len(rows))
		}
		out, err = tx.Tables().InsertRows(ctx, t.ID, rows)
		return err
	})
	return out, err
}

// Get is getTableRow.
func (s *Rows) Get(ctx context.Context, botID, table string, id int64) (*model.TableRow, error) {
	t, err := s.table(ctx, s.st, botID, table)
	if err != nil {
		return nil, err
	}
	row, err := s.st.Tables().GetRow(ctx, t.ID, id)
	if err != nil {
		return nil, err
	}
	return prune(t, row), nil
}

// prune drops the values of columns the table no longer has (updateTable
// replaced its schema): rows read and merged show the current columns only.
func prune(t *model.Table, row *model.TableRow) *model.TableRow {
	for k := range row.Data {
		if _, ok := t.Column(k); !ok {
			delete(row.Data, k)
		}
	}
	return row
}

func rowID(r map[string]any, i int) (int64, error) {
	f, ok := r["id"].(float64)
	if !ok || f < 1 || f != float64(int64(f)) {
		return 0, model.Errorf(model.ErrInvalidPayload, "rows[%d].id: expected a row id", i)
	}
	return int64(f), nil
}

// Update is updateTableRows: each row's given columns are merged into it
// (null clears one); all or none.
func (s *Rows) Update(ctx context.Context, botID, table string, rows []map[string]any) ([]*model.TableRow, error) {
	var out []*model.TableRow
	err := s.st.InTx(ctx, func(tx store.Store) error {
		t, err := s.table(ctx, tx, botID, table)
		if err != nil {
			return err
		}
		if len(rows) == 0 || len(rows) > model.MaxRowsPerRequest {
			return validateRows(t, rows, true)
		}
		for i, r := range rows {
			id, err := rowID(r, i)
			if err != nil {
				return err
			}
			patch := map[string]any{}
			for k, v := range r {
				if k != "id" {
					patch[k] = v
				}
			}
			row, err := tx.Tables().GetRow(ctx, t.ID, id)
			if err != nil {
				return err
			}
			merged, err := s.merge(t, row, patch, i)
			if err != nil {
				return err
			}
			if err := tx.Tables().ReplaceRow(ctx, t.ID, merged); err != nil {
				return err
			}
			out = append(out, merged)
		}
		return nil
	})
	return out, err
}

func (s *Rows) merge(t *model.Table, row *model.TableRow, patch map[string]any, i int) (*model.TableRow, error) {
	data := map[string]any{}
	for k, v := range prune(t, row).Data {
		data[k] = v
	}
	for k, v := range patch {
		data[k] = v
	}
	if err := model.ValidateTableRow(t, patch, true); err != nil {
		return nil, model.Errorf(model.TypeOf(err), "rows[%d]: %s", i, messageOf(err))
	}
	if err := model.ValidateTableRow(t, data, false); err != nil {
		return nil, model.Errorf(model.TypeOf(err), "rows[%d]: %s", i, messageOf(err))
	}
	row.Data = data
	return row, nil
}

// Delete is deleteTableRows: by ids, by filter, or every row
// (deleteAllRows); it answers how many were deleted.
func (s *Rows) Delete(ctx context.Context, botID, table string, ids []int64, filter map[string]any, all bool) (int, error) {
	t, err := s.table(ctx, s.st, botID, table)
	if err != nil {
		return 0, err
	}
	switch {
	case ids != nil:
		if len(ids) > model.MaxRowsPerRequest {
			return 0, model.Errorf(model.ErrLimitExceeded, "ids: at most %d per request", model.MaxRowsPerRequest)
		}
		return s.st.Tables().DeleteRows(ctx, t.ID, ids, nil)
	case filter != nil:
		c, err := model.ParseTableFilter(t, filter, "filter")
		if err != nil {
			return 0, err
		}
		return s.st.Tables().DeleteRows(ctx, t.ID, nil, &model.TableQuery{Filter: c})
	case all:
		return s.st.Tables().DeleteRows(ctx, t.ID, nil, &model.TableQuery{})
	}
	return 0, model.Errorf(model.ErrInvalidPayload, "give ids, filter or deleteAllRows")
}

// Upsert is upsertTableRows: rows whose key column value (keyColumn, else
// the table's, else id) matches a row update it; the others are inserted.
func (s *Rows) Upsert(ctx context.Context, botID, table, keyColumn string, rows []map[string]any) (inserted, updated []*model.TableRow, err error) {
	err = s.st.InTx(ctx, func(tx store.Store) error {
		t, err := s.table(ctx, tx, botID, table)
		if err != nil {
			return err
		}
		key := keyColumn
		if key == "" {
			key = t.KeyColumn
		}
		if key == "" {
			key = "id"
		}
		f, err := model.TableField(t, key, "keyColumn")
		if err != nil {
			return err
		}
		if len(rows) == 0 || len(rows) > model.MaxRowsPerRequest {
			return validateRows(t, rows, false)
		}
		var fresh []map[string]any
		for i, r := range rows {
			kv, ok := r[key]
			if !ok || kv == nil {
				if key != "id" {
					return model.Errorf(model.ErrInvalidPayload, "rows[%d]: key column %q is missing", i, key)
				}
				fresh = append(fresh, r)
				continue
			}
			c, err := model.ParseTableFilter(t, map[string]any{key: map[string]any{"$eq": kv}}, "rows["+itoa(i)+"]."+key)
			if err != nil {
				return err
			}
			found, err := tx.Tables().FindRows(ctx, t.ID, &model.TableQuery{Filter: c, Limit: 2})
			if err != nil {
				return err
			}
			if len(found) > 1 {
				return model.Errorf(model.ErrInvalidPayload, "rows[%d]: key column %q value matches more than one row", i, key)
			}
			if len(found) == 0 {
				if f.System == "id" {
					return model.NotFound("row " + itoa(int(kv.(float64))))
				}
				fresh = append(fresh, r)
				continue
			}
			patch := map[string]any{}
			for k, v := range r {
				if k != "id" {
					patch[k] = v
				}
			}
			merged, err := s.merge(t, found[0], patch, i)
			if err != nil {
				return err
			}
			if err := tx.Tables().ReplaceRow(ctx, t.ID, merged); err != nil {
				return err
			}
			updated = append(updated, merged)
		}
		if len(fresh) == 0 {
			return nil
		}
		for _, r := range fresh {
			delete(r, "id")
		}
		if err := validateRows(t, fresh, false); err != nil {
			return err
		}
		n, err := tx.Tables().CountRows(ctx, t.ID)
		if err != nil {
			return err
		}
		if n+len(fresh) > s.maxRows {
			return rowCountError(s.maxRows, n+len(fresh))
		}
		inserted, err = tx.Tables().InsertRows(ctx, t.ID, fresh)
		return err
	})
	return inserted, updated, err
}

// Find is findTableRows.
func (s *Rows) Find(ctx context.Context, botID, table string, in FindInput) (*FindResult, error) {
	t, err := s.table(ctx, s.st, botID, table)
	if err != nil {
		return nil, err
	}
	q, err := Query(t, in)
	if err != nil {
		return nil, err
	}
	res := &FindResult{Offset: q.Offset, Limit: q.Limit, Select: in.Select}
	want := q.Limit
	q.Limit++
	if q.Group != nil {
		res.Groups, err = s.st.Tables().GroupRows(ctx, t.ID, q)
		if len(res.Groups) > want {
			res.Groups, res.HasMore = res.Groups[:want], true
		}
		return res, err
	}
	res.Rows, err = s.st.Tables().FindRows(ctx, t.ID, q)
	for _, r := range res.Rows {
		prune(t, r)
	}
	if len(res.Rows) > want {
		res.Rows, res.HasMore = res.Rows[:want], true
	}
	return res, err
}

// Query validates a find input against t and builds the store's query.
func Query(t *model.Table, in FindInput) (*model.TableQuery, error) {
	q := &model.TableQuery{Limit: model.DefaultFindLimit, Offset: in.Offset, Search: in.Search}
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > model.MaxFindLimit {
			return nil, model.Errorf(model.ErrInvalidPayload, "limit: must be from 1 to %d", model.MaxFindLimit)
		}
		q.Limit = *in.Limit
	}
	if in.Offset < 0 {
		return nil, model.Errorf(model.ErrInvalidPayload, "offset: must not be negative")
	}
	if in.Filter != nil {
		c, err := model.ParseTableFilter(t, in.Filter, "filter")
		if err != nil {
			return nil, err
		}
		q.Filter = c
	}
	if in.OrderBy != "" {
		f, err := model.TableField(t, in.OrderBy, "orderBy")
		if err != nil {
			return nil, err
		}
		q.OrderBy = &f
	}
	switch in.OrderDirection {
	case "", "asc":
	case "desc":
		q.Desc = true
	default:
		return nil, model.Errorf(model.ErrInvalidPayload, "orderDirection: must be asc or desc")
	}
	for _, c := range in.Select {
		if _, err := model.TableField(t, c, "select"); err != nil {
			return nil, err
		}
	}
	if in.Search != "" {
		if len(in.Search) > 1024 {
			return nil, model.Errorf(model.ErrInvalidPayload, "search: at most 1024 characters")
		}
		if model.HasNUL(in.Search) {
			return nil, model.Errorf(model.ErrInvalidPayload, "search: text cannot contain the NUL character (\\u0000)")
		}
		for _, c := range t.Columns {
			if c.Type == "string" && c.Searchable {
				q.SearchColumns = append(q.SearchColumns, model.Field{Name: c.Name, Type: c.Type})
			}
		}
		if len(q.SearchColumns) == 0 { // no searchable column: every string column
			for _, c := range t.Columns {
				if c.Type == "string" {
					q.SearchColumns = append(q.SearchColumns, model.Field{Name: c.Name, Type: c.Type})
				}
			}
		}
		if len(q.SearchColumns) == 0 {
			q.Filter = model.OrCond{} // nothing to search: no row
		}
	}
	if in.Group != nil {
		g, err := model.ParseTableGroup(t, in.Group)
		if err != nil {
			return nil, err
		}
		q.Group = g
	}
	return q, nil
}

func itoa(n int) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for n > 0 {
		b = append([]byte{digits[n%10]}, b...)
		n /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}
