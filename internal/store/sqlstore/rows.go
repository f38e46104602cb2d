package sqlstore

// Reading and writing rows: scanning, times, JSON columns, pages.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// Time helpers: timestamps are Unix milliseconds; 0 stands for the zero time.

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return model.FromMillis(v)
}

// stamp normalises t to what a read returns (UTC, milliseconds), defaulting
// a zero time to def.
func stamp(t *time.Time, def time.Time) {
	if t.IsZero() {
		*t = def
		return
	}
	*t = t.UTC().Truncate(time.Millisecond)
}

func newID(id *string) {
	if *id == "" {
		*id = model.NewID()
	}
}

// JSON helpers: JSON is stored as TEXT; nil round-trips as null.

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", model.Invalid("cannot encode JSON: %v", err)
	}
	return string(b), nil
}

func fromJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("corrupt stored JSON: %w", err)
	}
	return nil
}

func rawText(r json.RawMessage) string {
	if len(r) == 0 {
		return "null"
	}
	return string(r)
}

func nullRaw(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return string(r)
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// limitLiteral is "LIMIT n" written into the query, for queries that join
// tables and run often with a limit the code chooses (not the caller's
// page size): SQLite's planner reads a bound LIMIT when the query joins,
// so it re-prepares such a statement at every run (parsing the
// dispatcher's turn read took 15 % of the CPU under overload); with the
// limit in the text, the statement stays prepared (one per limit used).
func limitLiteral(n int) string { return "LIMIT " + strconv.Itoa(n) }

// Pagination: keyset on (timestamp, id), the token is base64url JSON of
// the last row's key.

const (
	defaultPageSize = 20
	maxPageSize     = 100
)

type cursor struct {
	T  int64  `json:"t"`
	ID string `json:"i"`
}

func encodeToken(t int64, id string) string {
	b, _ := json.Marshal(cursor{T: t, ID: id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(tok string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		d := json.NewDecoder(strings.NewReader(string(b)))
		d.DisallowUnknownFields()
		err = d.Decode(&c)
	}
	if err != nil || c.ID == "" {
		return c, model.Errorf(model.ErrInvalidQuery, "invalid pagination token")
	}
	return c, nil
}

func pageSize(p store.Page) int {
	switch {
	case p.Size <= 0:
		return defaultPageSize
	case p.Size > maxPageSize:
		return maxPageSize
	}
	return p.Size
}

// listSpec is a keyset-paginated query: sel is "SELECT ... FROM ...", where
// holds ANDed conditions with their args, and (tcol, idcol) is the key.
type listSpec struct {
	sel         string
	where       []string
	args        []any
	tcol, idcol string
	asc         bool
}

func list[T any](ctx context.Context, s *Store, p store.Page, ls listSpec, what string,
	scan func(scanner) (T, error), key func(T) (int64, string)) ([]T, string, error) {
	n := pageSize(p)
	where, args := ls.where, ls.args
	if p.Token != "" {
		c, err := decodeToken(p.Token)
		if err != nil {
			return nil, "", err
		}
		op := "<"
		if ls.asc {
			op = ">"
		}
		where = append(where[:len(where):len(where)], fmt.Sprintf("(%s, %s) %s (?, ?)", ls.tcol, ls.idcol, op))
		args = append(args[:len(args):len(args)], c.T, c.ID)
	}
	dir := "DESC"
	if ls.asc {
		dir = "ASC"
	}
	q := ls.sel
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += fmt.Sprintf(" ORDER BY %s %s, %s %s LIMIT ?", ls.tcol, dir, ls.idcol, dir)
	args = append(args[:len(args):len(args)], n+1)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, "", s.fail(err, what)
	}
	defer rows.Close()
	out := make([]T, 0, n)
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.fail(err, what)
	}
	next := ""
	if len(out) > n {
		out = out[:n]
		t, id := key(out[n-1])
		next = encodeToken(t, id)
	}
	return out, next, nil
}

// all runs a query and scans every row.
func all[T any](ctx context.Context, s *Store, what string, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, s.fail(err, what)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err, what)
	}
	return out, nil
}

func one[T any](ctx context.Context, s *Store, what string, scan func(scanner) (T, error), q string, args ...any) (T, error) {
	v, err := scan(s.queryRow(ctx, q, args...))
	if err != nil {
		var zero T
		return zero, s.fail(err, what)
	}
	return v, nil
}
