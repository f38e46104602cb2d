// Package turns is the bot side of the turn pipeline (docs/architecture.md):
// every message and custom event a user creates is stored as an incoming
// turn; the Dispatcher runs a conversation's turns one at a time, in order,
// through the bot's Bot. Runtime supplies the Bot of bots with deployed
// JavaScript or bot JSON (run by the goja sandbox of package runtime), and
// the Scheduler fires workflow bots' schedules and inactivity timeouts.
package turns

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Bot runs one incoming turn. Implementations: Runtime's code and workflow
// bots; tests plug in their own; bots outside the process (SDK bots) can
// too: what they send through BotOutput is committed as they send it,
// unless they are EffectHolders.
type Bot interface {
	HandleTurn(ctx context.Context, in *TurnInput, out BotOutput) error
}

// EffectHolder is a Bot whose effects Parley holds until the turn ends
// (the sandboxed JavaScript and workflow bots): what it sends through
// BotOutput is not stored at once but committed in one transaction with
// what it passes to BotOutput.WithCompletion and the turn's completion,
// after HandleTurn returns. A crash before that commit leaves nothing of
// the turn, which runs again; after it, the turn is done: a turn's effects
// are stored exactly once. Signals are published after that commit, in
// the order they were sent.
type EffectHolder interface {
	Bot
	HoldsEffects() bool
}

// Resolver returns the Bot that runs a bot's turns; (nil, nil) means the
// bot has nothing to run and its turns complete without effect.
type Resolver func(ctx context.Context, botID string) (Bot, error)

// TurnInput is what a bot gets for one incoming turn.
type TurnInput struct {
	BotID          string
	ConversationID string
	UserID         string
	// Seq orders the conversation's turns.
	Seq int64
	// Attempt counts this node's earlier deliveries of the turn that ended
	// in RetryLater (0 for the first).
	Attempt int
	// Event is the incoming bot event.
	Event BotEvent
	// Message is the stored message, in its Chat API shape, for message
	// turns; nil for custom events. MessageTags are its tags.
	Message     *wire.Message
	MessageTags map[string]string
	// start is what the turn starts with when it was read with the turn
	// (store.PendingTurn.Start, while the batch's turns before it kept
	// it); nil: read it.
	start *store.TurnStart
	// dialog is the workflow dialog the conversation's last turn stored
	// and kept (keptStart.dialog); nil: read it.
	dialog *keptDialog
}

// BotEvent is the data of an incoming (or outgoing) bot event, from which
// runtimes build their `event` object.
type BotEvent struct {
	// ID identifies the event. For a message it is the message id (a
	// message's event has no row of its own), so a re-run sees the same id.
	ID string
	// Type is the message payload type ("text", "image", ...) or
	// "chat:custom" for a Chat API custom event.
	Type           string
	Direction      string
	Payload        json.RawMessage
	CreatedAt      time.Time
	UserID         string
	ConversationID string
	MessageID      string // empty for custom events
}

// BotOutput is how a bot acts during a turn, as the bot's own user (whose
// id is the bot id). What it creates is stored, then signalled with
// isBot:true; it is outgoing, so it never becomes a turn itself.
type BotOutput interface {
	CreateMessage(ctx context.Context, m OutgoingMessage) (*wire.Message, error)
	CreateEvent(ctx context.Context, e OutgoingEvent) error
	// WithCompletion adds apply to the transaction that completes the
	// turn (after HandleTurn returned): the turn's states and logs are
	// stored with its completion (and, for an EffectHolder, its held
	// replies). apply must be re-runnable (store.Write). states are the
	// states outside the conversation that apply writes, locked first
	// (store.Write.SharedStates); the completion commits alone on
	// PostgreSQL (store.Write.SharesMore).
	WithCompletion(apply func(ctx context.Context, tx store.Store) error, states ...store.StateKey)
	// WithLocalCompletion is WithCompletion for an apply that changes only
	// the turn's conversation's rows, besides inserting rows (logs): the
	// completion may then commit with other conversations' writes
	// (store.Write.Local).
	WithLocalCompletion(apply func(ctx context.Context, tx store.Store) error)
	// WithStatesCompletion is WithLocalCompletion for an apply that also
	// writes states outside the conversation (a user's, the bot's), all
	// of them in states: PostgreSQL may still commit the completion with
	// other writes, locking those states first (store.Write.SharedStates).
	WithStatesCompletion(states []store.StateKey, apply func(ctx context.Context, tx store.Store) error)
	// RequestHandoff asks for a human to take the conversation over
	// ("" for the turn's), stored with the turn's completion: the bot's
	// turns in it are skipped until an operator hands it back.
	RequestHandoff(ctx context.Context, conversationID, reason string) error
}

// OutgoingMessage is a message a bot sends. ConversationID defaults to the
// turn's conversation.
type OutgoingMessage struct {
	ConversationID string
	Payload        json.RawMessage
	Metadata       json.RawMessage
}

// OutgoingEvent is a custom event a bot sends; listeners see it as an
// event_created with id null.
type OutgoingEvent struct {
	ConversationID string
	Payload        json.RawMessage
}
