package administration

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Conversation browsing for the dashboard: Admin API operations Parley adds
// (GET /v1/admin/bots/{id}/conversations and .../{conversationId}/messages,
// documented in docs/dashboard.md). Any member of the bot's workspace may
// read them.

// ConversationSummary is a conversation with its owner, last message and
// message count.
type ConversationSummary struct {
	Conversation *model.Conversation
	LastMessage  *model.Message
	MessageCount int
}

// ListConversations lists a bot's conversations, newest first; with a
// search, those where it is found in the conversation id, a user's id or
// name, or a message's text (store.Chat.ListBotConversations).
func (s *Bots) ListConversations(ctx context.Context, c *Caller, botID, search string, page store.Page) ([]ConversationSummary, string, error) {
	if err := c.require("listBotConversations"); err != nil {
		return nil, "", err
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, "", err
	}
	convs, next, err := s.store.Chat().ListBotConversations(ctx, botID, search, page)
	if err != nil {
		return nil, "", err
	}
	out := make([]ConversationSummary, 0, len(convs))
	for _, conv := range convs {
		ac := ConversationSummary{Conversation: conv}
		ms, _, err := s.store.Chat().ListMessages(ctx, botID, conv.ID, store.Page{Size: 1})
		if err != nil {
			return nil, "", err
		}
		if len(ms) > 0 {
			ac.LastMessage = ms[0]
			if ac.MessageCount, err = s.store.Chat().CountMessages(ctx, botID, conv.ID); err != nil {
				return nil, "", err
			}
		}
		out = append(out, ac)
	}
	return out, next, nil
}

// ListConversationMessages lists one page of a conversation's messages, newest
// first, with the participants of the conversation.
func (s *Bots) ListConversationMessages(ctx context.Context, c *Caller, botID, convID string, page store.Page) ([]*model.Message, []*model.ChatUser, string, error) {
	if err := c.require("listConversationMessages"); err != nil {
		return nil, nil, "", err
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, nil, "", err
	}
	if _, err := s.store.Chat().GetConversation(ctx, botID, convID); model.IsNotFound(err) {
		return nil, nil, "", model.NotFound("Conversation " + quote(convID))
	} else if err != nil {
		return nil, nil, "", err
	}
	ms, next, err := s.store.Chat().ListMessages(ctx, botID, convID, page)
	if err != nil {
		return nil, nil, "", err
	}
	us, _, err := s.store.Chat().ListParticipants(ctx, botID, convID, store.Page{Size: 100})
	if err != nil {
		return nil, nil, "", err
	}
	return ms, us, next, nil
}
