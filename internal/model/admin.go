package model

import (
	"net/mail"
	"strings"
	"time"
)

// Account is a person who signs in with personal access tokens.
type Account struct {
	ID             string
	Email          string
	DisplayName    string
	ProfilePicture string
	EmailVerified  bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Token is a stored credential: a personal access token (AccountID set) or a
// bot API key (BotID set). Only the SHA-256 of the secret is kept.
type Token struct {
	ID          string
	Kind        TokenKind
	AccountID   string
	BotID       string
	WorkspaceID string
	// IntegrationID is the integration of an integration API key.
	IntegrationID string
	Note          string
	Hash          string
	CreatedAt     time.Time
}

// TokenKind tells personal access tokens from bot API keys.
type TokenKind string

const (
	TokenPAT    TokenKind = "pat"
	TokenBotKey TokenKind = "bak"
	// TokenIntegrationKey is an integration API key (createIntegrationApiKey):
	// its IntegrationID acts on the bots that installed it.
	TokenIntegrationKey TokenKind = "iak"
)

// Workspace groups bots and members.
type Workspace struct {
	ID             string
	Name           string
	OwnerID        string
	SpendingLimit  float64
	About          string
	ProfilePicture string
	ContactEmail   string
	Website        string
	SocialAccounts []string
	IsPublic       bool
	Handle         string
	BotCount       int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Member is an account's membership of a workspace, with a role.
type Member struct {
	ID             string
	WorkspaceID    string
	AccountID      string
	Email          string
	DisplayName    string
	ProfilePicture string
	Role           Role
	CreatedAt      time.Time
}

// Role is a workspace role; roles are ordered, each including the ones below.
type Role string

const (
	RoleViewer        Role = "viewer"
	RoleBilling       Role = "billing"
	RoleDeveloper     Role = "developer"
	RoleManager       Role = "manager"
	RoleAdministrator Role = "administrator"
	RoleOwner         Role = "owner"
)

var roleRank = map[Role]int{RoleViewer: 1, RoleBilling: 2, RoleDeveloper: 3, RoleManager: 4, RoleAdministrator: 5, RoleOwner: 6}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return roleRank[r] > 0 }

// AtLeast reports whether r includes the permissions of min.
func (r Role) AtLeast(min Role) bool { return roleRank[r] >= roleRank[min] }

// Permission is something a member may do in a workspace.
type Permission string

const (
	PermRead            Permission = "read"
	PermWriteBots       Permission = "write bots"
	PermManageMembers   Permission = "manage members"
	PermUpdateWorkspace Permission = "update the workspace"
	PermDeleteWorkspace Permission = "delete the workspace"
	// PermReadSecrets is reading the secrets of a bot's integration
	// configuration (the chat encryption key, which mints user keys and
	// signs file URLs): granted to the roles that may change them.
	PermReadSecrets Permission = "read integration secrets"
)

// minimumRole is the one table of who may do what: viewers read, developers
// and above change bots and read their integration secrets, administrators and owners manage members and the
// workspace profile, only owners delete the workspace.
var minimumRole = map[Permission]Role{
	PermRead:            RoleViewer,
	PermWriteBots:       RoleDeveloper,
	PermReadSecrets:     RoleDeveloper,
	PermManageMembers:   RoleAdministrator,
	PermUpdateWorkspace: RoleAdministrator,
	PermDeleteWorkspace: RoleOwner,
}

// Can reports whether role r grants p.
func (r Role) Can(p Permission) bool {
	min, ok := minimumRole[p]
	return ok && r.AtLeast(min)
}

// IsSecretConfigKey reports whether a key of an integration's
// configuration holds a secret (encryptionKey, apiKey, signingSecret,
// password, token, ...): those are returned only to roles with
// PermReadSecrets.
func IsSecretConfigKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"secret", "password", "token", "privatekey", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return strings.HasSuffix(k, "key") // encryptionKey, apiKey
}

// ValidEmail reports whether s is a plain e-mail address.
func ValidEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s
}

// AuditAction names a recorded admin change (the Botpress enum).
type AuditAction string

const (
	AuditCreateWorkspace AuditAction = "CREATE_WORKSPACE"
	AuditUpdateWorkspace AuditAction = "UPDATE_WORKSPACE"
	AuditCloseWorkspace  AuditAction = "CLOSE_WORKSPACE"
	AuditAddMember       AuditAction = "ADD_WORKSPACE_MEMBER"
	AuditUpdateMember    AuditAction = "UPDATE_WORKSPACE_MEMBER"
	AuditRemoveMember    AuditAction = "REMOVE_WORKSPACE_MEMBER"
	AuditCreateBot       AuditAction = "CREATE_BOT"
	AuditUpdateBot       AuditAction = "UPDATE_BOT"
	AuditDeployBot       AuditAction = "DEPLOY_BOT"
	AuditDeleteBot       AuditAction = "DELETE_BOT"
	AuditUpdateBotConfig AuditAction = "UPDATE_BOT_CONFIG"
	AuditUnknown         AuditAction = "UNKNOWN"
)

// AuditRecord is one recorded mutating admin call.
type AuditRecord struct {
	ID           string
	WorkspaceID  string
	RecordedAt   time.Time
	AccountID    string
	Email        string
	Action       AuditAction
	ResourceID   string
	ResourceName string
	Value        string
}
