package model

import (
	"encoding/json"
	"time"
)

// Runtime API objects: what bots and integrations keep through
// `/v1/chat/...` besides users, conversations, messages and events.

// State is a named JSON document attached to a user, conversation, bot,
// integration, workflow or task of a bot (the Runtime API's State).
// OwnerID is the id of what it is attached to. Expiry is the lifetime in
// milliseconds it was set with (0: none); ExpiresAt is when it expires.
type State struct {
	BotID     string
	ID        string
	Type      string
	OwnerID   string
	Name      string
	Payload   json.RawMessage
	Expiry    int64
	ExpiresAt time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// StateTypes lists the owners a state may have.
var StateTypes = []string{"conversation", "user", "bot", "integration", "workflow", "task"}

// StateExpiredEvent is the type of the event a bot gets when one of its
// states expires.
const StateExpiredEvent = "state_expired"

// Workflow is a Runtime API workflow: stored and listed (Parley does not
// run them).
type Workflow struct {
	BotID            string
	ID               string
	Name             string
	Status           string
	Input            json.RawMessage
	Output           json.RawMessage
	ParentWorkflowID string
	ConversationID   string
	UserID           string
	EventID          string
	FailureReason    string
	Tags             map[string]string
	TimeoutAt        time.Time
	CompletedAt      time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// WorkflowStatuses lists the statuses of a workflow.
var WorkflowStatuses = []string{"pending", "in_progress", "failed", "completed", "listening", "paused", "timedout", "cancelled"}

// Task is a task of @botpress/client 1.35.0's Runtime API.
type Task struct {
	BotID          string
	ID             string
	Title          string
	Description    string
	Type           string
	Data           json.RawMessage
	Status         string
	ParentTaskID   string
	ConversationID string
	UserID         string
	FailureReason  string
	Tags           map[string]string
	TimeoutAt      time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// TaskStatuses lists the statuses of a task.
var TaskStatuses = []string{"pending", "in_progress", "failed", "completed", "blocked", "paused", "timeout", "cancelled"}

// AnalyticsCount is a trackAnalytics counter: the sum of the counts a bot
// tracked under a name on one UTC day (YYYY-MM-DD).
type AnalyticsCount struct {
	BotID string
	Name  string
	Day   string
	Count int64
}

// Tag limits (upstream's: keys up to 100 characters, values up to 1000).
const (
	MaxTagKeyLength   = 100
	MaxTagValueLength = 1000
	MaxTags           = 50
)

// ValidateTags checks a tags object. An empty value means "unset this key"
// in updates; callers drop such keys (MergeTags).
func ValidateTags(field string, tags map[string]string) error {
	if len(tags) > MaxTags {
		return Invalid("%s: at most %d tags", field, MaxTags)
	}
	for k, v := range tags {
		if k == "" || len(k) > MaxTagKeyLength {
			return Invalid("%s: tag keys must have 1 to %d characters", field, MaxTagKeyLength)
		}
		if len(v) > MaxTagValueLength {
			return Invalid("%s.%s: tag values have at most %d characters", field, k, MaxTagValueLength)
		}
	}
	return nil
}

// MergeTags returns old updated with set: a key set to "" is removed.
func MergeTags(old, set map[string]string) map[string]string {
	out := make(map[string]string, len(old)+len(set))
	for k, v := range old {
		out[k] = v
	}
	for k, v := range set {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// CleanTags returns tags without empty values (never nil).
func CleanTags(tags map[string]string) map[string]string {
	return MergeTags(nil, tags)
}
