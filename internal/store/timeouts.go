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
