package integrations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/parley-bots/parley/internal/model"
)

// What an integration's bundle process gets from Parley besides its token:
// its secrets as SECRET_<NAME> (what @botpress/sdk's generated code reads)
// and BP_LOG_FORMAT=json, so that the lines of its logger say which user
// and conversation they are about; its output becomes the integration's
// logs.

// processVersion names a bundle's process: a change of its code or of its
// secrets starts another one.
func processVersion(d *model.IntegrationDef) string {
	h := sha256.New()
	h.Write([]byte(d.Code))
	for _, k := range SecretNames(d) {
		h.Write([]byte{0})
		h.Write([]byte(k + "=" + d.Secrets[k]))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ProcessEnv is the environment of an integration's process
// (botproc.Options.Env for the integrations' keys).
func (s *Definitions) ProcessEnv(ctx context.Context, integrationID string) ([]string, error) {
	d, err := s.store.Integrations().Get(ctx, integrationID)
	if err != nil {
		return nil, err
	}
	env := []string{"BP_LOG_FORMAT=json"}
	for _, k := range SecretNames(d) {
		env = append(env, "SECRET_"+k+"="+d.Secrets[k])
	}
	return env, nil
}

// ProcessLine records a line an integration's process wrote as a line of
// its logs (botproc.Options.Output for the integrations' keys): the
// logger's JSON ({ msg, options: { userId, conversationId } }) or plain
// text; stderr lines are errors.
func (s *Definitions) ProcessLine(integrationID, line string, stderr bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	l := &model.IntegrationLog{IntegrationID: integrationID, Level: "info", Message: line}
	if stderr {
		l.Level = "error"
	}
	var j struct {
		Msg     *string `json:"msg"`
		Options struct {
			UserID         string `json:"userId"`
			ConversationID string `json:"conversationId"`
		} `json:"options"`
	}
	if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &j) == nil && j.Msg != nil {
		l.Message, l.UserID, l.ConversationID = *j.Msg, j.Options.UserID, j.Options.ConversationID
	}
	if len(l.Message) > 10000 {
		l.Message = l.Message[:10000] + "…"
	}
	s.logLines(context.Background(), l)
}
