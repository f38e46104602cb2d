// Package tables serves the Tables API (/v1/tables/...) with the shapes
// @botpress/client 1.45.0 expects, over the use cases of internal/tables.
// Callers authenticate like the Runtime API's (runtimeapi.Credentials):
// a bot API key, a bot token or a member's PAT, with x-bot-id.
package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/model"
	rt "github.com/parley-bots/parley/internal/runtimeapi"
	uc "github.com/parley-bots/parley/internal/tables"
)

// BodyLimit is the Tables interface's payload limit (docs/architecture.md, Limits).
const BodyLimit = 40 << 20

// Authenticator checks a bearer token for a bot (runtimeapi.Credentials).
type Authenticator interface {
	Authenticate(ctx context.Context, token, botID string) (*rt.Caller, error)
}

// Deps are the handler's collaborators.
type Deps struct {
	Auth   Authenticator
	Tables *uc.Tables
	Rows   *uc.Rows
	Jobs   *uc.Jobs
	Limits *httpx.Limits // nil: none
}

// Handler serves the Tables API.
type Handler struct {
	d   Deps
	mux *httpx.Mux
}

// NewHandler returns the Tables API handler; it expects full paths.
func NewHandler(d Deps) http.Handler {
	h := &Handler{d: d, mux: httpx.NewMux()}
	h.routes()
	return httpx.CORS(httpx.LimitBody(BodyLimit, h.mux))
}

type botHandler func(w http.ResponseWriter, r *http.Request, botID string) error

// readOps may be called by members with read access; the others need
// write access to bots (as on the Runtime API).
var readOps = map[string]bool{"listTables": true, "getTable": true, "exportTable": true, "getTableJobs": true, "getTableRow": true, "findTableRows": true, "exportOutput": true}

func (h *Handler) routes() {
	m := h.mux
	const p = "/v1/tables"
	route := func(pattern string, hd http.Handler) { m.Handle(pattern, hd) }
	route("GET "+p, h.bot("listTables", h.listTables))
	route("POST "+p, h.bot("createTable", h.createTable))
	route("GET "+p+"/{table}", h.bot("getTable", h.getTable))
	route("POST "+p+"/{table}", h.bot("getOrCreateTable", h.getOrCreateTable))
	route("PUT "+p+"/{table}", h.bot("updateTable", h.updateTable))
	route("DELETE "+p+"/{table}", h.bot("deleteTable", h.deleteTable))
	route("POST "+p+"/{table}/duplicate", h.bot("duplicateTable", h.duplicateTable))
	route("PUT "+p+"/{table}/column", h.bot("renameTableColumn", h.renameTableColumn))
	route("GET "+p+"/{table}/export", h.bot("exportTable", h.exportTable))
	route("POST "+p+"/{table}/import", h.bot("importTable", h.importTable))
	route("GET "+p+"/{table}/jobs", h.bot("getTableJobs", h.getTableJobs))
	route("GET "+p+"/{table}/jobs/{job}/output", h.bot("exportOutput", h.exportOutput))
	route("GET "+p+"/{table}/row", h.bot("getTableRow", h.getTableRow))
	route("POST "+p+"/{table}/rows/find", h.bot("findTableRows", h.findTableRows))
	route("POST "+p+"/{table}/rows", h.bot("createTableRows", h.createTableRows))
	route("PUT "+p+"/{table}/rows", h.bot("updateTableRows", h.updateTableRows))
	route("POST "+p+"/{table}/rows/delete", h.bot("deleteTableRows", h.deleteTableRows))
	route("POST "+p+"/{table}/rows/upsert", h.bot("upsertTableRows", h.upsertTableRows))
	m.HandleFunc(p+"/", httpx.NoRoute)
}

func (h *Handler) bot(op string, fn botHandler) http.Handler {
	return httpx.Handler(func(w http.ResponseWriter, r *http.Request) error {
		c, err := h.d.Auth.Authenticate(r.Context(), httpx.BearerToken(r), r.Header.Get("x-bot-id"))
		if err != nil {
			return err
		}
		if c.Kind == rt.KindMember {
			perm := model.PermWriteBots
			if readOps[op] {
				perm = model.PermRead
			}
			if !c.Role.Can(perm) {
				return model.Forbidden("your role %q in this workspace does not allow you to %s (%s)", c.Role, perm, op)
			}
		}
		if err := h.d.Limits.AllowBot(c.BotID); err != nil {
			return err
		}
		return fn(w, r, c.BotID)
	})
}

func decode(r *http.Request, dst any) error { return httpx.Decode(r, dst, false) }

func ok(w http.ResponseWriter, v any) error { return httpx.JSON(w, http.StatusOK, v) }

// tagsOf reads tags.key=value (and tags[key]=value).
func tagsOf(r *http.Request) map[string]string {
	var out map[string]string
	for k, vs := range r.URL.Query() {
		var key string
		switch {
		case strings.HasPrefix(k, "tags."):
			key = strings.TrimPrefix(k, "tags.")
		case strings.HasPrefix(k, "tags[") && strings.HasSuffix(k, "]"):
			key = k[5 : len(k)-1]
		default:
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = vs[len(vs)-1]
	}
	return out
}

func (h *Handler) listTables(w http.ResponseWriter, r *http.Request, bot string) error {
	list, err := h.d.Tables.List(r.Context(), bot, tagsOf(r))
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, t := range list {
		out = append(out, uc.TableJSON(t))
	}
	return ok(w, map[string]any{"tables": out})
}

func (h *Handler) createTable(w http.ResponseWriter, r *http.Request, bot string) error {
	var in uc.TableInput
	if err := decodeTable(r, &in); err != nil {
		return err
	}
	t, err := h.d.Tables.Create(r.Context(), bot, in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"table": uc.TableJSON(t)})
}

func (h *Handler) getTable(w http.ResponseWriter, r *http.Request, bot string) error {
	info, err := h.d.Tables.Get(r.Context(), bot, r.PathValue("table"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"table": uc.TableJSON(info.Table), "rows": info.Rows, "stale": 0, "indexing": 0})
}

func (h *Handler) getOrCreateTable(w http.ResponseWriter, r *http.Request, bot string) error {
	var in uc.TableInput
	if err := decodeTable(r, &in); err != nil {
		return err
	}
	info, created, err := h.d.Tables.GetOrCreate(r.Context(), bot, r.PathValue("table"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"table": uc.TableJSON(info.Table), "created": created, "rows": info.Rows, "stale": 0, "indexing": 0})
}

func (h *Handler) updateTable(w http.ResponseWriter, r *http.Request, bot string) error {
	var in uc.TableInput
	if err := decodeTable(r, &in); err != nil {
		return err
	}
	t, err := h.d.Tables.Update(r.Context(), bot, r.PathValue("table"), in)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"table": uc.TableJSON(t)})
}

func (h *Handler) deleteTable(w http.ResponseWriter, r *http.Request, bot string) error {
	if err := h.d.Tables.Delete(r.Context(), bot, r.PathValue("table")); err != nil {
		return err
	}
	return ok(w, map[string]any{})
}

func (h *Handler) duplicateTable(w http.ResponseWriter, r *http.Request, bot string) error {
	var in struct {
		TableName  string `json:"tableName"`
		SchemaOnly bool   `json:"schemaOnly"`
		Factor     *int   `json:"factor"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	info, err := h.d.Tables.Duplicate(r.Context(), bot, r.PathValue("table"), in.TableName, in.SchemaOnly, in.Factor)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"table": uc.TableJSON(info.Table), "rows": info.Rows})
}

func (h *Handler) renameTableColumn(w http.ResponseWriter, r *http.Request, bot string) error {
	var in struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	t, err := h.d.Tables.RenameColumn(r.Context(), bot, r.PathValue("table"), in.Name, in.NewName)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"table": uc.TableJSON(t)})
}

func (h *Handler) exportTable(w http.ResponseWriter, r *http.Request, bot string) error {
	j, err := h.d.Jobs.Export(r.Context(), bot, r.PathValue("table"), r.URL.Query().Get("format"))
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"job": uc.JobJSON(j)})
}

func (h *Handler) exportOutput(w http.ResponseWriter, r *http.Request, bot string) error {
	content, format, err := h.d.Jobs.Output(r.Context(), bot, r.PathValue("job"))
	if err != nil {
		return err
	}
	if format == "json" {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	}
	_, err = w.Write([]byte(content))
	return err
}

func (h *Handler) importTable(w http.ResponseWriter, r *http.Request, bot string) error {
	var in struct {
		FileID string `json:"fileId"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	j, err := h.d.Jobs.Import(r.Context(), bot, r.PathValue("table"), in.FileID)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"job": uc.JobJSON(j)})
}

func (h *Handler) getTableJobs(w http.ResponseWriter, r *http.Request, bot string) error {
	jobs, err := h.d.Jobs.List(r.Context(), bot, r.PathValue("table"))
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, uc.JobJSON(j))
	}
	return ok(w, map[string]any{"jobs": out})
}

func (h *Handler) getTableRow(w http.ResponseWriter, r *http.Request, bot string) error {
	id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
	if err != nil || id < 1 {
		return model.Errorf(model.ErrInvalidQuery, "id: expected a row id")
	}
	row, err := h.d.Rows.Get(r.Context(), bot, r.PathValue("table"), id)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"row": uc.RowJSON(row, nil)})
}

func (h *Handler) findTableRows(w http.ResponseWriter, r *http.Request, bot string) error {
	var in uc.FindInput
	if err := decode(r, &in); err != nil {
		return err
	}
	res, err := h.d.Rows.Find(r.Context(), bot, r.PathValue("table"), in)
	if err != nil {
		return err
	}
	var rows []map[string]any
	if res.Groups != nil || in.Group != nil {
		rows = res.Groups
		if rows == nil {
			rows = []map[string]any{}
		}
	} else {
		rows = make([]map[string]any, 0, len(res.Rows))
		for _, row := range res.Rows {
			rows = append(rows, uc.RowJSON(row, res.Select))
		}
	}
	return ok(w, map[string]any{"rows": rows, "hasMore": res.HasMore, "offset": res.Offset, "limit": res.Limit})
}

type rowsBody struct {
	Rows      []map[string]any `json:"rows"`
	KeyColumn string           `json:"keyColumn"`
}

func (h *Handler) createTableRows(w http.ResponseWriter, r *http.Request, bot string) error {
	var in rowsBody
	if err := decode(r, &in); err != nil {
		return err
	}
	rows, err := h.d.Rows.Create(r.Context(), bot, r.PathValue("table"), in.Rows)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"rows": uc.RowsJSON(rows), "warnings": []string{}, "errors": []string{}})
}

func (h *Handler) updateTableRows(w http.ResponseWriter, r *http.Request, bot string) error {
	var in rowsBody
	if err := decode(r, &in); err != nil {
		return err
	}
	rows, err := h.d.Rows.Update(r.Context(), bot, r.PathValue("table"), in.Rows)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"rows": uc.RowsJSON(rows), "warnings": []string{}, "errors": []string{}})
}

func (h *Handler) upsertTableRows(w http.ResponseWriter, r *http.Request, bot string) error {
	var in rowsBody
	if err := decode(r, &in); err != nil {
		return err
	}
	ins, upd, err := h.d.Rows.Upsert(r.Context(), bot, r.PathValue("table"), in.KeyColumn, in.Rows)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"inserted": uc.RowsJSON(ins), "updated": uc.RowsJSON(upd), "warnings": []string{}, "errors": []string{}})
}

func (h *Handler) deleteTableRows(w http.ResponseWriter, r *http.Request, bot string) error {
	var in struct {
		IDs           []int64        `json:"ids"`
		Filter        map[string]any `json:"filter"`
		DeleteAllRows bool           `json:"deleteAllRows"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	n, err := h.d.Rows.Delete(r.Context(), bot, r.PathValue("table"), in.IDs, in.Filter, in.DeleteAllRows)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"deletedRows": n})
}

// decodeTable reads a table body, keeping the order of schema.properties
// as sent (a JSON object's order is lost in a Go map): columns without an
// x-zui index get their position.
func decodeTable(r *http.Request, in *uc.TableInput) error {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return httpx.TooLarge(tooBig.Limit)
	}
	if err != nil {
		return model.Errorf(model.ErrInvalidPayload, "could not read the body: %v", err)
	}
	if err := httpx.DecodeBytes(body, in, false); err != nil {
		return err
	}
	var outer struct {
		Schema struct {
			Properties json.RawMessage `json:"properties"`
		} `json:"schema"`
	}
	if json.Unmarshal(body, &outer) != nil || in.Schema == nil {
		return nil
	}
	props, _ := in.Schema["properties"].(map[string]any)
	for i, name := range objectKeys(outer.Schema.Properties) {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		z, ok := p["x-zui"].(map[string]any)
		if !ok {
			z = map[string]any{}
			p["x-zui"] = z
		}
		if _, ok := z["index"]; !ok {
			z["index"] = float64(i)
		}
	}
	return nil
}

// objectKeys lists a JSON object's keys in order.
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}
