package tables

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// The client's JSON shapes, shared by the HTTP API (httpapi/tables) and
// Invoke (the sandbox's client).

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// TableJSON is a table in the client's shape.
func TableJSON(t *model.Table) map[string]any {
	var key any
	if t.KeyColumn != "" {
		key = t.KeyColumn
	}
	tags := t.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	return map[string]any{"id": t.ID, "name": t.Name, "schema": t.Schema, "factor": t.Factor, "frozen": t.Frozen,
		"keyColumn": key, "tags": tags, "isComputeEnabled": false, "createdAt": ts(t.CreatedAt), "updatedAt": ts(t.UpdatedAt)}
}

// RowJSON is a row in the client's shape: its columns (those of sel
// when not nil), id, timestamps and computed.
func RowJSON(r *model.TableRow, sel []string) map[string]any {
	m := map[string]any{}
	if sel == nil {
		for k, v := range r.Data {
			m[k] = v
		}
	} else {
		for _, k := range sel {
			if v, ok := r.Data[k]; ok {
				m[k] = v
			}
		}
	}
	m["id"] = r.ID
	m["createdAt"] = ts(r.CreatedAt)
	m["updatedAt"] = ts(r.UpdatedAt)
	m["computed"] = map[string]any{}
	return m
}

// RowsJSON is RowJSON of each row.
func RowsJSON(rows []*model.TableRow) []map[string]any {
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, RowJSON(r, nil))
	}
	return out
}

// JobJSON is a job in the client's shape.
func JobJSON(j *model.TableJob) map[string]any {
	var in, out any
	if j.InputFile != "" {
		in = j.InputFile
	}
	if id := OutputFileID(j); id != "" {
		out = id
	}
	m := map[string]any{"id": j.ID, "botId": j.BotID, "tableId": j.TableID, "type": j.Type, "status": j.Status, "progress": j.Progress,
		"inputFileId": in, "outputFileId": out, "createdAt": ts(j.CreatedAt), "updatedAt": ts(j.UpdatedAt)}
	if j.Error != "" {
		m["error"] = j.Error
	}
	return m
}

// Invoker runs the row operations for a bot's own code (the sandbox's
// `client`, through turns.TablesAPI): input and output as the client's.
type Invoker struct {
	Rows *Rows
}

// TableOperations are the operations Invoke runs.
var TableOperations = []string{"findTableRows", "getTableRow", "createTableRows", "updateTableRows", "upsertTableRows", "deleteTableRows"}

// Invoke runs op for botID.
func (iv Invoker) Invoke(ctx context.Context, botID, op string, input json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Table     string           `json:"table"`
		ID        int64            `json:"id"`
		IDs       []int64          `json:"ids"`
		Rows      []map[string]any `json:"rows"`
		KeyColumn string           `json:"keyColumn"`
		Filter    map[string]any   `json:"filter"`
		DeleteAll bool             `json:"deleteAllRows"`
	}
	if len(input) > 0 {
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, model.Errorf(model.ErrInvalidPayload, "invalid input: %v", err)
		}
	}
	if in.Table == "" {
		return nil, model.Errorf(model.ErrInvalidPayload, "table: required")
	}
	var out any
	switch op {
	case "findTableRows":
		var f FindInput
		_ = json.Unmarshal(input, &f)
		res, err := iv.Rows.Find(ctx, botID, in.Table, f)
		if err != nil {
			return nil, err
		}
		rows := make([]map[string]any, 0, len(res.Rows))
		for _, r := range res.Rows {
			rows = append(rows, RowJSON(r, res.Select))
		}
		if f.Group != nil {
			rows = res.Groups
		}
		out = map[string]any{"rows": rows, "hasMore": res.HasMore, "offset": res.Offset, "limit": res.Limit}
	case "getTableRow":
		r, err := iv.Rows.Get(ctx, botID, in.Table, in.ID)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"row": RowJSON(r, nil)}
	case "createTableRows":
		rows, err := iv.Rows.Create(ctx, botID, in.Table, in.Rows)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"rows": RowsJSON(rows)}
	case "updateTableRows":
		rows, err := iv.Rows.Update(ctx, botID, in.Table, in.Rows)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"rows": RowsJSON(rows)}
	case "upsertTableRows":
		ins, upd, err := iv.Rows.Upsert(ctx, botID, in.Table, in.KeyColumn, in.Rows)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"inserted": RowsJSON(ins), "updated": RowsJSON(upd)}
	case "deleteTableRows":
		n, err := iv.Rows.Delete(ctx, botID, in.Table, in.IDs, in.Filter, in.DeleteAll)
		if err != nil {
			return nil, err
		}
		out = map[string]any{"deletedRows": n}
	default:
		return nil, model.Errorf(model.ErrMethodNotFound, "client.%s is not available in bot code", op)
	}
	return json.Marshal(out)
}
