package sqlstore

// Reading and writing rows: scanning, times, JSON columns, pages.

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/bits"
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

// Limits. SQLite's planner reads the value bound to a LIMIT (to plan the
// query's sort), which makes the prepared statement depend on it: every
// run binds it again, which expires the statement, so a query with
// "LIMIT ?" is parsed again at every run (a stream's read of the signal
// log spent 2/3 of its time so, and the dispatcher's turn read took 15 %
// of the CPU under overload). On such an engine (Dialect.LiteralLimits)
// the limit is written into the query, rounded up to a power of two so
// that a query has a few prepared forms rather than one per limit, and
// the scan stops at the limit. Other engines bind it.

// limitClause is the LIMIT of a query that needs at most n rows, and its
// argument when it is bound; n ≤ 0 is LIMIT 0.
func (e *engine) limitClause(n int) (string, []any) {
	n = max(n, 0)
	if !e.d.LiteralLimits {
		return "LIMIT ?", []any{n}
	}
	if n == 0 {
		return "LIMIT 0", nil
	}
	return "LIMIT " + strconv.Itoa(1<<bits.Len(uint(n-1))), nil
}

// upTo runs q with a LIMIT of n appended (args are q's own) and scans at
// most n rows; n ≤ 0 reads none, as LIMIT 0 would.
func upTo[T any](ctx context.Context, s *Store, what string, n int, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	if n <= 0 {
		return nil, nil
	}
	clause, arg := s.e.limitClause(n)
	rows, err := s.query(ctx, q+" "+clause, append(args[:len(args):len(args)], arg...)...)
	if err != nil {
		return nil, s.fail(err, what)
	}
	return collect(rows, s, what, n, scan)
}

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
	q += fmt.Sprintf(" ORDER BY %s %s, %s %s", ls.tcol, dir, ls.idcol, dir)
	out, err := upTo(ctx, s, what, n+1, scan, q, args...)
	if err != nil {
		return nil, "", err
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
	return collect(rows, s, what, -1, scan)
}

// collect scans rows, at most n of them when n ≥ 0, and closes them.
func collect[T any](rows *sql.Rows, s *Store, what string, n int, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for (n < 0 || len(out) < n) && rows.Next() {
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
