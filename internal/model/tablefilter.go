package model

import (
	"sort"
	"strings"
	"time"
)

// Cond is a parsed findTableRows filter. The store compiles it to SQL
// with every value and column name as a bound parameter.
type Cond interface{ isCond() }

// Field is a filterable column: a schema column (read from the row's JSON)
// or one of the row's own fields (System: id, createdAt, updatedAt).
type Field struct {
	Name   string
	Type   string // string, number, boolean, object, array, null
	System string // "", "id", "created_at", "updated_at"
}

type (
	// AndCond holds when all of Items do (none: true).
	AndCond struct{ Items []Cond }
	// OrCond holds when any of Items does (none: false).
	OrCond struct{ Items []Cond }
	// NotCond negates Item.
	NotCond struct{ Item Cond }
	// CmpCond compares Field to Value: Op is eq, ne, gt, gte, lt, lte. A
	// nil Value (eq, ne only) tests for null or absent.
	CmpCond struct {
		Field Field
		Op    string
		Value any
	}
	// InCond tests membership (Negate: $nin).
	InCond struct {
		Field  Field
		Values []any
		Negate bool
	}
	// ExistsCond tests that the column has a non-null value.
	ExistsCond struct {
		Field  Field
		Exists bool
	}
	// RegexCond matches a string column against Pattern (Go RE2 syntax,
	// flags inline; SQLite's REGEXP) or PGPattern, the same pattern in
	// PostgreSQL's syntax (PostgresRegex).
	RegexCond struct {
		Field     Field
		Pattern   string
		PGPattern string
	}
)

func (AndCond) isCond()    {}
func (OrCond) isCond()     {}
func (NotCond) isCond()    {}
func (CmpCond) isCond()    {}
func (InCond) isCond()     {}
func (ExistsCond) isCond() {}
func (RegexCond) isCond()  {}

// TableField resolves a column name for a filter, sort or group.
func TableField(t *Table, name, where string) (Field, error) {
	switch name {
	case "id":
		return Field{Name: name, Type: "number", System: "id"}, nil
	case "createdAt":
		return Field{Name: name, Type: "number", System: "created_at"}, nil
	case "updatedAt":
		return Field{Name: name, Type: "number", System: "updated_at"}, nil
	}
	c, ok := t.Column(name)
	if !ok {
		return Field{}, Errorf(ErrInvalidPayload, "%s: unknown column %q", where, name)
	}
	return Field{Name: name, Type: c.Type}, nil
}

type filterParser struct {
	t     *Table
	nodes int
	where string
}

// ParseTableFilter validates a filter against t's columns: an unknown
// operator or column, or a value of the wrong type, is a 400 naming it.
func ParseTableFilter(t *Table, filter map[string]any, where string) (Cond, error) {
	p := &filterParser{t: t, where: where}
	if HasNUL(filter) {
		return nil, p.err("%s", nulMessage)
	}
	return p.doc(filter, 0)
}

func (p *filterParser) err(format string, args ...any) error {
	return Errorf(ErrInvalidPayload, p.where+": "+format, args...)
}

func (p *filterParser) count(depth int) error {
	p.nodes++
	if p.nodes > MaxFilterNodes {
		return p.err("more than %d conditions", MaxFilterNodes)
	}
	if depth > MaxFilterDepth {
		return p.err("nested deeper than %d levels", MaxFilterDepth)
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (p *filterParser) doc(m map[string]any, depth int) (Cond, error) {
	if err := p.count(depth); err != nil {
		return nil, err
	}
	var items []Cond
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "$and", "$or":
			list, ok := v.([]any)
			if !ok {
				return nil, p.err("%s: expected an array of filters", k)
			}
			var subs []Cond
			for _, e := range list {
				sm, ok := e.(map[string]any)
				if !ok {
					return nil, p.err("%s: expected an array of filters", k)
				}
				c, err := p.doc(sm, depth+1)
				if err != nil {
					return nil, err
				}
				subs = append(subs, c)
			}
			if k == "$and" {
				items = append(items, AndCond{subs})
			} else {
				items = append(items, OrCond{subs})
			}
		case "$not":
			sm, ok := v.(map[string]any)
			if !ok {
				return nil, p.err("$not: expected a filter object")
			}
			c, err := p.doc(sm, depth+1)
			if err != nil {
				return nil, err
			}
			items = append(items, NotCond{c})
		default:
			if strings.HasPrefix(k, "$") {
				return nil, p.err("unknown operator %q", k)
			}
			f, err := TableField(p.t, k, p.where)
			if err != nil {
				return nil, err
			}
			c, err := p.field(f, v, depth+1)
			if err != nil {
				return nil, err
			}
			items = append(items, c)
		}
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return AndCond{items}, nil
}

func isOps(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, false
	}
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return nil, false
		}
	}
	return m, true
}

func (p *filterParser) field(f Field, v any, depth int) (Cond, error) {
	if err := p.count(depth); err != nil {
		return nil, err
	}
	ops, ok := isOps(v)
	if !ok {
		if m, isMap := v.(map[string]any); isMap {
			for k := range m {
				if strings.HasPrefix(k, "$") {
					return nil, p.err("column %q: mixes operators and values", f.Name)
				}
			}
		}
		val, err := p.value(f, v, "$eq")
		if err != nil {
			return nil, err
		}
		return CmpCond{f, "eq", val}, nil
	}
	var items []Cond
	options, hasOptions := ops["$options"]
	for _, op := range sortedKeys(ops) {
		arg := ops[op]
		switch op {
		case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
			val, err := p.value(f, arg, op)
			if err != nil {
				return nil, err
			}
			if val == nil && op != "$eq" && op != "$ne" {
				return nil, p.err("column %q: %s needs a value, not null", f.Name, op)
			}
			if op != "$eq" && op != "$ne" && (f.Type == "object" || f.Type == "array" || f.Type == "boolean") {
				return nil, p.err("column %q: %s does not apply to a %s column", f.Name, op, f.Type)
			}
			items = append(items, CmpCond{f, op[1:], val})
		case "$in", "$nin":
			list, ok := arg.([]any)
			if !ok {
				return nil, p.err("column %q: %s expects an array", f.Name, op)
			}
			if len(list) > 1000 {
				return nil, p.err("column %q: %s has more than 1000 values", f.Name, op)
			}
			vals := make([]any, 0, len(list))
			for _, e := range list {
				val, err := p.value(f, e, op)
				if err != nil {
					return nil, err
				}
				if val == nil {
					return nil, p.err("column %q: %s values must not be null", f.Name, op)
				}
				vals = append(vals, val)
			}
			items = append(items, InCond{f, vals, op == "$nin"})
		case "$exists":
			b, ok := arg.(bool)
			if !ok {
				return nil, p.err("column %q: $exists expects true or false", f.Name)
			}
			items = append(items, ExistsCond{f, b})
		case "$regex":
			pat, ok := arg.(string)
			if !ok {
				return nil, p.err("column %q: $regex expects a string", f.Name)
			}
			if f.Type != "string" {
				return nil, p.err("column %q: $regex applies to string columns only", f.Name)
			}
			opt := ""
			if hasOptions {
				if opt, ok = options.(string); !ok {
					return nil, p.err("column %q: $options expects a string", f.Name)
				}
			}
			re, err := compileUserRegex(pat, opt)
			if err != nil {
				return nil, p.err("column %q: $regex: %v", f.Name, err)
			}
			pg, err := PostgresRegex(re.String())
			if err != nil {
				return nil, p.err("column %q: $regex: %v", f.Name, err)
			}
			items = append(items, RegexCond{Field: f, Pattern: re.String(), PGPattern: pg})
		case "$options":
			if _, ok := ops["$regex"]; !ok {
				return nil, p.err("column %q: $options without $regex", f.Name)
			}
		case "$not":
			c, err := p.field(f, arg, depth+1)
			if err != nil {
				return nil, err
			}
			items = append(items, NotCond{c})
		default:
			return nil, p.err("column %q: unknown operator %q", f.Name, op)
		}
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return AndCond{items}, nil
}

// value checks a filter value against the field's type and converts it
// to what the store binds (createdAt/updatedAt: Unix milliseconds).
func (p *filterParser) value(f Field, v any, op string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if f.System == "created_at" || f.System == "updated_at" {
		s, ok := v.(string)
		if !ok {
			return nil, p.err("column %q: %s expects a date-time string", f.Name, op)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, p.err("column %q: %s expects a date-time string, got %q", f.Name, op, s)
		}
		return float64(t.UnixMilli()), nil
	}
	got := jsonType(v)
	if got != f.Type {
		return nil, p.err("column %q: %s expects a %s value, got %s", f.Name, op, f.Type, got)
	}
	if f.Type == "object" || f.Type == "array" {
		return nil, p.err("column %q: %s cannot compare %s values (use $exists)", f.Name, op, f.Type)
	}
	return v, nil
}

// Aggregate is one group output: Op of Field, returned as Name.
type Aggregate struct {
	Field Field
	Op    string // key, count, sum, avg, min, max, unique
	Name  string
}

var groupOps = map[string]bool{"key": true, "count": true, "sum": true, "avg": true, "min": true, "max": true, "unique": true}

// ParseTableGroup reads group: {column: op | [ops]}. "key" groups by the
// column; the others aggregate it. Each output is named column + Op
// (priceSum, statusKey, idCount).
func ParseTableGroup(t *Table, group map[string]any) ([]Aggregate, error) {
	var out []Aggregate
	for _, col := range sortedKeys(group) {
		f, err := TableField(t, col, "group")
		if err != nil {
			return nil, err
		}
		var ops []string
		switch v := group[col].(type) {
		case string:
			ops = []string{v}
		case []any:
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, Errorf(ErrInvalidPayload, "group.%s: expected an operation or an array of them", col)
				}
				ops = append(ops, s)
			}
		default:
			return nil, Errorf(ErrInvalidPayload, "group.%s: expected an operation or an array of them", col)
		}
		for _, op := range ops {
			if !groupOps[op] {
				return nil, Errorf(ErrInvalidPayload, "group.%s: unknown operation %q (key, count, sum, avg, min, max, unique)", col, op)
			}
			if (op == "sum" || op == "avg") && f.Type != "number" {
				return nil, Errorf(ErrInvalidPayload, "group.%s: %s needs a number column", col, op)
			}
			if (op == "key" || op == "min" || op == "max" || op == "unique") && (f.Type == "object" || f.Type == "array") {
				return nil, Errorf(ErrInvalidPayload, "group.%s: %s does not apply to a %s column", col, op, f.Type)
			}
			out = append(out, Aggregate{f, op, col + strings.ToUpper(op[:1]) + op[1:]})
		}
	}
	if len(out) == 0 {
		return nil, Errorf(ErrInvalidPayload, "group: expected at least one column")
	}
	return out, nil
}

// TableQuery is a findTableRows (or deleteTableRows) query.
type TableQuery struct {
	Filter        Cond // nil: every row
	Search        string
	SearchColumns []Field
	OrderBy       *Field
	Desc          bool
	Limit, Offset int
	Group         []Aggregate
}
