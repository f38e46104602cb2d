package workflow

import (
	"encoding/json"
	"strings"
)

// Expressions and templates of a run: evaluated by the bot's sandbox (the
// eval request), rendered into strings, values and message payloads.

func (r *run) eval(src string, value any, asBool bool) (json.RawMessage, error) {
	return r.req("eval", "src", src, "value", value, "bool", asBool)
}

func (r *run) truthy(src string, value any) (bool, error) {
	raw, err := r.eval(src, value, true)
	if err != nil {
		return false, err
	}
	return string(raw) == "true", nil
}

// renderString evaluates the {{ }} expressions of a template string.
func (r *run) renderString(s string) (string, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return "", &botError{code: IssueCardError, msg: err.Error()}
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.expr {
			b.WriteString(p.text)
			continue
		}
		raw, err := r.eval(p.text, nil, false)
		if err != nil {
			return "", err
		}
		b.WriteString(templateString(raw))
	}
	return b.String(), nil
}

// renderValue renders every string of a JSON value. A string that is one
// {{ expression }} and nothing else keeps the expression's value as is.
func (r *run) renderValue(v any) (any, error) { return mapStrings(v, r.renderRaw) }

// renderRaw renders one string for renderValue.
func (r *run) renderRaw(x string) (any, error) {
	parts, err := parseTemplate(x)
	if err != nil {
		return nil, &botError{code: IssueCardError, msg: err.Error()}
	}
	if len(parts) == 1 && parts[0].expr {
		raw, err := r.eval(parts[0].text, nil, false)
		if err != nil {
			return nil, err
		}
		var out any
		_ = json.Unmarshal(raw, &out)
		return out, nil
	}
	return r.renderString(x)
}

// mapStrings rebuilds a JSON value with every string replaced by leaf(s).
func mapStrings(v any, leaf func(string) (any, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return leaf(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			v, err := mapStrings(x[k], leaf)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			v, err := mapStrings(it, leaf)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return v, nil
}

// renderMessage renders a message: a template string is a text message.
func (r *run) renderMessage(raw json.RawMessage) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &botError{code: IssueCardError, msg: err.Error()}
	}
	if s, ok := v.(string); ok {
		text, err := r.renderString(s)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "text", "text": text}, nil
	}
	m, _ := v.(map[string]any)
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		var err error
		if s, ok := m[k].(string); ok {
			out[k], err = r.renderString(s)
		} else {
			out[k], err = r.renderDeep(m[k])
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renderDeep renders strings as strings (never as raw values): payloads
// keep their shape.
func (r *run) renderDeep(v any) (any, error) {
	return mapStrings(v, func(s string) (any, error) { return r.renderString(s) })
}
