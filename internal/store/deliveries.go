package store

import "context"

// Deliveries remembers, per conversation, the turn being delivered to a bot
// called over HTTP (an SDK bot) and the replies it created, so that a turn
// delivered again (the bot died or timed out after its createMessage
// committed) gets its stored replies back instead of new ones. The rows
// are in the database, so the node that re-delivers the turn needs not be
// the one that delivered it first. Rows go with their conversation.
type Deliveries interface {
	// Begin marks turn seq in flight on its conversation, with no reply
	// counted yet, and forgets the replies of the conversation's earlier
	// turns. Begin of the same turn again (a re-delivery) keeps its
	// replies.
	Begin(ctx context.Context, botID, conversationID string, seq int64) error
	// End marks no turn in flight on the conversation. The turn's replies
	// stay until the next turn begins (a crash before the turn completes
	// re-delivers it).
	End(ctx context.Context, botID, conversationID string) error
	// NextReply counts one more reply of the turn in flight on the
	// conversation. It returns the turn's seq, the reply's ordinal k
	// (1, 2, ...) and the id of the message an earlier delivery stored as
	// that reply ("" if none); ok is false when no turn is in flight.
	NextReply(ctx context.Context, botID, conversationID string) (seq int64, k int, messageID string, ok bool, err error)
	// RecordReply stores messageID as the k-th reply of turn seq; call it
	// in the transaction that stores the message.
	RecordReply(ctx context.Context, botID, conversationID string, seq int64, k int, messageID string) error
}
