package tables

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
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
// of objects; gzipped or not) is appended to the table. fileID is an
// export's outputFileId or a file the bot uploaded to the Files API (its
// FileSource). A file that cannot be read is refused with no job; content
// that does not fit the table fails the job, which says why (getTableJobs
// lists it), and writes no row.
func (s *Jobs) Import(ctx context.Context, botID, table, fileID string) (*model.TableJob, error) {
	t, err := s.st.Tables().Get(ctx, botID, table)
	if err != nil {
		return nil, err
	}
	if fileID == "" {
		return nil, model.Errorf(model.ErrInvalidPayload, "fileId: required")
	}
	var content []byte
	switch {
	case strings.HasPrefix(fileID, ExportFilePrefix):
		out, _, err := s.Output(ctx, botID, fileID)
		if err != nil {
			return nil, err
		}
		content = []byte(out)
	case s.files != nil:
		if content, err = s.files.ReadFile(ctx, botID, fileID); err != nil {
			return nil, err
		}
	default:
		return nil, model.NotFound("File " + strconv.Quote(fileID))
	}
	j := &model.TableJob{BotID: botID, TableID: t.ID, Type: "import", Status: "completed", Progress: 100, InputFile: fileID}
	rows, err := parseImport(t, content)
	if err == nil {
		err = s.insert(ctx, botID, t, rows)
	}
	if err != nil {
		j.Status, j.Progress, j.Error = "failed", 0, messageOf(err)
	}
	return j, s.st.Tables().PutJob(ctx, j)
}

// insert checks every row, naming the file's row that does not fit, then
// stores them all in one transaction.
func (s *Jobs) insert(ctx context.Context, botID string, t *model.Table, rows []map[string]any) error {
	for i, r := range rows {
		if err := model.ValidateTableRow(t, r, false); err != nil {
			return model.Errorf(model.TypeOf(err), "file: row %d: %s", i+1, messageOf(err))
		}
	}
	return s.st.InTx(ctx, func(tx store.Store) error {
		r := &Rows{st: tx, maxRows: s.rows.maxRows}
		for i := 0; i < len(rows); i += model.MaxRowsPerRequest {
			if _, err := r.Create(ctx, botID, t.ID, rows[i:min(i+model.MaxRowsPerRequest, len(rows))]); err != nil {
				return err
			}
		}
		return nil
	})
}

// gunzip returns content, decompressed when it is gzipped (at most
// model.MaxUploadSize bytes once decompressed).
func gunzip(content []byte) ([]byte, error) {
	if len(content) < 2 || content[0] != 0x1f || content[1] != 0x8b {
		return content, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(content))
	if err != nil {
		return nil, model.Errorf(model.ErrInvalidPayload, "file: invalid gzip: %v", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, model.MaxUploadSize+1))
	if err != nil {
		return nil, model.Errorf(model.ErrInvalidPayload, "file: invalid gzip: %v", err)
	}
	if len(out) > model.MaxUploadSize {
		return nil, model.Errorf(model.ErrLimitExceeded, "file: more than %d bytes once decompressed", model.MaxUploadSize)
	}
	return out, nil
}

var systemFields = map[string]bool{"id": true, "createdAt": true, "updatedAt": true, "computed": true, "stale": true, "similarity": true}

func parseImport(t *model.Table, content []byte) ([]map[string]any, error) {
	content, err := gunzip(content)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(content)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []map[string]any
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, model.Errorf(model.ErrInvalidPayload, "file: invalid JSON: %v", err)
		}
		for i, r := range list {
			if r == nil {
				return nil, model.Errorf(model.ErrInvalidPayload, "file: row %d: expected an object", i+1)
			}
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
	cols := make([]*model.Column, len(head))
	for i, name := range head {
		if systemFields[name] {
			continue
		}
		c, ok := t.Column(name)
		if !ok {
			return nil, model.Errorf(model.ErrInvalidPayload, "file: column %q: no such column in table %s", name, t.Name)
		}
		cols[i] = c
	}
	var out []map[string]any
	for n, rec := range recs[1:] {
		row := map[string]any{}
		for i, name := range head {
			c := cols[i]
			if c == nil || i >= len(rec) || rec[i] == "" {
				continue
			}
			v, err := fromCell(c, rec[i])
			if err != nil {
				return nil, model.Errorf(model.ErrInvalidPayload, "file: row %d: column %q: %v", n+1, name, err)
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
