package conversations

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
)

// MessageFeedback is a user's feedback on a message, as the webchat shows
// it.
type MessageFeedback struct {
	Value   string `json:"value"`
	Comment string `json:"comment,omitempty"`
}

// feedbackFor loads the feedback userID gave on these messages.
func (s *Webchat) feedbackFor(ctx context.Context, botID, userID string, ms []*model.Message) (map[string]*MessageFeedback, error) {
	out := map[string]*MessageFeedback{}
	if len(ms) == 0 {
		return out, nil
	}
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	fbs, err := s.store.Feedback().FeedbackFor(ctx, botID, userID, ids)
	if err != nil {
		return nil, err
	}
	for _, f := range fbs {
		out[f.MessageID] = &MessageFeedback{Value: f.Value, Comment: f.Comment}
	}
	return out, nil
}

// Feedback records (value set) or removes (value nil) the caller's
// feedback on a message of a conversation they take part in.
func (s *Webchat) Feedback(ctx context.Context, c *Caller, messageID string, value *string, comment string) error {
	if _, err := s.chat.GetMessage(ctx, c, messageID); err != nil {
		return err
	}
	if value == nil {
		return s.store.Feedback().DeleteFeedback(ctx, c.BotID, messageID, c.UserID)
	}
	if *value != model.FeedbackPositive && *value != model.FeedbackNegative {
		return model.Invalid("value: must be positive or negative")
	}
	if len(comment) > 2000 {
		return model.Invalid("comment: at most 2000 characters")
	}
	return s.store.Feedback().PutFeedback(ctx, &model.Feedback{BotID: c.BotID, MessageID: messageID, UserID: c.UserID,
		Value: *value, Comment: comment})
}
