package integrations

import (
	"strings"
	"testing"
)

// The configuration of a bot's entry is checked against the integration's
// schema (what @botpress/sdk's zui produces), and the 400 names the field.
func TestValidateValueNamesTheField(t *testing.T) {
	schema := map[string]any{"type": "object", "additionalProperties": false,
		"required": []any{"token"},
		"properties": map[string]any{
			"token": map[string]any{"type": "string", "minLength": 1},
			"retry": map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer"}}},
		}}
	cases := []struct {
		name  string
		value map[string]any
		want  string // "" valid
	}{
		{"valid", map[string]any{"token": "t", "retry": map[string]any{"count": 2}}, ""},
		{"missing", map[string]any{}, "cfg: missing property 'token'"},
		{"wrong type", map[string]any{"token": 7}, "cfg.token: got number, want string"},
		{"nested", map[string]any{"token": "t", "retry": map[string]any{"count": "x"}}, "cfg.retry.count: got string, want integer"},
		{"too short", map[string]any{"token": ""}, "cfg.token: minLength"},
		{"unknown property", map[string]any{"token": "t", "other": 1}, "cfg: additional properties 'other' not allowed"},
	}
	for _, c := range cases {
		err := validateValue("cfg", schema, c.value)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if err := validateValue("cfg", map[string]any{"type": "nonsense"}, map[string]any{}); err == nil {
		t.Error("a schema that does not compile is refused")
	}
}
