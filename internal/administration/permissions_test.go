package administration

import (
	"testing"

	"github.com/parley-bots/parley/internal/model"
)

// TestRequire checks the lowest role allowed to call each operation, and
// that every role below it is refused with 403.
func TestRequire(t *testing.T) {
	roles := []model.Role{model.RoleViewer, model.RoleBilling, model.RoleDeveloper, model.RoleManager,
		model.RoleAdministrator, model.RoleOwner}
	lowest := map[string]model.Role{
		"getBot":                   model.RoleViewer, // not listed: any member
		"listBotConversations":     model.RoleViewer,
		"listConversationMessages": model.RoleViewer,
		"listHandoffs":             model.RoleViewer,
		"getHandoff":               model.RoleViewer,
		"getBotAnalytics":          model.RoleViewer,
		"takeOverConversation":     model.RoleDeveloper,
		"replyAsAgent":             model.RoleDeveloper,
		"handBackConversation":     model.RoleDeveloper,
		"createBot":                model.RoleDeveloper,
		"updateBot":                model.RoleDeveloper,
		"deleteBot":                model.RoleDeveloper,
		"publishFromBotJson":       model.RoleDeveloper,
		"createBotApiKey":          model.RoleDeveloper,
		"deleteBotApiKey":          model.RoleDeveloper,
		"deleteBotIssue":           model.RoleDeveloper,
		"createWorkspaceMember":    model.RoleAdministrator,
		"updateWorkspaceMember":    model.RoleAdministrator,
		"deleteWorkspaceMember":    model.RoleAdministrator,
		"getAuditRecords":          model.RoleAdministrator,
		"updateWorkspace":          model.RoleAdministrator,
		"deleteWorkspace":          model.RoleOwner,
	}
	for op := range required {
		if _, ok := lowest[op]; !ok {
			t.Errorf("operation %q is in the permissions table but not in this test", op)
		}
	}
	for op, min := range lowest {
		for _, r := range roles {
			c := &Caller{Member: &model.Member{Role: r}}
			err := c.require(op)
			if allowed := r.AtLeast(min); allowed != (err == nil) {
				t.Errorf("%s as %s: err = %v, want allowed=%v", op, r, err, allowed)
			}
			if err != nil && model.TypeOf(err) != model.ErrForbidden {
				t.Errorf("%s as %s: error type %s, want Forbidden", op, r, model.TypeOf(err))
			}
		}
	}
}
