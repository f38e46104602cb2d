package workflow

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// templatePart is literal text or a {{ expression }}.
type templatePart struct {
	text string
	expr bool
}

// parseTemplate splits "Hello {{ user.name }}!" into parts. "{{" without
// a closing "}}" is an error; "\{{" is a literal "{{".
func parseTemplate(s string) ([]templatePart, error) {
	var parts []templatePart
	var lit strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], `\{{`) {
			lit.WriteString("{{")
			i += 3
			continue
		}
		if strings.HasPrefix(s[i:], "{{") {
			end := strings.Index(s[i+2:], "}}")
			if end < 0 {
				return nil, fmt.Errorf("template: {{ at byte %d is not closed by }}", i)
			}
			expr := strings.TrimSpace(s[i+2 : i+2+end])
			if expr == "" {
				return nil, fmt.Errorf("template: empty {{ }} at byte %d", i)
			}
			if lit.Len() > 0 {
				parts = append(parts, templatePart{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, templatePart{text: expr, expr: true})
			i += end + 4
			continue
		}
		lit.WriteByte(s[i])
		i++
	}
	if lit.Len() > 0 {
		parts = append(parts, templatePart{text: lit.String()})
	}
	return parts, nil
}

// templateString renders a value for inclusion in a string: strings as
// they are, undefined/null as nothing, other values as JSON.
func templateString(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return string(raw)
}

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)

// coerce converts v to a declared variable's type, or explains why not.
func coerce(d *Variable, v any) (any, error) {
	if d == nil || v == nil {
		return v, nil
	}
	switch d.Type {
	case "string":
		switch x := v.(type) {
		case string:
			return x, nil
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
	case "number":
		switch x := v.(type) {
		case float64:
			return x, nil
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, nil
			}
		}
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			if b, ok := parseBool(x); ok {
				return b, nil
			}
		}
	case "date":
		if s, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return s, nil
			}
			if _, err := time.Parse("2006-01-02", s); err == nil {
				return s, nil
			}
		}
		return nil, fmt.Errorf("%s: expected a date (YYYY-MM-DD or RFC 3339), got %s", d.Name, show(v))
	case "object":
		if _, ok := v.(map[string]any); ok {
			return v, nil
		}
	case "array":
		if _, ok := v.([]any); ok {
			return v, nil
		}
	case "enum":
		if s, ok := v.(string); ok {
			for _, x := range d.Values {
				if strings.EqualFold(x, s) {
					return x, nil
				}
			}
		}
		return nil, fmt.Errorf("%s: expected one of %s, got %s", d.Name, strings.Join(d.Values, ", "), show(v))
	case "pattern":
		if s, ok := v.(string); ok {
			re, err := regexp2.Compile(d.Pattern, regexp2.ECMAScript)
			if err == nil {
				if m, _ := re.MatchString(s); m {
					return s, nil
				}
			}
		}
		return nil, fmt.Errorf("%s: expected a string matching /%s/, got %s", d.Name, d.Pattern, show(v))
	default:
		return v, nil
	}
	return nil, fmt.Errorf("%s: expected a %s, got %s", d.Name, d.Type, show(v))
}

func show(v any) string {
	j, _ := json.Marshal(v)
	if len(j) > 100 {
		j = append(j[:100:100], "…"...)
	}
	return string(j)
}

var (
	yesWords = []string{"yes", "y", "yeah", "yep", "yup", "sure", "ok", "okay", "true", "correct", "right", "affirmative", "of course", "oui", "si"}
	noWords  = []string{"no", "n", "nope", "nah", "false", "incorrect", "wrong", "negative", "non", "not really"}
)

func parseBool(s string) (bool, bool) {
	t := normalize(s)
	if slices.Contains(yesWords, t) {
		return true, true
	}
	if slices.Contains(noWords, t) {
		return false, true
	}
	return false, false
}

// normalize lowercases, trims and drops trailing punctuation.
func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.TrimRight(s, ".!?,;: ")
}

var (
	numberRe = regexp.MustCompile(`^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$`)
	emailRe  = regexp.MustCompile(`^[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}$`)
	phoneRe  = regexp.MustCompile(`^\+?[0-9 ().\-]{7,25}$`)
	wordNums = map[string]float64{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
		"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
)

// extract parses the user's answer for a capture kind. value is the button
// value of the reply when there is one. It returns the value to store.
func extract(kind, text, value string, opts []Option, now time.Time) (any, bool) {
	t := strings.TrimSpace(text)
	switch kind {
	case "raw":
		if value != "" {
			return value, true
		}
		return t, t != ""
	case "number":
		s := strings.TrimSpace(firstNonEmpty(value, t))
		if n, ok := wordNums[normalize(s)]; ok {
			return n, true
		}
		if !numberRe.MatchString(s) || s == "" || s == "-" || s == "+" {
			return nil, false
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		return f, err == nil
	case "email":
		s := strings.TrimSpace(firstNonEmpty(value, t))
		if emailRe.MatchString(s) {
			return strings.ToLower(s), true
		}
	case "phone":
		s := strings.TrimSpace(firstNonEmpty(value, t))
		if !phoneRe.MatchString(s) {
			return nil, false
		}
		var b strings.Builder
		if strings.HasPrefix(s, "+") {
			b.WriteByte('+')
		}
		digits := 0
		for _, r := range s {
			if r >= '0' && r <= '9' {
				b.WriteRune(r)
				digits++
			}
		}
		if digits >= 7 && digits <= 15 {
			return b.String(), true
		}
	case "boolean":
		if b, ok := parseBool(value); ok {
			return b, true
		}
		return parseBool(t)
	case "choice":
		if o, ok := matchOption(opts, value, t); ok {
			return o.value(), true
		}
	case "date":
		return parseDate(firstNonEmpty(value, t), now)
	}
	return nil, false
}

// matchOption finds the chosen option: by button value first, then by
// label ignoring case, then by value ignoring case.
func matchOption(opts []Option, value, text string) (Option, bool) {
	for _, cand := range []string{value, text} {
		if cand == "" {
			continue
		}
		for _, o := range opts {
			if o.value() == cand {
				return o, true
			}
		}
	}
	n := normalize(text)
	if n == "" {
		return Option{}, false
	}
	for _, o := range opts {
		if normalize(o.Label) == n {
			return o, true
		}
	}
	for _, o := range opts {
		if normalize(o.value()) == n {
			return o, true
		}
	}
	return Option{}, false
}

var dateLayouts = []string{"2006-01-02", "2006/01/02", "02/01/2006", "2 January 2006", "January 2 2006", "January 2, 2006", "2 Jan 2006", "Jan 2 2006", "Jan 2, 2006"}

// parseDate understands ISO dates, RFC 3339, day/month/year, "today",
// "tomorrow" and "yesterday" (relative to now, in UTC). The value is the
// date as YYYY-MM-DD.
func parseDate(s string, now time.Time) (any, bool) {
	n := normalize(s)
	day := now.UTC()
	switch n {
	case "today", "now":
		return day.Format("2006-01-02"), true
	case "tomorrow":
		return day.AddDate(0, 0, 1).Format("2006-01-02"), true
	case "yesterday":
		return day.AddDate(0, 0, -1).Format("2006-01-02"), true
	}
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC().Format("2006-01-02"), true
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.Format("2006-01-02"), true
		}
	}
	return nil, false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

var _ = isoDate
