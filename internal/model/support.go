package model

import "time"

// Human handoff (issue 19): an operator takes a conversation over from the
// bot. While a conversation is in handoff, waiting or taken, the bot's
// turns for it are skipped: they complete without running the bot (the
// user's messages are stored and shown as usual); after the hand back the
// bot answers only what comes next.

// Handoff states.
const (
	// HandoffWaiting: the bot asked for a human; nobody took it yet.
	HandoffWaiting = "waiting"
	// HandoffActive: an operator took the conversation over.
	HandoffActive = "active"
)

// Handoff is a conversation handed over to humans.
type Handoff struct {
	BotID          string
	ConversationID string
	Status         string
	Reason         string
	// RequestedBy is "bot" when the bot asked, else the account id of the
	// operator who took it over without a request.
	RequestedBy string
	RequestedAt time.Time
	// AgentAccountID, AgentUserID and AgentName name the operator once
	// taken (AgentUserID is the chat user the operator's replies come from).
	AgentAccountID string
	AgentUserID    string
	AgentName      string
	TakenAt        time.Time
}

// HandoffReasonMax bounds a handoff reason.
const HandoffReasonMax = 1000

// AgentUserID is the chat user id an operator's replies come from.
func AgentUserID(accountID string) string { return "agent_" + accountID }

// Audit actions of the handoff (Parley's own, outside Botpress's enum).
const (
	AuditHandoffTakeOver AuditAction = "HANDOFF_TAKE_OVER"
	AuditHandoffReply    AuditAction = "HANDOFF_REPLY"
	AuditHandoffHandBack AuditAction = "HANDOFF_HAND_BACK"
)

// TurnRun is one turn a bot ran (kept for analytics).
type TurnRun struct {
	BotID          string
	ConversationID string
	Seq            int64
	RanAt          time.Time
	Duration       time.Duration
	Failed         bool
}

// ActivityBucket is what happened to a bot in one period
// [Start, Start+bucket): read from its stored messages, users,
// conversations and turn runs.
type ActivityBucket struct {
	Start            time.Time
	MessagesIn       int64 // from users
	MessagesOut      int64 // from the bot
	AgentMessages    int64 // from operators (handoff)
	ActiveUsers      int64 // distinct users who sent a message
	ReturningUsers   int64 // of ActiveUsers, created before Start
	NewUsers         int64 // users created
	Conversations    int64 // distinct conversations with a message
	NewConversations int64 // conversations created
	Turns            int64
	TurnFailures     int64
	// TurnDurations are the period's turn times, sorted ascending.
	TurnDurations []time.Duration
}
