// Package tables holds the Tables API's use cases (issue 15): Tables (a
// bot's tables and their columns), Rows (rows and the filter language)
// and Jobs (export, import). Every method acts for one bot; the caller
// (httpapi/tables) has authenticated it.
package tables

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// FileSource reads a file a bot uploaded (importTable's fileId): the
// Files API's library (files.Library.ReadFile), wired by the app. A file
// of another bot is not found. Exports of this package are readable
// without it (Jobs.Output); nil: only those can be imported.
type FileSource interface {
	ReadFile(ctx context.Context, botID, fileID string) ([]byte, error)
}

// Tables manages tables.
type Tables struct{ st store.Store }

// Limits lower the documented caps (docs/tables-api.md), for tests that
// reach a cap quickly; zero is the default. The app passes none.
type Limits struct {
	RowsPerTable int // model.MaxTableRows
}

// New returns the three use-case types on st.
func New(st store.Store, files FileSource, lim Limits) (*Tables, *Rows, *Jobs) {
	if lim.RowsPerTable <= 0 || lim.RowsPerTable > model.MaxTableRows {
		lim.RowsPerTable = model.MaxTableRows
	}
	t := &Tables{st: st}
	r := &Rows{st: st, maxRows: lim.RowsPerTable}
	return t, r, &Jobs{st: st, rows: r, files: files}
}

// TableInput is createTable's, getOrCreateTable's and updateTable's body.
type TableInput struct {
	Name      string            `json:"name"`
	Schema    map[string]any    `json:"schema"`
	KeyColumn *string           `json:"keyColumn"`
	Frozen    *bool             `json:"frozen"`
	Factor    *int              `json:"factor"`
	Tags      map[string]string `json:"tags"`
}

// TableInfo is a table with its row count.
type TableInfo struct {
	Table *model.Table
	Rows  int
}

func (in *TableInput) apply(t *model.Table, creating bool) error {
	if in.Schema != nil || creating {
		if !creating && t.Frozen {
			return model.Errorf(model.ErrInvalidPayload, "table %s is frozen: its schema cannot change", t.Name)
		}
		schema, cols, err := model.ParseTableSchema(in.Schema)
		if err != nil {
			return err
		}
		t.Schema, t.Columns = schema, cols
	}
	if in.Factor != nil {
		if *in.Factor < 1 || *in.Factor > 30 {
			return model.Errorf(model.ErrInvalidPayload, "factor: must be from 1 to 30")
		}
		if !creating && *in.Factor < t.Factor {
			return model.Errorf(model.ErrInvalidPayload, "factor: can only be increased (is %d)", t.Factor)
		}
		t.Factor = *in.Factor
	}
	if t.Factor == 0 {
		t.Factor = 1
	}
	if in.KeyColumn != nil {
		t.KeyColumn = *in.KeyColumn
	}
	if t.KeyColumn != "" {
		if _, ok := t.Column(t.KeyColumn); !ok {
			return model.Errorf(model.ErrInvalidPayload, "keyColumn: unknown column %q", t.KeyColumn)
		}
	}
	if in.Frozen != nil {
		t.Frozen = *in.Frozen
	}
	if in.Tags != nil {
		if t.Tags == nil {
			t.Tags = map[string]string{}
		}
		for k, v := range in.Tags {
			if v == "" {
				delete(t.Tags, k)
			} else {
				t.Tags[k] = v
			}
		}
	}
	return nil
}

// Create is createTable.
func (s *Tables) Create(ctx context.Context, botID string, in TableInput) (*model.Table, error) {
	if err := model.ValidateTableName(in.Name); err != nil {
		return nil, err
	}
	t := &model.Table{BotID: botID, Name: in.Name}
	if err := in.apply(t, true); err != nil {
		return nil, err
	}
	list, err := s.st.Tables().List(ctx, botID, nil)
	if err != nil {
		return nil, err
	}
	if len(list) >= model.MaxTablesPerBot {
		return nil, model.Errorf(model.ErrLimitExceeded, "a bot has at most %d tables", model.MaxTablesPerBot)
	}
	if err := s.st.Tables().Create(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Get is getTable (by id or name).
func (s *Tables) Get(ctx context.Context, botID, idOrName string) (*TableInfo, error) {
	t, err := s.st.Tables().Get(ctx, botID, idOrName)
	if err != nil {
		return nil, err
	}
	n, err := s.st.Tables().CountRows(ctx, t.ID)
	return &TableInfo{t, n}, err
}

// GetOrCreate is getOrCreateTable; created tells which.
func (s *Tables) GetOrCreate(ctx context.Context, botID, name string, in TableInput) (*TableInfo, bool, error) {
	info, err := s.Get(ctx, botID, name)
	if err == nil {
		return info, false, nil
	}
	if !model.IsNotFound(err) {
		return nil, false, err
	}
	in.Name = name
	t, err := s.Create(ctx, botID, in)
	if err != nil && model.TypeOf(err) == model.ErrAlreadyExists {
		info, err := s.Get(ctx, botID, name)
		return info, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return &TableInfo{t, 0}, true, nil
}

// Update is updateTable: the schema is replaced when given; a frozen
// table keeps its name and schema.
func (s *Tables) Update(ctx context.Context, botID, idOrName string, in TableInput) (*model.Table, error) {
	t, err := s.st.Tables().Get(ctx, botID, idOrName)
	if err != nil {
		return nil, err
	}
	if in.Name != "" && in.Name != t.Name {
		if t.Frozen {
			return nil, model.Errorf(model.ErrInvalidPayload, "table %s is frozen: it cannot be renamed", t.Name)
		}
		if err := model.ValidateTableName(in.Name); err != nil {
			return nil, err
		}
		t.Name = in.Name
	}
	if err := in.apply(t, false); err != nil {
		return nil, err
	}
	return t, s.st.Tables().Update(ctx, t)
}

// Delete is deleteTable.
func (s *Tables) Delete(ctx context.Context, botID, idOrName string) error {
	t, err := s.st.Tables().Get(ctx, botID, idOrName)
	if err != nil {
		return err
	}
	return s.st.Tables().Delete(ctx, botID, t.ID)
}

// List is listTables.
func (s *Tables) List(ctx context.Context, botID string, tags map[string]string) ([]*model.Table, error) {
	return s.st.Tables().List(ctx, botID, tags)
}

// RenameColumn is renameTableColumn: the schema and every row, in one
// transaction.
func (s *Tables) RenameColumn(ctx context.Context, botID, idOrName, name, newName string) (*model.Table, error) {
	var out *model.Table
	err := s.st.InTx(ctx, func(tx store.Store) error {
		t, err := tx.Tables().Get(ctx, botID, idOrName)
		if err != nil {
			return err
		}
		if t.Frozen {
			return model.Errorf(model.ErrInvalidPayload, "table %s is frozen: its columns cannot be renamed", t.Name)
		}
		if _, ok := t.Column(name); !ok {
			return model.Errorf(model.ErrInvalidPayload, "name: unknown column %q", name)
		}
		if _, ok := t.Column(newName); ok {
			return model.Errorf(model.ErrInvalidPayload, "newName: column %q already exists", newName)
		}
		props := t.Schema["properties"].(map[string]any)
		props[newName] = props[name]
		delete(props, name)
		if req, ok := t.Schema["required"].([]any); ok {
			for i, r := range req {
				if r == name {
					req[i] = newName
				}
			}
		}
		schema, cols, err := model.ParseTableSchema(t.Schema)
		if err != nil {
			return err
		}
		t.Schema, t.Columns = schema, cols
		if t.KeyColumn == name {
			t.KeyColumn = newName
		}
		if err := tx.Tables().Update(ctx, t); err != nil {
			return err
		}
		rows, err := tx.Tables().FindRows(ctx, t.ID, &model.TableQuery{Limit: model.MaxTableRows})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if v, ok := r.Data[name]; ok {
				delete(r.Data, name)
				r.Data[newName] = v
				if err := tx.Tables().ReplaceRow(ctx, t.ID, r); err != nil {
					return err
				}
			}
		}
		out = t
		return nil
	})
	return out, err
}

// Duplicate is duplicateTable: the schema, and the rows unless schemaOnly.
func (s *Tables) Duplicate(ctx context.Context, botID, source, newName string, schemaOnly bool, factor *int) (*TableInfo, error) {
	var out *TableInfo
	err := s.st.InTx(ctx, func(tx store.Store) error {
		src, err := tx.Tables().Get(ctx, botID, source)
		if err != nil {
			return err
		}
		if newName == "" {
			newName = src.Name + "Copy"
		}
		if err := model.ValidateTableName(newName); err != nil {
			return err
		}
		t := &model.Table{BotID: botID, Name: newName, Schema: src.Schema, Columns: src.Columns, KeyColumn: src.KeyColumn, Frozen: src.Frozen, Factor: src.Factor, Tags: src.Tags}
		if factor != nil {
			if *factor < 1 || *factor > 30 {
				return model.Errorf(model.ErrInvalidPayload, "factor: must be from 1 to 30")
			}
			t.Factor = *factor
		}
		if err := tx.Tables().Create(ctx, t); err != nil {
			return err
		}
		out = &TableInfo{Table: t}
		if schemaOnly {
			return nil
		}
		rows, err := tx.Tables().FindRows(ctx, src.ID, &model.TableQuery{Limit: model.MaxTableRows})
		if err != nil {
			return err
		}
		for i := 0; i < len(rows); i += model.MaxRowsPerRequest {
			end := min(i+model.MaxRowsPerRequest, len(rows))
			data := make([]map[string]any, 0, end-i)
			for _, r := range rows[i:end] {
				data = append(data, prune(src, r).Data)
			}
			if _, err := tx.Tables().InsertRows(ctx, t.ID, data); err != nil {
				return err
			}
		}
		out.Rows = len(rows)
		return nil
	})
	return out, err
}

func rowCountError(max, n int) error {
	return model.Errorf(model.ErrLimitExceeded, "a table holds at most %d rows (this write would make %d)", max, n)
}
