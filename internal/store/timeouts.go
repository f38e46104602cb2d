package store

import (
	"context"
	"time"
)

// DialogTimeout is when the workflow dialog of a conversation times out for
// inactivity.
type DialogTimeout struct {
	BotID          string
	ConversationID string
	// UserID is the user of the dialog's last turn: the timeout turn runs
	// as that user.
	UserID string
	DueAt  time.Time
}

// DialogTimeouts stores the due times of workflow dialogs, so that an
// inactivity timeout fires after a restart and whichever node ran the
// dialog's last turn. Rows go when their conversation (or bot) is deleted.
type DialogTimeouts interface {
	// Set records the conversation's due time, replacing any previous one.
	Set(ctx context.Context, t *DialogTimeout) error
	// Clear removes the conversation's due time; none is not an error.
	Clear(ctx context.Context, botID, conversationID string) error
	// Due lists at most limit timeouts due at or before now, earliest
	// first.
	Due(ctx context.Context, now time.Time, limit int) ([]*DialogTimeout, error)
	// Claim removes the conversation's timeout if it is still due at dueAt
	// (milliseconds) and reports whether it did: of several callers firing
	// the same timeout, exactly one claims it, and a timeout moved by newer
	// activity is not claimed.
	Claim(ctx context.Context, botID, conversationID string, dueAt time.Time) (bool, error)
}

// ScheduleFire is how far a workflow bot's schedule trigger has fired:
// FiredUpTo is the last scheduled time whose firing committed.
type ScheduleFire struct {
	BotID     string
	TriggerID string
	FiredUpTo time.Time
}

// ScheduleFires keeps, per schedule trigger, the last scheduled time it
// fired, so that each scheduled time fires once across nodes and
// restarts: the scheduler leader advances it in the transaction that
// commits a firing's effects (Advance), and a new leader fires the times
// after it. Rows go with their bot.
type ScheduleFires interface {
	// List returns every trigger's row.
	List(ctx context.Context) ([]ScheduleFire, error)
	// Start records firedUpTo for a trigger that has no row yet; a row
	// already there is kept.
	Start(ctx context.Context, botID, triggerID string, firedUpTo time.Time) error
	// Advance moves the trigger's time from `from` to `to` (milliseconds)
	// and reports false, changing nothing, when it no longer was `from`:
	// of two leaders firing one scheduled time, one advances it.
	Advance(ctx context.Context, botID, triggerID string, from, to time.Time) (bool, error)
}
