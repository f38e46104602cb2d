package workflow

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: any document given as a bot JSON never panics; a refusal is a
// *ValidationError with at least one error.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, `[]`, `null`, `{"workflows":{}}`, `{"workflows":{"main":{"nodes":[]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := Parse(raw)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Errors) == 0 {
				t.Fatalf("Parse(%q): error %#v", raw, err)
			}
			return
		}
		if b == nil {
			t.Fatalf("Parse(%q): nil bot and no error", raw)
		}
	})
}

// FuzzParseTemplate: the template parser never panics, and what it accepts
// is made of literal text and trimmed, non-empty expressions free of "}}";
// rendering the parts back (literal "{{" escaped) parses to the same parts.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"Hello {{ user.name }}!", "{{a}}{{b}}", `\{{ not }}`, "{{", "}}", "{{ }}", "a {{ b", "{{x}}}}", `\\{{x}}`, "é{{ é }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := parseTemplate(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for i, p := range parts {
			if p.expr {
				if p.text == "" || p.text != strings.TrimSpace(p.text) || strings.Contains(p.text, "}}") {
					t.Fatalf("parseTemplate(%q): bad expression %q", s, p.text)
				}
				b.WriteString("{{ " + p.text + " }}")
				continue
			}
			if p.text == "" || (i > 0 && !parts[i-1].expr) {
				t.Fatalf("parseTemplate(%q): empty or split literal in %+v", s, parts)
			}
			if strings.HasSuffix(p.text, `\`) || strings.Contains(p.text, `\{{`) ||
				(strings.HasSuffix(p.text, "{") && i+1 < len(parts)) { // a "{" before "{{ expr }}" reads as "{{" then "{ expr"
				return // cannot be written back unambiguously
			}
			b.WriteString(strings.ReplaceAll(p.text, "{{", `\{{`))
		}
		again, err := parseTemplate(b.String())
		if err != nil || len(again) != len(parts) {
			t.Fatalf("parseTemplate(%q) = %+v; rendered %q parses to %+v, %v", s, parts, b.String(), again, err)
		}
		for i := range parts {
			if again[i] != parts[i] {
				t.Fatalf("parseTemplate(%q) = %+v; rendered %q parses to %+v", s, parts, b.String(), again)
			}
		}
	})
}

// FuzzTemplateString: rendering any JSON value for a template never panics
// and gives a string as is.
func FuzzTemplateString(f *testing.F) {
	for _, s := range []string{`"x"`, `1.5`, `true`, `null`, `{"a":1}`, `[1]`, `1e400`, `"\ud800"`, ``, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := templateString(json.RawMessage(raw))
		var s string
		if json.Unmarshal(raw, &s) == nil && got != s {
			t.Fatalf("templateString(%q) = %q, want %q", raw, got, s)
		}
	})
}
