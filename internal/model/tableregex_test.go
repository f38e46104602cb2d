package model

import (
	"strings"
	"testing"
)

// TestPostgresRegex checks the rewrite of $regex patterns into
// PostgreSQL's syntax: what it refuses, and that the output keeps none of
// Go's own constructs. Whether both engines match alike is checked on the
// databases (internal/tables, TestFindRowsFilters, FuzzFindRows).
func TestPostgresRegex(t *testing.T) {
	cases := []struct {
		pattern, want, refused string
	}{
		{pattern: `ab`, want: `\u0061\u0062`},
		{pattern: `(?i)k`, want: `[\u004b\u006b\u212a]`},
		{pattern: `^a$`, want: `(?:^)(?:\u0061)(?:$)`},
		{pattern: `(?m)^a`, want: `(?:(?:^|(?<=\u000a)))(?:\u0061)`},
		{pattern: `(?P<x>a)+?`, want: `(?:(?:\u0061))+`},
		{pattern: `a{2,5}`, want: `(?:\u0061){2,5}`},
		{pattern: `a{3,}`, want: `(?:\u0061){3,}`},
		{pattern: `[^b]`, want: `[\u0001-\u0061\u0063-\U0010ffff]`},
		{pattern: `\bx\B`, want: `(?:\y)(?:\u0078)(?:\Y)`},
		{pattern: `.`, want: `[^\u000a]`},
		{pattern: `(?s).`, want: `.`},
		{pattern: `a|`, want: `(?:\u0061|(?:))`},
		{pattern: `a{256}`, refused: "above 255"},
		{pattern: `([a-z]{0,30}x{0,30}y{0,30}){0,33}`, refused: "too complex"},
		{pattern: `\x00`, refused: "NUL"},
		{pattern: `[^\x00-\x{10FFFF}]`, refused: "matches nothing"},
		{pattern: `(`, refused: "missing closing )"},
	}
	for _, c := range cases {
		got, err := PostgresRegex(c.pattern)
		if c.refused != "" {
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: got %q, %v; want an error with %q", c.pattern, got, err, c.refused)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.pattern, got, err, c.want)
		}
	}
	long, err := PostgresRegex(strings.Repeat(`\pL`, 80))
	if err == nil {
		t.Errorf("80 Unicode letter classes: %d bytes, no error", len(long))
	}
}
