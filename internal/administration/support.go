package administration

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Support is what support teams do on the Admin API (issue 19): human
// handoff — take a conversation over from the bot, reply as an agent,
// hand it back, list the conversations waiting — and the bot's analytics.
// Handoff operations are Parley's own (docs/dashboard.md); analytics are
// getBotAnalytics plus Parley's richer series.
type Support struct {
	store  store.Store
	commit store.Committer
}

// NewSupport returns the support operations; an agent's reply goes through
// commit, so that the user's streams hear of it after the commit.
func NewSupport(st store.Store, commit store.Committer) *Support {
	return &Support{store: st, commit: commit}
}

func (s *Support) bot(ctx context.Context, c *Caller, id string) (*model.Bot, error) {
	return s.store.Bots().Get(ctx, c.Workspace.ID, id)
}

func (s *Support) conversation(ctx context.Context, botID, convID string) error {
	_, err := s.store.Chat().GetConversation(ctx, botID, convID)
	if model.IsNotFound(err) {
		return model.NotFound("Conversation " + quote(convID))
	}
	return err
}

// agentName is how users see an operator: "Agent" and their display name
// (or the part of their e-mail address before the @).
func agentName(a *model.Account) string {
	name := a.DisplayName
	if name == "" {
		name, _, _ = strings.Cut(a.Email, "@")
	}
	return "Agent " + name
}

// ensureAgent creates the operator's chat user of the bot and makes it a
// participant of the conversation, once.
func ensureAgent(ctx context.Context, tx store.Store, botID, convID string, a *model.Account, now time.Time) error {
	id := model.AgentUserID(a.ID)
	if _, err := tx.Chat().GetUser(ctx, botID, id); model.IsNotFound(err) {
		if err := tx.Chat().CreateUser(ctx, &model.ChatUser{BotID: botID, ID: id, Name: agentName(a), CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	in, err := tx.Chat().IsParticipant(ctx, botID, convID, id)
	if err != nil || in {
		return err
	}
	return tx.Chat().AddParticipant(ctx, botID, convID, id, now)
}

// ListHandoffs lists a bot's conversations in handoff with the given status
// ("" for all, model.HandoffWaiting for the waiting list), longest waiting
// first.
func (s *Support) ListHandoffs(ctx context.Context, c *Caller, botID, status string, page store.Page) ([]*model.Handoff, string, error) {
	if err := c.require("listHandoffs"); err != nil {
		return nil, "", err
	}
	switch status {
	case "", model.HandoffWaiting, model.HandoffActive:
	default:
		return nil, "", model.Errorf(model.ErrInvalidQuery, "status: must be %q or %q", model.HandoffWaiting, model.HandoffActive)
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, "", err
	}
	return s.store.Handoffs().List(ctx, botID, status, page)
}

// GetHandoff returns the conversation's handoff, nil when the bot has it.
func (s *Support) GetHandoff(ctx context.Context, c *Caller, botID, convID string) (*model.Handoff, error) {
	if err := c.require("getHandoff"); err != nil {
		return nil, err
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, err
	}
	if err := s.conversation(ctx, botID, convID); err != nil {
		return nil, err
	}
	h, err := s.store.Handoffs().Get(ctx, botID, convID)
	if model.IsNotFound(err) {
		return nil, nil
	}
	return h, err
}

// TakeOver makes the caller the conversation's operator: the bot's turns
// in it are skipped until HandBack. A waiting conversation keeps its
// request's reason and time; taking one over that another operator holds
// is a conflict; taking one's own again changes nothing.
func (s *Support) TakeOver(ctx context.Context, c *Caller, botID, convID, reason string) (*model.Handoff, error) {
	if err := c.require("takeOverConversation"); err != nil {
		return nil, err
	}
	if len(reason) > model.HandoffReasonMax {
		return nil, model.Invalid("reason: at most %d characters", model.HandoffReasonMax)
	}
	b, err := s.bot(ctx, c, botID)
	if err != nil {
		return nil, err
	}
	if err := s.conversation(ctx, botID, convID); err != nil {
		return nil, err
	}
	now := model.Now()
	// The operator's agent user joins the conversation: participant_added
	// tells the user's chat (the webchat then shows the agent's replies
	// under the agent's name).
	agentID := model.AgentUserID(c.Account.ID)
	joined, err := s.store.Chat().IsParticipant(ctx, botID, convID, agentID)
	if err != nil {
		return nil, err
	}
	var sig *model.Signal
	if !joined {
		sig = &model.Signal{BotID: botID, ConversationID: convID, Type: model.SignalParticipantAdded,
			Data: wire.ParticipantData(convID, agentID), CreatedAt: now}
	}
	var out *model.Handoff
	err = s.commit.Commit(ctx, &store.Write{Signal: sig, Apply: func(ctx context.Context, tx store.Store) error {
		h, err := tx.Handoffs().Get(ctx, botID, convID)
		switch {
		case model.IsNotFound(err):
			h = &model.Handoff{BotID: botID, ConversationID: convID, Reason: reason, RequestedBy: c.Account.ID, RequestedAt: now}
		case err != nil:
			return err
		case h.Status == model.HandoffActive && h.AgentAccountID == c.Account.ID:
			out = h
			return nil
		case h.Status == model.HandoffActive:
			return model.Conflict("conversation %s is already taken over by %s", quote(convID), h.AgentName)
		}
		h.Status, h.AgentAccountID, h.AgentUserID, h.AgentName, h.TakenAt =
			model.HandoffActive, c.Account.ID, model.AgentUserID(c.Account.ID), agentName(c.Account), now
		if err := ensureAgent(ctx, tx, botID, convID, c.Account, now); err != nil {
			return err
		}
		if err := tx.Handoffs().Put(ctx, h); err != nil {
			return err
		}
		out = h
		v, _ := json.Marshal(map[string]any{"botId": botID, "conversationId": convID, "reason": h.Reason,
			"waitedMs": now.Sub(h.RequestedAt).Milliseconds()})
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditHandoffTakeOver, convID, b.Name, string(v))
	}})
	return out, err
}

// Reply sends a message to the conversation from the caller's agent user
// (model.AgentUserID): stored as an outgoing message, signalled as the
// bot's side (isBot:true, so the user's chat shows it as an answer, with
// the agent's name), never a turn. The conversation must be taken over.
func (s *Support) Reply(ctx context.Context, c *Caller, botID, convID string, payload json.RawMessage) (*model.Message, error) {
	if err := c.require("replyAsAgent"); err != nil {
		return nil, err
	}
	p, err := model.ValidateMessagePayload(payload)
	if err != nil {
		return nil, err
	}
	b, err := s.bot(ctx, c, botID)
	if err != nil {
		return nil, err
	}
	if err := s.conversation(ctx, botID, convID); err != nil {
		return nil, err
	}
	h, err := s.store.Handoffs().Get(ctx, botID, convID)
	if model.IsNotFound(err) || (err == nil && h.Status != model.HandoffActive) {
		return nil, model.Errorf(model.ErrRelationConflict, "conversation %s is not taken over: take it over before replying", quote(convID))
	} else if err != nil {
		return nil, err
	}
	now := model.Now()
	m := &model.Message{BotID: botID, ID: model.NewID(), ConversationID: convID, UserID: model.AgentUserID(c.Account.ID),
		Payload: p, Direction: model.DirectionOutgoing, CreatedAt: now}
	v, _ := json.Marshal(map[string]any{"botId": botID, "conversationId": convID, "messageId": m.ID})
	rec := &model.AuditRecord{ID: model.NewID(), WorkspaceID: c.Workspace.ID, RecordedAt: now, AccountID: c.Account.ID,
		Email: c.Account.Email, Action: model.AuditHandoffReply, ResourceID: convID, ResourceName: b.Name, Value: string(v)}
	sig := &model.Signal{BotID: botID, ConversationID: convID, Type: model.SignalMessageCreated,
		Data: wire.MessageCreatedData(m, true), CreatedAt: now}
	err = s.commit.Commit(ctx, &store.Write{Signal: sig, Apply: func(ctx context.Context, tx store.Store) error {
		// Still taken over when the reply commits (not handed back meanwhile).
		if h, err := tx.Handoffs().Get(ctx, botID, convID); err != nil || h.Status != model.HandoffActive {
			return model.Errorf(model.ErrRelationConflict, "conversation %s is not taken over: take it over before replying", quote(convID))
		}
		if err := ensureAgent(ctx, tx, botID, convID, c.Account, now); err != nil {
			return err
		}
		if err := tx.Chat().CreateMessage(ctx, m); err != nil {
			return err
		}
		return tx.Audit().Record(ctx, rec)
	}})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// HandBack ends the conversation's handoff: the bot answers what comes
// next (not what was said during the handoff).
func (s *Support) HandBack(ctx context.Context, c *Caller, botID, convID string) error {
	if err := c.require("handBackConversation"); err != nil {
		return err
	}
	b, err := s.bot(ctx, c, botID)
	if err != nil {
		return err
	}
	if err := s.conversation(ctx, botID, convID); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		h, err := tx.Handoffs().Get(ctx, botID, convID)
		if model.IsNotFound(err) {
			return model.NotFound("Handoff of conversation " + quote(convID))
		} else if err != nil {
			return err
		}
		if err := tx.Handoffs().Delete(ctx, botID, convID); err != nil {
			return err
		}
		v, _ := json.Marshal(map[string]any{"botId": botID, "conversationId": convID, "agent": h.AgentName,
			"heldMs": sinceOrZero(h.TakenAt).Milliseconds()})
		return audit(ctx, tx, c.Workspace.ID, &c.Principal, model.AuditHandoffHandBack, convID, b.Name, string(v))
	})
}

func sinceOrZero(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return model.Now().Sub(t)
}
