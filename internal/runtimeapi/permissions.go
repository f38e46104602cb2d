package runtimeapi

import "github.com/parley-bots/parley/internal/model"

// Who may call what. Bot API keys and bot tokens (KindBot) may call every
// operation on their own bot. A member's personal access token may call
// the operations listed here with model.PermRead (viewer and billing and
// up: get, list), and every other operation with model.PermWriteBots
// (developer and up). docs/runtime-api.md shows the matrix.
var readOps = map[string]bool{
	"getUser": true, "listUsers": true,
	"getConversation": true, "listConversations": true, "listParticipants": true, "getParticipant": true,
	"getMessage": true, "listMessages": true,
	"getEvent": true, "listEvents": true,
	"getState":    true,
	"getWorkflow": true, "listWorkflows": true,
	"getTask": true, "listTasks": true,
	"listTagValues": true, "getAnalytics": true,
}

// require fails with 403 when the caller may not call operation op.
func (c *Caller) require(op string) error {
	if c.Kind == KindBot || c.Kind == KindIntegration {
		return nil
	}
	perm := model.PermWriteBots
	if readOps[op] {
		perm = model.PermRead
	}
	if !c.Role.Can(perm) {
		return model.Forbidden("your role %q in this workspace does not allow you to %s (%s)", c.Role, perm, op)
	}
	return nil
}
