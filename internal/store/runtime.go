package store

import (
	"context"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// What the Runtime API (/v1/chat/...) stores besides the Chat interface's
// basics: filtered lists, tag look-ups, updates, named states, workflows,
// tasks and analytics counters. Every method is scoped by bot id.

// RuntimeChat is the part of Chat the Runtime API adds.
type RuntimeChat interface {
	// UpdateConversation writes c's tags and updatedAt.
	UpdateConversation(ctx context.Context, c *model.Conversation) error
	// UpdateMessage writes m's payload, tags and updatedAt.
	UpdateMessage(ctx context.Context, m *model.Message) error
	// UpdateEvent writes e's status, failure reason and due time.
	UpdateEvent(ctx context.Context, e *model.Event) error
	// TransitionEvent changes an event's status from `from` to `to` (and
	// clears its due time): NotFound unless it had status from, so that
	// only one of several racing callers fires or cancels it.
	TransitionEvent(ctx context.Context, botID, id, from, to string) error

	ListUsers(ctx context.Context, botID string, f UserFilter, p Page) ([]*model.ChatUser, string, error)
	ListConversationsBy(ctx context.Context, botID string, f ConversationFilter, p Page) ([]*model.Conversation, string, error)
	ListMessagesBy(ctx context.Context, botID string, f MessageFilter, p Page) ([]*model.Message, string, error)
	ListEvents(ctx context.Context, botID string, f EventFilter, p Page) ([]*model.Event, string, error)

	// FindUserByTags returns the oldest user whose tags include every
	// tag of tags (NotFound when none).
	FindUserByTags(ctx context.Context, botID string, tags map[string]string) (*model.ChatUser, error)
	// FindConversationByTags is FindUserByTags for conversations of an
	// integration and channel ("" matches any).
	FindConversationByTags(ctx context.Context, botID, integration, channel string, tags map[string]string) (*model.Conversation, error)
	// FindMessageByTags finds the oldest message of a conversation with
	// those tags.
	FindMessageByTags(ctx context.Context, botID, conversationID string, tags map[string]string) (*model.Message, error)
	CountMessages(ctx context.Context, botID, conversationID string) (int, error)
	// TagValues lists the distinct values of a tag key on users,
	// conversations or messages (kind), in order.
	TagValues(ctx context.Context, botID, kind, key string, p Page) ([]string, string, error)
	// DueEvents lists scheduled events due at or before now, any bot,
	// oldest first.
	DueEvents(ctx context.Context, now time.Time, limit int) ([]*model.Event, error)
}

// Tag kinds of TagValues.
const (
	TagsUser         = "user"
	TagsConversation = "conversation"
	TagsMessage      = "message"
)

// UserFilter narrows ListUsers. SortField is "createdAt" (default) or
// "updatedAt"; lists are newest first unless Ascending.
type UserFilter struct {
	ConversationID string
	Tags           map[string]string
	SortField      string
	Ascending      bool
}

// ConversationFilter narrows ListConversationsBy.
type ConversationFilter struct {
	Tags           map[string]string
	ParticipantIDs []string
	Integration    string
	Channel        string
	SortField      string
	Ascending      bool
}

// MessageFilter narrows ListMessagesBy; newest first.
type MessageFilter struct {
	ConversationID string
	Tags           map[string]string
}

// EventFilter narrows ListEvents; newest first.
type EventFilter struct {
	Type           string
	ConversationID string
	UserID         string
	MessageID      string
	WorkflowID     string
	Status         string
}

// RuntimeStates stores the Runtime API's named states.
type RuntimeStates interface {
	// Get returns the state (NotFound when there is none, expired or not:
	// callers check ExpiresAt).
	Get(ctx context.Context, botID, typ, ownerID, name string) (*model.State, error)
	// Put creates or replaces the state; a replaced state keeps its id and
	// creation time (s is updated with them).
	Put(ctx context.Context, s *model.State) error
	// Create stores s unless a state of that key exists (Conflict).
	Create(ctx context.Context, s *model.State) error
	Delete(ctx context.Context, botID, typ, ownerID, name string) error
	// DeleteExpired deletes the state if it has expired at now (NotFound
	// otherwise: gone, or its expiry was extended).
	DeleteExpired(ctx context.Context, botID, typ, ownerID, name string, now time.Time) error
	// Expired lists states whose ExpiresAt is at or before now, any bot.
	Expired(ctx context.Context, now time.Time, limit int) ([]*model.State, error)
}

// WorkflowFilter narrows Workflows.List.
type WorkflowFilter struct {
	Tags             map[string]string
	ConversationID   string
	UserID           string
	ParentWorkflowID string
	Statuses         []string
	Name             string
}

// Workflows stores the Runtime API's workflows.
type Workflows interface {
	Create(ctx context.Context, w *model.Workflow) error
	Get(ctx context.Context, botID, id string) (*model.Workflow, error)
	Update(ctx context.Context, w *model.Workflow) error
	Delete(ctx context.Context, botID, id string) error
	// List is newest first.
	List(ctx context.Context, botID string, f WorkflowFilter, p Page) ([]*model.Workflow, string, error)
}

// TaskFilter narrows Tasks.List.
type TaskFilter struct {
	Tags           map[string]string
	ConversationID string
	UserID         string
	ParentTaskID   string
	Status         []string
	Type           string
}

// Tasks stores the tasks of client 1.35.0.
type Tasks interface {
	Create(ctx context.Context, t *model.Task) error
	Get(ctx context.Context, botID, id string) (*model.Task, error)
	Update(ctx context.Context, t *model.Task) error
	Delete(ctx context.Context, botID, id string) error
	List(ctx context.Context, botID string, f TaskFilter, p Page) ([]*model.Task, string, error)
}

// Analytics stores trackAnalytics counters.
type Analytics interface {
	// Add adds count to the counter of (botID, name, day).
	Add(ctx context.Context, botID, name, day string, count int64) error
	// List returns a bot's counters for days in [from, to] (YYYY-MM-DD,
	// inclusive), by day then name.
	List(ctx context.Context, botID, from, to string) ([]model.AnalyticsCount, error)
}
