package store

import (
	"context"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Handoffs stores conversations handed over to humans (model.Handoff):
// at most one per conversation, gone on hand back.
type Handoffs interface {
	// Request stores h unless the conversation is already in handoff;
	// created reports whether it was stored.
	Request(ctx context.Context, h *model.Handoff) (created bool, err error)
	// Put stores h, replacing the conversation's handoff if any.
	Put(ctx context.Context, h *model.Handoff) error
	// Get is NotFound when the conversation is not in handoff.
	Get(ctx context.Context, botID, conversationID string) (*model.Handoff, error)
	// Delete is NotFound when the conversation is not in handoff.
	Delete(ctx context.Context, botID, conversationID string) error
	// List lists a bot's handoffs with the given status ("" for all),
	// longest waiting first.
	List(ctx context.Context, botID, status string, p Page) ([]*model.Handoff, string, error)
}

// Activity keeps the turns bots ran and reads a bot's activity by period
// for analytics.
type Activity interface {
	// RecordTurn stores a turn run; recording the same turn again is a
	// no-op.
	RecordTurn(ctx context.Context, r *model.TurnRun) error
	// Buckets returns the bot's activity in [from, to) by periods of
	// length bucket aligned on the Unix epoch, oldest first; periods where
	// nothing happened are left out.
	Buckets(ctx context.Context, botID string, from, to time.Time, bucket time.Duration) ([]model.ActivityBucket, error)
}
