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
const actionAttempts = 8

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
		if res.retry() {
			// Not reached, or failed in the middle (its process died):
			// 502, which the SDK's clients retry.
			return nil, true, model.Errorf(model.ErrUnavailable, "action %s: the integration %s could not be reached: %s", typ, alias, res.describe())
		}
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

// CreateUser is a bot's createUser naming an integration whose definition
// enables user creation (user.creation.enabled): the integration's
// create_user creates it (through its own Runtime API calls) and answers
// { user: { id } }. handled is false for any other integration name.
func (s *Actions) CreateUser(ctx context.Context, botID, alias string, tags map[string]string) (string, bool, error) {
	in, err := s.installed(ctx, botID, alias)
	if err != nil || in == nil {
		return "", err != nil, err
	}
	user, _ := in.def.Spec["user"].(map[string]any)
	if !creationEnabled(user) {
		return "", false, nil
	}
	own := model.IntegrationTagsOut(alias, tags)
	if err := requiredTags("tags", user, own); err != nil {
		return "", true, err
	}
	body, _ := json.Marshal(map[string]any{"tags": own})
	res := s.callRetrying(ctx, in, actionAttempts, result.isUnsent, OpCreateUser, OpCreateUser, body, nil)
	if !res.ok() {
		s.failed(ctx, in, "create_user", res)
		return "", true, model.Errorf(model.ErrRuntime, "integration %s could not create the user: %s", alias, res.describe())
	}
	var answer struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if json.Unmarshal(res.body, &answer) != nil || answer.User.ID == "" {
		return "", true, model.Errorf(model.ErrRuntime, "integration %s created no user (its create_user answered no user id)", alias)
	}
	return answer.User.ID, true, nil
}

// CreateConversation is a bot's createConversation naming an integration
// whose channel enables conversation creation
// (channels[channel].conversation.creation.enabled): the integration's
// create_conversation creates it and answers { conversation: { id } }.
func (s *Actions) CreateConversation(ctx context.Context, botID, alias, channel string, tags map[string]string) (string, bool, error) {
	in, err := s.installed(ctx, botID, alias)
	if err != nil || in == nil {
		return "", err != nil, err
	}
	channels, _ := in.def.Spec["channels"].(map[string]any)
	ch, _ := channels[channel].(map[string]any)
	conv, _ := ch["conversation"].(map[string]any)
	if ch == nil {
		return "", true, model.Invalid("channel: integration %s has no channel %q", alias, channel)
	}
	if !creationEnabled(conv) {
		return "", false, nil
	}
	own := model.IntegrationTagsOut(alias, tags)
	if err := requiredTags("tags", conv, own); err != nil {
		return "", true, err
	}
	body, _ := json.Marshal(map[string]any{"channel": channel, "tags": own})
	res := s.callRetrying(ctx, in, actionAttempts, result.isUnsent, OpCreateConversation, OpCreateConversation, body, nil)
	if !res.ok() {
		s.failed(ctx, in, "create_conversation", res)
		return "", true, model.Errorf(model.ErrRuntime, "integration %s could not create the conversation: %s", alias, res.describe())
	}
	var answer struct {
		Conversation struct {
			ID string `json:"id"`
		} `json:"conversation"`
	}
	if json.Unmarshal(res.body, &answer) != nil || answer.Conversation.ID == "" {
		return "", true, model.Errorf(model.ErrRuntime, "integration %s created no conversation (its create_conversation answered no conversation id)", alias)
	}
	return answer.Conversation.ID, true, nil
}

func creationEnabled(parent map[string]any) bool {
	c, _ := parent["creation"].(map[string]any)
	on, _ := c["enabled"].(bool)
	return on
}

// requiredTags checks the tags creation requires (creation.requiredTags).
func requiredTags(field string, parent map[string]any, tags map[string]string) error {
	c, _ := parent["creation"].(map[string]any)
	req, _ := c["requiredTags"].([]any)
	for _, r := range req {
		if k, ok := r.(string); ok && tags[k] == "" {
			return model.Invalid("%s.%s: required by the integration to create it", field, k)
		}
	}
	return nil
}
