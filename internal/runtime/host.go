package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Host is everything bot code can reach outside its sandbox. The service
// implements it; the runtime never sees the store. Calls happen on the turn's
// goroutine, one at a time, with a context that expires with the turn's time
// budget. Messages and users are exchanged in their Chat API JSON shape.
//
// An error of type *model.Error (invalid payload, not found, ...) becomes a
// catchable JS exception carrying its message and type; any other error
// aborts the turn (TurnResult.Err) and its text is not shown to bot code.
type Host interface {
	// CreateMessage validates and stores a message authored by the bot
	// (its payload and metadata, nil for none, as JSON.stringify wrote
	// them: JSON objects) and returns what builds it as the Chat API
	// Message ({id, createdAt, payload, userId, conversationId,
	// metadata?}), called only once bot code reads it (most bots never do).
	CreateMessage(ctx context.Context, conversationID string, payload, metadata json.RawMessage, tags map[string]string) (func() map[string]any, error)
	// CreateEvent stores a custom event authored by the bot and returns the
	// Chat API Event.
	CreateEvent(ctx context.Context, conversationID string, payload map[string]any) (map[string]any, error)
	GetMessage(ctx context.Context, id string) (map[string]any, error)
	// ListMessages returns one page of a conversation's messages and the
	// token of the next page ("" when there is none).
	ListMessages(ctx context.Context, conversationID, nextToken string) ([]map[string]any, string, error)
	GetUser(ctx context.Context, id string) (map[string]any, error)
	GetConversation(ctx context.Context, id string) (map[string]any, error)
	// Call runs one of the Runtime API operations of ClientOperations with
	// its input and output in the Runtime API's shapes (the same use cases
	// as the HTTP Runtime API).
	Call(ctx context.Context, op string, input map[string]any) (map[string]any, error)
}

// ClientOperations are the Runtime API operations bot code's `client` has
// beyond createMessage, createEvent, getMessage, listMessages, getUser and
// getConversation: the ones that make sense in a turn; the Tables API's
// row operations among them.
var ClientOperations = []string{
	"getState", "setState", "getOrSetState", "patchState", "setStateExpiry",
	"updateUser", "updateConversation", "updateMessage",
	"getOrCreateUser", "getOrCreateConversation",
	"listUsers", "listConversations", "listParticipants", "listEvents", "getEvent",
	"trackAnalytics", "searchFiles", "callAction",
	"findTableRows", "getTableRow", "createTableRows", "updateTableRows", "upsertTableRows", "deleteTableRows",
	// Parley's: hand the conversation over to humans (docs/runtime.md).
	"requestHandoff",
}

// States are the three bot-code state objects as JSON objects. A nil or
// empty value stands for {}.
type States struct {
	User         json.RawMessage
	Conversation json.RawMessage
	Bot          json.RawMessage
}

// TurnInput is one turn: an event run on one bot version.
type TurnInput struct {
	BotID     string
	VersionID string
	Code      string        // the version's code; compiled on first use
	Timeout   time.Duration // 0 means Options.DefaultTimeout; capped at Options.MaxTimeout
	Event     Event
	// Message is the stored message in Chat API shape (with metadata) for a
	// message turn, nil otherwise. User and Conversation are the Chat API
	// shapes of the event's user and conversation (nil when unknown).
	Message      map[string]any
	User         map[string]any
	Conversation map[string]any
	States       States
	Host         Host
}

// TurnResult is what a turn left behind for the turns package to persist.
type TurnResult struct {
	// States holds the states to persist: a field is non-nil only when that
	// state changed. Nothing is set when the turn ended with a Problem.
	States States
	// Logs are the turn's log lines (console.*, logger.*, and one error line
	// per Problem), in order, with BotID, Time, Level, Message,
	// ConversationID, UserID and EventID set. ID is left to the caller (package turns).
	Logs []model.LogEntry
	// Stopped is true when a before_incoming_message hook stopped the turn.
	Stopped bool
	// Problem is set when bot code failed; package turns records it as an issue.
	Problem *Problem
	// Err is set when the turn failed for a reason that is not the bot's:
	// the caller's context ended or the Host failed. Bot code is not blamed
	// and package turns may retry.
	Err      error
	Duration time.Duration
}

// Problem is a failure of bot code, grouped into issues by Code.
type Problem struct {
	Code        string // one of the Problem* constants
	Title       string
	Description string
}

// Problem codes.
const (
	ProblemCompile        = "compile_error"
	ProblemTimeout        = "timeout"
	ProblemUncaught       = "uncaught_error"
	ProblemRejection      = "unhandled_rejection"
	ProblemPending        = "pending_promise"
	ProblemOutputTooLarge = "output_too_large"
	ProblemStateTooLarge  = "state_too_large"
	ProblemInvalidState   = "invalid_state"
	ProblemMemory         = "memory_limit"
	ProblemInternal       = "internal_error"
)
