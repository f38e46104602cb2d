package tables

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Jobs runs exports and imports. Parley runs them at once: the job
// returned is already completed (or failed), and getTableJobs lists it.
type Jobs struct {
	st    store.Store
	rows  *Rows
	files FileSource
}

// ExportFilePrefix starts the outputFileId of an export: Parley keeps the
// export with its job (Output); importTable accepts such an id too.
const ExportFilePrefix = "tablejob_"

// OutputFileID is the file id of a job's export.
func OutputFileID(j *model.TableJob) string {
	if j.Type != "export" || j.Status != "completed" {
		return ""
	}
	return ExportFilePrefix + j.ID
}

// Export is exportTable, as csv (default) or json.
func (s *Jobs) Export(ctx context.Context, botID, table, format string) (*model.TableJob, error) {
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "json" {
		return nil, model.Errorf(model.ErrInvalidQuery, "format: must be csv or json")
	}
	t, err := s.st.Tables().Get(ctx, botID, table)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.Tables().FindRows(ctx, t.ID, &model.TableQuery{Limit: model.MaxTableRows})
	if err != nil {
		return nil, err
	}
	var out []byte
	if format == "json" {
		list := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			prune(t, r)
			m := map[string]any{"id": r.ID, "createdAt": r.CreatedAt.Format(time.RFC3339Nano), "updatedAt": r.UpdatedAt.Format(time.RFC3339Nano)}
			for k, v := range r.Data {
				m[k] = v
			}
			list = append(list, m)
		}
		out, _ = json.Marshal(list)
	} else {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		head := []string{"id"}
		for _, c := range t.Columns {
			head = append(head, c.Name)
		}
		_ = w.Write(head)
		for _, r := range rows {
			rec := []string{strconv.FormatInt(r.ID, 10)}
			for _, c := range t.Columns {
				rec = append(rec, cell(r.Data[c.Name]))
			}
			_ = w.Write(rec)
		}
		w.Flush()
		out = b.Bytes()
	}
	j := &model.TableJob{BotID: botID, TableID: t.ID, Type: "export", Status: "completed", Progress: 100, Output: string(out), Format: format}
	return j, s.st.Tables().PutJob(ctx, j)
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Output returns an export's content and format (csv or json).
func (s *Jobs) Output(ctx context.Context, botID, jobID string) (string, string, error) {
	j, err := s.st.Tables().GetJob(ctx, botID, strings.TrimPrefix(jobID, ExportFilePrefix))
	if err != nil {
		return "", "", err
	}
	if j.Type != "export" {
		return "", "", model.NotFound("export " + jobID)
	}
	return j.Output, j.Format, nil
}

// List is getTableJobs.
func (s *Jobs) List(ctx context.Context, botID, table string) ([]*model.TableJob, error) {
	t, err := s.st.Tables().Get(ctx, botID, table)
	if err != nil {
		return nil, err
	}
	return s.st.Tables().ListJobs(ctx, t.ID)
}

// Import is importTable: the file (CSV with a header row, or a JSON array
// of objects) is appended to the table. Invalid content fails the job
// and writes no row; the job records why.
func (s *Jobs) Import(ctx context.Context, botID, table, fileID string) (*model.TableJob, error) {
	t, err := s.st.Tables().Get(ctx, botID, table)
	if err != nil {
		return nil, err
	}
	if fileID == "" {
		return nil, model.Errorf(model.ErrInvalidPayload, "fileId: required")
	}
	var content []byte
	if strings.HasPrefix(fileID, ExportFilePrefix) {
		out, _, err := s.Output(ctx, botID, fileID)
		if err != nil {
			return nil, err
		}
		content = []byte(out)
	} else if s.files != nil {
		if content, err = s.files.ReadFile(ctx, botID, fileID); err != nil {
			return nil, err
		}
	} else {
		return nil, model.NotFound("file " + fileID)
	}
	j := &model.TableJob{BotID: botID, TableID: t.ID, Type: "import", Status: "completed", Progress: 100, InputFile: fileID}
	rows, err := parseImport(t, content)
	if err == nil {
		err = s.st.InTx(ctx, func(tx store.Store) error {
			r := &Rows{st: tx}
			for i := 0; i < len(rows); i += model.MaxRowsPerRequest {
				if _, err := r.Create(ctx, botID, t.ID, rows[i:min(i+model.MaxRowsPerRequest, len(rows))]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		j.Status, j.Progress, j.Error = "failed", 0, messageOf(err)
	}
	return j, s.st.Tables().PutJob(ctx, j)
}

var systemFields = map[string]bool{"id": true, "createdAt": true, "updatedAt": true, "computed": true, "stale": true, "similarity": true}

func parseImport(t *model.Table, content []byte) ([]map[string]any, error) {
	trimmed := bytes.TrimSpace(content)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []map[string]any
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, model.Errorf(model.ErrInvalidPayload, "file: invalid JSON: %v", err)
		}
		for _, r := range list {
			for k := range r {
				if systemFields[k] {
					delete(r, k)
				}
			}
		}
		return list, nil
	}
	recs, err := csv.NewReader(bytes.NewReader(content)).ReadAll()
	if err != nil {
		return nil, model.Errorf(model.ErrInvalidPayload, "file: invalid CSV: %v", err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	head := recs[0]
	var out []map[string]any
	for n, rec := range recs[1:] {
		row := map[string]any{}
		for i, name := range head {
			if systemFields[name] || i >= len(rec) || rec[i] == "" {
				continue
			}
			c, ok := t.Column(name)
			if !ok {
				return nil, model.Errorf(model.ErrInvalidPayload, "file: column %q: no such column in table %s", name, t.Name)
			}
			v, err := fromCell(c, rec[i])
			if err != nil {
				return nil, model.Errorf(model.ErrInvalidPayload, "file: line %d, column %q: %v", n+2, name, err)
			}
			row[name] = v
		}
		out = append(out, row)
	}
	return out, nil
}

func fromCell(c *model.Column, s string) (any, error) {
	switch c.Type {
	case "number":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
		return b, nil
	case "object", "array":
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("not valid JSON (%v)", err)
		}
		return v, nil
	}
	return s, nil
}
