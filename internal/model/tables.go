package model

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Tables (issue 15): a bot's tables of JSON rows, their columns from the
// client's JSON-Schema-like schema, and the filter language of
// findTableRows, parsed here into a Cond tree that the store compiles to
// parameterized SQL per engine (docs/tables-api.md).

// Table caps (docs/tables-api.md).
const (
	MaxTableColumns    = 50
	MaxTableRows       = 1_000_000
	MaxRowsPerRequest  = 1000
	MaxTableRowBytes   = 4 << 10 // times the table's factor
	MaxTablesPerBot    = 100
	MaxFilterDepth     = 16
	MaxFilterNodes     = 256
	MaxRegexLength     = 256
	DefaultFindLimit   = 100
	MaxFindLimit       = 1000
	MaxTableNameLength = 64
)

// Column types of the schema.
var columnTypes = map[string]bool{"string": true, "number": true, "boolean": true, "object": true, "array": true, "null": true}

// Column is one property of a table's schema.
type Column struct {
	Name       string
	Type       string
	Nullable   bool
	Required   bool
	Searchable bool
	DateTime   bool
	Enum       []string
	Pattern    *regexp.Regexp
}

// Table is a bot's table. Schema is the client's schema object as stored
// (with x-zui indexes filled in); Columns is read from it.
type Table struct {
	ID        string
	BotID     string
	Name      string
	Schema    map[string]any
	Columns   []Column
	KeyColumn string
	Frozen    bool
	Factor    int
	Tags      map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Column returns the named column.
func (t *Table) Column(name string) (*Column, bool) {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i], true
		}
	}
	return nil, false
}

// TableRow is one row: its id, timestamps and data (column -> value).
type TableRow struct {
	ID        int64
	Data      map[string]any
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableJob is an export, import or duplicate run on a table.
type TableJob struct {
	ID        string
	BotID     string
	TableID   string
	Type      string // export, import, duplicate_table
	Status    string // pending, in_progress, completed, failed
	Progress  int
	InputFile string
	Output    string // an export's content
	Format    string // csv or json
	Error     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

var tableNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// ValidateTableName checks a table name: a letter then letters, digits
// or underscores (Botpress requires names ending in "Table"; Parley
// accepts any such identifier).
func ValidateTableName(name string) error {
	if name == "" || len(name) > MaxTableNameLength || !tableNameRE.MatchString(name) {
		return Errorf(ErrInvalidPayload, "name: %q is not a valid table name (a letter, then letters, digits or _; at most %d characters)", name, MaxTableNameLength)
	}
	return nil
}

var columnNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved column names are the row's own fields.
var reservedColumns = map[string]bool{"id": true, "createdAt": true, "updatedAt": true, "computed": true, "stale": true, "similarity": true}

// ParseTableSchema reads the client's schema ({type: object, properties:
// {...}, required: [...]}) into columns, filling each property's x-zui
// index, and returns the normalised schema.
func ParseTableSchema(schema map[string]any) (map[string]any, []Column, error) {
	if schema == nil {
		schema = map[string]any{}
	}
	props := map[string]any{}
	if p, ok := schema["properties"]; ok && p != nil {
		m, ok := p.(map[string]any)
		if !ok {
			return nil, nil, Errorf(ErrInvalidPayload, "schema.properties: must be an object")
		}
		props = m
	}
	if len(props) > MaxTableColumns {
		return nil, nil, Errorf(ErrLimitExceeded, "schema: a table has at most %d columns (got %d)", MaxTableColumns, len(props))
	}
	required := map[string]bool{}
	if r, ok := schema["required"]; ok && r != nil {
		list, ok := r.([]any)
		if !ok {
			return nil, nil, Errorf(ErrInvalidPayload, "schema.required: must be an array of column names")
		}
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return nil, nil, Errorf(ErrInvalidPayload, "schema.required: must be an array of column names")
			}
			if _, ok := props[s]; !ok {
				return nil, nil, Errorf(ErrInvalidPayload, "schema.required: column %q is not in schema.properties", s)
			}
			required[s] = true
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	// keep the given x-zui order, then by name
	index := func(n string) float64 {
		if p, ok := props[n].(map[string]any); ok {
			if z, ok := p["x-zui"].(map[string]any); ok {
				if i, ok := z["index"].(float64); ok {
					return i
				}
			}
		}
		return math.MaxFloat64
	}
	sort.SliceStable(names, func(i, j int) bool {
		a, b := index(names[i]), index(names[j])
		if a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	var cols []Column
	outProps := map[string]any{}
	for i, n := range names {
		if !columnNameRE.MatchString(n) || len(n) > 64 {
			return nil, nil, Errorf(ErrInvalidPayload, "schema.properties: %q is not a valid column name", n)
		}
		if reservedColumns[n] {
			return nil, nil, Errorf(ErrInvalidPayload, "schema.properties: %q is reserved for the row's own field", n)
		}
		p, ok := props[n].(map[string]any)
		if !ok {
			return nil, nil, Errorf(ErrInvalidPayload, "schema.properties.%s: must be an object", n)
		}
		typ, _ := p["type"].(string)
		if !columnTypes[typ] {
			return nil, nil, Errorf(ErrInvalidPayload, "schema.properties.%s.type: must be one of string, number, boolean, object, array, null", n)
		}
		c := Column{Name: n, Type: typ, Required: required[n]}
		c.Nullable, _ = p["nullable"].(bool)
		if f, _ := p["format"].(string); f == "date-time" {
			c.DateTime = true
		}
		if e, ok := p["enum"].([]any); ok {
			for _, v := range e {
				s, ok := v.(string)
				if !ok {
					return nil, nil, Errorf(ErrInvalidPayload, "schema.properties.%s.enum: must be strings", n)
				}
				c.Enum = append(c.Enum, s)
			}
		}
		if pat, ok := p["pattern"].(string); ok && pat != "" {
			re, err := compileUserRegex(pat, "")
			if err != nil {
				return nil, nil, Errorf(ErrInvalidPayload, "schema.properties.%s.pattern: %v", n, err)
			}
			c.Pattern = re
		}
		zui, _ := p["x-zui"].(map[string]any)
		nz := map[string]any{}
		for k, v := range zui {
			nz[k] = v
		}
		nz["index"] = i
		if s, ok := nz["searchable"].(bool); ok {
			c.Searchable = s
		}
		np := map[string]any{}
		for k, v := range p {
			np[k] = v
		}
		np["x-zui"] = nz
		outProps[n] = np
		cols = append(cols, c)
	}
	out := map[string]any{"type": "object", "properties": outProps, "additionalProperties": true}
	if s, ok := schema["$schema"].(string); ok {
		out["$schema"] = s
	}
	if len(required) > 0 {
		req := make([]any, 0, len(required))
		for _, n := range names {
			if required[n] {
				req = append(req, n)
			}
		}
		out["required"] = req
	}
	return out, cols, nil
}

// ValidateTableRow checks a row's data against the table's columns: every
// key is a column, every value has the column's type. partial skips the
// required check (updates).
func ValidateTableRow(t *Table, data map[string]any, partial bool) error {
	for k, v := range data {
		c, ok := t.Column(k)
		if !ok {
			return Errorf(ErrInvalidPayload, "column %q: no such column in table %s", k, t.Name)
		}
		if err := c.check(v); err != nil {
			return Errorf(ErrInvalidPayload, "column %q: %v", k, err)
		}
		if HasNUL(v) {
			return Errorf(ErrInvalidPayload, "column %q: %s", k, nulMessage)
		}
	}
	if !partial {
		for _, c := range t.Columns {
			if v, ok := data[c.Name]; c.Required && (!ok || v == nil) {
				return Errorf(ErrInvalidPayload, "column %q: is required", c.Name)
			}
		}
	}
	b, _ := json.Marshal(data)
	factor := t.Factor
	if factor < 1 {
		factor = 1
	}
	if len(b) > MaxTableRowBytes*factor {
		return Errorf(ErrLimitExceeded, "row: %d bytes is above the table's row limit of %d bytes (4 KB times factor %d)", len(b), MaxTableRowBytes*factor, factor)
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64, json.Number, int, int64:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func (c *Column) check(v any) error {
	got := jsonType(v)
	if v == nil {
		if c.Nullable || c.Type == "null" || !c.Required {
			return nil
		}
		return fmt.Errorf("must not be null")
	}
	if got != c.Type {
		return fmt.Errorf("expected %s, got %s", c.Type, got)
	}
	if s, ok := v.(string); ok {
		if c.DateTime {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return fmt.Errorf("expected a date-time (RFC 3339), got %q", s)
			}
		}
		if len(c.Enum) > 0 {
			found := false
			for _, e := range c.Enum {
				found = found || e == s
			}
			if !found {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(c.Enum, ", "))
			}
		}
		if c.Pattern != nil && !c.Pattern.MatchString(s) {
			return fmt.Errorf("%q does not match the column's pattern", s)
		}
	}
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return fmt.Errorf("must be a finite number")
	}
	return nil
}

// compileUserRegex compiles a user's pattern (Go RE2 syntax: linear time)
// with options i, m, s.
func compileUserRegex(pattern, options string) (*regexp.Regexp, error) {
	if len(pattern) > MaxRegexLength {
		return nil, fmt.Errorf("pattern longer than %d characters", MaxRegexLength)
	}
	flags := ""
	for _, o := range options {
		switch o {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, o) {
				flags += string(o)
			}
		default:
			return nil, fmt.Errorf("unknown regex option %q (i, m, s)", o)
		}
	}
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	return regexp.Compile(pattern)
}

// CompileTableRegex is the REGEXP function's compile step (the SQLite
// engine registers it); pattern carries its flags already.
func CompileTableRegex(pattern string) (*regexp.Regexp, error) {
	if len(pattern) > MaxRegexLength+8 {
		return nil, fmt.Errorf("pattern longer than %d characters", MaxRegexLength)
	}
	return regexp.Compile(pattern)
}

const nulMessage = "text cannot contain the NUL character (\\u0000)"

// HasNUL reports whether a JSON value holds the NUL character in a string
// or an object key: PostgreSQL's text cannot store it, so the Tables API
// refuses it on both engines.
func HasNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case []any:
		for _, e := range x {
			if HasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.IndexByte(k, 0) >= 0 || HasNUL(e) {
				return true
			}
		}
	}
	return false
}
