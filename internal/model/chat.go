package model

import (
	"encoding/json"
	"regexp"
	"time"
)

// ChatUser is a user of a bot's chat interfaces. ID is the public id: the
// foreign id chosen at creation, or a generated one.
type ChatUser struct {
	BotID      string
	ID         string
	Name       string
	PictureURL string
	Profile    string
	// Tags are the Runtime API's tags (empty for Chat API users).
	Tags      map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Conversation belongs to a bot; its owner is its first participant.
type Conversation struct {
	BotID   string
	ID      string
	OwnerID string
	// Integration is the integration the conversation came on ("chat",
	// "webchat", or what a Runtime API caller names); Channel its channel.
	Integration string
	Channel     string
	Tags        map[string]string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Message is a chat message. Payload is the validated, normalised payload
// JSON; Metadata is nil when the message has none.
type Message struct {
	BotID          string
	ID             string
	ConversationID string
	UserID         string
	Payload        json.RawMessage
	Metadata       json.RawMessage
	Tags           map[string]string
	Direction      string
	CreatedAt      time.Time
	// UpdatedAt is the last updateMessage (zero: never updated).
	UpdatedAt time.Time
}

// Event is a custom event. ID is empty for signals of bot events that have
// no stored event of their own.
type Event struct {
	BotID          string
	ID             string
	ConversationID string
	UserID         string
	Type           string
	Payload        json.RawMessage
	CreatedAt      time.Time
	// Runtime API fields: the message or workflow the event is about, its
	// status (EventPending, ...) and, for a scheduled event, when it fires.
	MessageID     string
	WorkflowID    string
	Status        string
	FailureReason string
	DueAt         time.Time
}

// Event statuses of the Runtime API.
const (
	EventPending   = "pending"
	EventProcessed = "processed"
	EventIgnored   = "ignored"
	EventFailed    = "failed"
	EventScheduled = "scheduled"
	EventCanceled  = "canceled"
)

// Bot-side types of the custom events users send, per interface.
const (
	ChatCustomEventType    = "chat:custom"
	WebchatCustomEventType = "webchat:custom"
	// WebchatConversationStarted is the event the webchat sends when it
	// opens a conversation; the bot sees it once per conversation.
	WebchatConversationStarted = "webchat:conversationStarted"
)

// Direction of a message or event, seen from the bot.
const (
	DirectionIncoming = "incoming"
	DirectionOutgoing = "outgoing"
)

// Signal is one entry of a conversation's durable signal log. Seq numbers
// are per conversation, start at 1 and have no gaps.
type Signal struct {
	BotID          string
	ConversationID string
	Seq            int64
	Type           string
	Data           json.RawMessage
	CreatedAt      time.Time
}

// Signal types of the Chat API.
const (
	SignalMessageCreated     = "message_created"
	SignalMessageDeleted     = "message_deleted"
	SignalEventCreated       = "event_created"
	SignalParticipantAdded   = "participant_added"
	SignalParticipantRemoved = "participant_removed"
)

// Turn is an incoming bot event waiting to be (or being) run by the bot.
type Turn struct {
	BotID          string
	ConversationID string
	Seq            int64
	Kind           string // "message" or "event"
	RefID          string // message id or event id
	UserID         string
	Attempts       int
	CreatedAt      time.Time
}

// Turn kinds.
const (
	TurnMessage = "message"
	TurnEvent   = "event"
)

// MaxFIDLength is the longest foreign id accepted (upstream's limit).
const MaxFIDLength = 70

var fidPattern = regexp.MustCompile(`^[a-zA-Z0-9_\-\\/]+$`)

// ValidateFID checks a caller-chosen id for a user or conversation, with the
// upstream rule and messages.
func ValidateFID(field, id string) error {
	if len(id) > MaxFIDLength {
		return Invalid("%s: Fid length exceeds the maximum allowed length of %d", field, MaxFIDLength)
	}
	if !fidPattern.MatchString(id) {
		return Invalid("%s: Fid contains invalid characters", field)
	}
	return nil
}

// ConversationRef names a conversation of a bot.
type ConversationRef struct {
	BotID          string
	ConversationID string
}
