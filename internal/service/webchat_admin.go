package service

import (
	"context"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Conversation browsing for the dashboard: Admin API operations Parley adds
// (GET /v1/admin/bots/{id}/conversations and .../{conversationId}/messages,
// documented in docs/dashboard.md). Any member of the bot's workspace may
// read them.

// AdminConversation is a conversation with its owner and last message.
type AdminConversation struct {
	Conversation *model.Conversation
	LastMessage  *model.Message
}

// AdminListConversations lists a bot's conversations, newest first.
func (s *Service) AdminListConversations(ctx context.Context, c *Caller, botID string, page store.Page) ([]AdminConversation, string, error) {
	if err := c.require(model.PermRead); err != nil {
		return nil, "", err
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, "", err
	}
	convs, next, err := s.store.Chat().ListBotConversations(ctx, botID, page)
	if err != nil {
		return nil, "", err
	}
	out := make([]AdminConversation, 0, len(convs))
	for _, conv := range convs {
		ac := AdminConversation{Conversation: conv}
		ms, _, err := s.store.Chat().ListMessages(ctx, botID, conv.ID, store.Page{Size: 1})
		if err != nil {
			return nil, "", err
		}
		if len(ms) > 0 {
			ac.LastMessage = ms[0]
		}
		out = append(out, ac)
	}
	return out, next, nil
}

// AdminListMessages lists one page of a conversation's messages, newest
// first, with the participants of the conversation.
func (s *Service) AdminListMessages(ctx context.Context, c *Caller, botID, convID string, page store.Page) ([]*model.Message, []*model.ChatUser, string, error) {
	if err := c.require(model.PermRead); err != nil {
		return nil, nil, "", err
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, nil, "", err
	}
	if _, err := s.conversation(ctx, botID, convID); err != nil {
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
