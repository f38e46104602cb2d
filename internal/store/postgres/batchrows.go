package postgres

import (
	"database/sql/driver"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// batchRows hands database/sql the rows of a query sent in a batch
// (pipeConn.QueryContext), each column as the Go type pgx's stdlib gives
// it, so that scanning is the same whichever way the query went out.
type batchRows struct {
	rows   pgx.Rows
	br     pgx.BatchResults
	names  []string
	values []func(src []byte) (driver.Value, error)
	first  bool // the first row was read ahead (more: whether there was one)
	more   bool
}

func newBatchRows(m *pgtype.Map, rows pgx.Rows, br pgx.BatchResults, more bool) *batchRows {
	fields := rows.FieldDescriptions()
	r := &batchRows{rows: rows, br: br, first: true, more: more,
		names: make([]string, len(fields)), values: make([]func([]byte) (driver.Value, error), len(fields))}
	for i, fd := range fields {
		r.names[i] = fd.Name
		r.values[i] = valueFunc(m, fd.DataTypeOID, fd.Format)
	}
	return r
}

// valueFunc decodes a column as stdlib's Rows.Next does for the types
// Parley's schema and queries use; others come as text, as there.
func valueFunc(m *pgtype.Map, oid uint32, format int16) func([]byte) (driver.Value, error) {
	switch oid {
	case pgtype.BoolOID:
		return scanAs[bool](m, oid, format, func(v bool) driver.Value { return v })
	case pgtype.ByteaOID, pgtype.JSONOID, pgtype.JSONBOID:
		return scanAs[[]byte](m, oid, format, func(v []byte) driver.Value { return v })
	case pgtype.Float4OID:
		return scanAs[float32](m, oid, format, func(v float32) driver.Value { return float64(v) })
	case pgtype.Float8OID:
		return scanAs[float64](m, oid, format, func(v float64) driver.Value { return v })
	case pgtype.Int2OID:
		return scanAs[int16](m, oid, format, func(v int16) driver.Value { return int64(v) })
	case pgtype.Int4OID:
		return scanAs[int32](m, oid, format, func(v int32) driver.Value { return int64(v) })
	case pgtype.Int8OID:
		return scanAs[int64](m, oid, format, func(v int64) driver.Value { return v })
	default:
		return scanAs[string](m, oid, format, func(v string) driver.Value { return v })
	}
}

func scanAs[T any](m *pgtype.Map, oid uint32, format int16, value func(T) driver.Value) func([]byte) (driver.Value, error) {
	var d T
	plan := m.PlanScan(oid, format, &d)
	return func(src []byte) (driver.Value, error) {
		var zero T
		d = zero // a []byte is scanned into fresh memory, not the last row's
		if err := plan.Scan(src, &d); err != nil {
			return nil, err
		}
		return value(d), nil
	}
}

func (r *batchRows) Columns() []string { return r.names }

func (r *batchRows) Close() error {
	r.rows.Close()
	err := r.rows.Err()
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *batchRows) Next(dest []driver.Value) error {
	more := r.more
	if r.first {
		r.first = false
	} else {
		more = r.rows.Next()
	}
	if !more {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	for i, raw := range r.rows.RawValues() {
		if raw == nil {
			dest[i] = nil
			continue
		}
		v, err := r.values[i](raw)
		if err != nil {
			return fmt.Errorf("convert field %d failed: %w", i, err)
		}
		dest[i] = v
	}
	return nil
}
