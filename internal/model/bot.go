package model

import "time"

// Bot is a bot of a workspace. Spec holds the free-form parts of the Botpress
// Bot object (states, events, actions, configuration, tags definitions, ...)
// as decoded JSON, keyed by their wire names.
type Bot struct {
	ID               string
	WorkspaceID      string
	Name             string
	Description      string
	Dev              bool
	Type             string
	Tags             map[string]string
	Spec             map[string]any
	Secrets          map[string]string
	Code             string
	URL              string
	MaxExecutionTime int
	AlwaysAlive      bool
	SigningSecret    string
	CreatedBy        string
	VersionID        string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	DeployedAt       time.Time // zero until code is deployed
}

// Bot types of the Botpress enum; Parley's code-first bots are "adk".
const DefaultBotType = "adk"

// BotTypes lists the accepted values of Bot.Type.
var BotTypes = []string{"studio", "adk", "desk"}

// Built-in integrations every bot has.
const (
	IntegrationChat    = "chat"
	IntegrationWebchat = "webchat"
)

// IntegrationWebhook is the built-in webhook integration: every bot may
// enable it (updateBot with integrations.webhook); a POST of JSON to
// {public-url}/{webhookId} becomes a WebhookEventType event of the bot.
const IntegrationWebhook = "webhook"

// WebhookEventType is the bot-side type of the events the webhook
// integration creates.
const WebhookEventType = "webhook:event"

// WebhookSecret is the configuration key of the webhook integration that
// holds the optional secret; a request must then carry it in the
// WebhookSecretHeader header.
const (
	WebhookSecret       = "secret"
	WebhookSecretHeader = "x-bp-secret"
)

// WebhookBodyLimit bounds a request to the webhook integration: its body
// becomes an event payload, which bots read with the Runtime API's limit.
const WebhookBodyLimit = 1 << 20

// ChatEncryptionKey is the configuration key of the chat integration that
// holds the HS256 secret of user keys (and of the webchat's file URLs).
const ChatEncryptionKey = "encryptionKey"

// ChatFallbackMessage is the configuration key of the chat integration
// that holds the text sent to the person chatting when a turn of the bot
// fails (an empty string sends nothing). New bots get
// DefaultFallbackMessage; a bot without the key uses it too.
const ChatFallbackMessage = "fallbackMessage"

// DefaultFallbackMessage is the fallback message of new bots.
const DefaultFallbackMessage = "Sorry, something went wrong on my side and I could not answer. Please try again in a moment."

// Integration is an integration installed on a bot. WebhookID is the
// unguessable id in the integration's public URL (the Chat API's webhook id,
// the webchat's client id).
type Integration struct {
	BotID         string
	Name          string
	Enabled       bool
	WebhookID     string
	Configuration map[string]any
	// IntegrationID is the installed IntegrationDef ("" for the built-in
	// integrations); Name is then its alias on the bot (the key of
	// bot.integrations, the prefix of its tags and events).
	IntegrationID     string
	ConfigurationType string
	// Status is one of the Integration* statuses ("" reads as registered);
	// StatusReason says why registration failed.
	Status           string
	StatusReason     string
	DisabledChannels []string
	// Identifier is what the integration set with configureIntegration
	// (the external account it is linked to).
	Identifier string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// BotVersion is an immutable snapshot of a bot's code.
type BotVersion struct {
	ID          string
	BotID       string
	Name        string
	Description string
	Code        string
	// BotJSON is the bot JSON document of a workflow bot version (then Code
	// is the JavaScript generated from it); empty for code-first versions.
	BotJSON   string
	CreatedAt time.Time
}

// LogEntry is one line of a bot's logs.
type LogEntry struct {
	ID             string
	BotID          string
	Time           time.Time
	Level          string
	Message        string
	ConversationID string
	UserID         string
	EventID        string
	WorkflowID     string
}

// LogFilter selects log lines.
type LogFilter struct {
	BotID          string
	Since, Until   time.Time
	Level          string
	UserID         string
	ConversationID string
	WorkflowID     string
	Contains       string
}

// Issue is a recurring runtime problem of a bot, grouped by Code.
type Issue struct {
	ID          string
	BotID       string
	Code        string
	Category    string
	Title       string
	Description string
	EventsCount int
	CreatedAt   time.Time
	LastSeenAt  time.Time
}

// IssueEvent is one occurrence of an Issue.
type IssueEvent struct {
	ID        string
	IssueID   string
	CreatedAt time.Time
	Data      map[string]any
}
