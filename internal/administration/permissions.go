package administration

import "github.com/parley-bots/parley/internal/model"

// Who may call what: each Admin API operation that needs more than
// membership of the workspace, with the permission it needs. The minimum
// role of each permission is model's table (model.Role.Can). Operations
// not listed are open to every member (viewer and up).
var required = map[string]model.Permission{
	"updateWorkspace":          model.PermUpdateWorkspace,
	"deleteWorkspace":          model.PermDeleteWorkspace,
	"getAuditRecords":          model.PermManageMembers,
	"createWorkspaceMember":    model.PermManageMembers,
	"updateWorkspaceMember":    model.PermManageMembers,
	"deleteWorkspaceMember":    model.PermManageMembers,
	"createBot":                model.PermWriteBots,
	"updateBot":                model.PermWriteBots,
	"deleteBot":                model.PermWriteBots,
	"publishFromBotJson":       model.PermWriteBots,
	"createBotApiKey":          model.PermWriteBots,
	"deleteBotApiKey":          model.PermWriteBots,
	"deleteBotIssue":           model.PermWriteBots,
	"listBotConversations":     model.PermRead,
	"listConversationMessages": model.PermRead,
	"listHandoffs":             model.PermRead,
	"getHandoff":               model.PermRead,
	"takeOverConversation":     model.PermWriteBots,
	"replyAsAgent":             model.PermWriteBots,
	"handBackConversation":     model.PermWriteBots,
	"getBotAnalytics":          model.PermRead,
}

// require fails with 403 when the caller's role may not call operation op.
func (c *Caller) require(op string) error {
	perm, ok := required[op]
	if !ok {
		perm = model.PermRead
	}
	if !c.Member.Role.Can(perm) {
		return model.Forbidden("your role %q in this workspace does not allow you to %s", c.Member.Role, perm)
	}
	return nil
}
