package integrations

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/parley-bots/parley/internal/model"
)

// Actions run the actions of the integrations a bot installed: a bot's
// callAction({ type: '<alias>:<action>' }) is the integration's
// action_triggered.
type Actions struct{ *core }

// actionAttempts bounds the calls of one action to an integration that
// cannot be reached (its process starting).
const actionAttempts = 4

// CallAction runs an integration's action for a bot. handled is false
// when typ names no integration the bot installed (the caller then tries
// the bot's own actions).
func (s *Actions) CallAction(ctx context.Context, botID, typ string, input json.RawMessage) (out json.RawMessage, handled bool, err error) {
	alias, name, ok := strings.Cut(typ, ":")
	if !ok || alias == "" || name == "" {
		return nil, false, nil
	}
	in, err := s.installed(ctx, botID, alias)
	if err != nil || in == nil {
		return nil, err != nil, err
	}
	if !in.entry.Enabled {
		return nil, true, model.Errorf(model.ErrRuntime, "action %s: the integration %s is disabled on this bot", typ, alias)
	}
	actions, _ := in.def.Spec["actions"].(map[string]any)
	def, known := actions[name].(map[string]any)
	if !known {
		return nil, true, model.NotFound("Action " + quote(typ))
	}
	if err := validateValue("input", schemaOf(def["input"]), rawValue(input)); err != nil {
		return nil, true, err
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	body, _ := json.Marshal(map[string]any{"type": name, "input": input})
	res := s.callRetrying(ctx, in, actionAttempts, result.isUnsent, OpActionTriggered, name, body, nil)
	if !res.ok() {
		s.failed(ctx, in, "action", res)
		return nil, true, model.Errorf(model.ErrRuntime, "action %s failed: %s", typ, res.describe())
	}
	var answer struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(res.body, &answer); err != nil {
		return nil, true, model.Errorf(model.ErrRuntime, "action %s: the integration's answer is not JSON", typ)
	}
	if len(answer.Output) == 0 || string(answer.Output) == "null" {
		answer.Output = json.RawMessage(`{}`)
	}
	return answer.Output, true, nil
}

func schemaOf(v any) any {
	if m, ok := v.(map[string]any); ok {
		return m["schema"]
	}
	return nil
}

func rawValue(raw json.RawMessage) any {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return map[string]any{}
	}
	return v
}
