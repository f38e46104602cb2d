package model

import (
	"strings"
	"time"
)

// IntegrationDef is an integration published in a workspace (the Admin
// API's Integration): its definition and where it runs. Spec holds the
// definition's free-form parts keyed by their wire names (configuration,
// configurations, channels, actions, events, states, user, entities,
// identifier, interfaces, extraOperations, attributes, sdkVersion).
type IntegrationDef struct {
	ID          string
	WorkspaceID string
	Name        string
	Version     string
	// Dev is a development integration: it runs at URL (`bp dev`).
	Dev bool
	URL string
	// Code is a Node.js bundle (the integration as module.exports.default,
	// its handler exported) run by Parley's supervisor.
	Code             string
	SigningSecret    string
	Title            string
	Description      string
	Icon             string
	Readme           string
	Public           bool
	Visibility       string
	MaxExecutionTime int
	Spec             map[string]any
	Secrets          map[string]string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Statuses of a bot's integration entry (the Admin API's
// bot.integrations[].status).
const (
	IntegrationRegistrationPending   = "registration_pending"
	IntegrationRegistered            = "registered"
	IntegrationRegistrationFailed    = "registration_failed"
	IntegrationUnregistrationPending = "unregistration_pending"
	IntegrationUnregistered          = "unregistered"
	IntegrationUnregistrationFailed  = "unregistration_failed"
)

// IntegrationLog is one line of an integration's logs.
type IntegrationLog struct {
	ID             string
	IntegrationID  string
	BotID          string
	Time           time.Time
	Level          string
	Message        string
	ConversationID string
	UserID         string
}

// IntegrationLogFilter selects an integration's log lines.
type IntegrationLogFilter struct {
	IntegrationID  string
	Since, Until   time.Time
	Level          string
	UserID         string
	ConversationID string
	Contains       string
}

// IntegrationTag is the stored key of an integration's tag: the
// integration's alias on the bot, a colon, its own key ("telegram:chatId").
// A key that already has a prefix is kept.
func IntegrationTag(alias, key string) string {
	if alias == "" || strings.Contains(key, ":") {
		return key
	}
	return alias + ":" + key
}

// IntegrationTagsIn prefixes the keys of tags an integration sends.
func IntegrationTagsIn(alias string, tags map[string]string) map[string]string {
	if alias == "" || tags == nil {
		return tags
	}
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		out[IntegrationTag(alias, k)] = v
	}
	return out
}

// IntegrationTagsOut is what an integration sees of stored tags: its own
// without their prefix, and the unprefixed ones of the bot; other
// integrations' tags are left out.
func IntegrationTagsOut(alias string, tags map[string]string) map[string]string {
	if alias == "" || tags == nil {
		return tags
	}
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		if !strings.Contains(k, ":") {
			if _, own := tags[alias+":"+k]; !own {
				out[k] = v
			}
		}
	}
	for k, v := range tags {
		if own, ok := strings.CutPrefix(k, alias+":"); ok {
			out[own] = v
		}
	}
	return out
}
