package runtimeapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Events are the bot's events. An event created in a conversation gives
// the bot a turn (its type as given: "myEvent", "telegram:typing", ...);
// a scheduled one does when it is due (Scheduler). Events outside a
// conversation are stored without a turn: Parley runs turns per
// conversation.
type Events struct{ deps }

// EventInput is the body of createEvent.
type EventInput struct {
	Type           string          `json:"type"`
	Payload        json.RawMessage `json:"payload"`
	Schedule       *Schedule       `json:"schedule"`
	ConversationID string          `json:"conversationId"`
	UserID         string          `json:"userId"`
	WorkflowID     string          `json:"workflowId"`
	MessageID      string          `json:"messageId"`
}

// Create stores an event and gives the bot its turn, now or when its
// schedule is due.
func (s *Events) Create(ctx context.Context, c *Caller, in EventInput) (*model.Event, error) {
	if err := c.require("createEvent"); err != nil {
		return nil, err
	}
	if in.Type == "" {
		return nil, model.Invalid("type: required")
	}
	payload, err := requireObject("payload", in.Payload, true)
	if err != nil {
		return nil, err
	}
	now := model.Now()
	e := &model.Event{BotID: c.BotID, ID: model.NewID(), ConversationID: in.ConversationID, UserID: in.UserID,
		Type: in.Type, Payload: payload, MessageID: in.MessageID, WorkflowID: in.WorkflowID,
		Status: model.EventProcessed, CreatedAt: now}
	if in.Schedule != nil {
		if e.DueAt, err = in.Schedule.due(now); err != nil {
			return nil, err
		}
		e.Status = model.EventScheduled
	}
	if e.ConversationID != "" {
		if _, err := s.store.Chat().GetConversation(ctx, c.BotID, e.ConversationID); err != nil {
			return nil, orNotFound(err, "Conversation", e.ConversationID)
		}
	}
	if e.UserID != "" {
		if _, err := s.store.Chat().GetUser(ctx, c.BotID, e.UserID); err != nil {
			return nil, orNotFound(err, "User", e.UserID)
		}
	}
	w := &store.Write{Apply: func(ctx context.Context, tx store.Store) error { return tx.Chat().CreateEvent(ctx, e) }}
	if e.Status != model.EventScheduled && e.ConversationID != "" {
		w.Turn = eventTurn(e)
	}
	if err := s.commit.Commit(ctx, w); err != nil {
		return nil, err
	}
	return e, nil
}

func eventTurn(e *model.Event) *model.Turn {
	return &model.Turn{BotID: e.BotID, ConversationID: e.ConversationID, Kind: model.TurnEvent, RefID: e.ID,
		UserID: e.UserID, CreatedAt: model.Now()}
}

// Get returns an event.
func (s *Events) Get(ctx context.Context, c *Caller, id string) (*model.Event, error) {
	if err := c.require("getEvent"); err != nil {
		return nil, err
	}
	e, err := s.store.Chat().GetEvent(ctx, c.BotID, id)
	return e, orNotFound(err, "Event", id)
}

// ListEventsQuery is the query of listEvents.
type ListEventsQuery struct {
	NextToken string
	PageSize  int
	store.EventFilter
}

// List lists events, newest first.
func (s *Events) List(ctx context.Context, c *Caller, q ListEventsQuery) ([]*model.Event, string, error) {
	if err := c.require("listEvents"); err != nil {
		return nil, "", err
	}
	return s.store.Chat().ListEvents(ctx, c.BotID, q.EventFilter, page(q.NextToken, q.PageSize))
}

// CancelScheduled cancels a scheduled event that has not fired yet.
func (s *Events) CancelScheduled(ctx context.Context, c *Caller, id string) error {
	if err := c.require("cancelScheduledEvent"); err != nil {
		return err
	}
	e, err := s.store.Chat().GetEvent(ctx, c.BotID, id)
	if err != nil {
		return orNotFound(err, "Event", id)
	}
	if e.Status != model.EventScheduled {
		return model.Invalid("event %s is not scheduled (status %s)", quote(id), e.Status)
	}
	err = s.store.Chat().TransitionEvent(ctx, c.BotID, id, model.EventScheduled, model.EventCanceled)
	if model.IsNotFound(err) {
		return model.Invalid("event %s has already fired", quote(id))
	}
	return err
}

// fireDue fires the scheduled events due at now: each is marked processed
// and its turn enqueued in one write, so an event fires once even with
// several nodes racing.
func (s *Events) fireDue(ctx context.Context, now time.Time) (int, error) {
	due, err := s.store.Chat().DueEvents(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	fired := 0
	for _, e := range due {
		w := &store.Write{Apply: func(ctx context.Context, tx store.Store) error {
			return tx.Chat().TransitionEvent(ctx, e.BotID, e.ID, model.EventScheduled, model.EventProcessed)
		}}
		if e.ConversationID != "" {
			w.Turn = eventTurn(e)
		}
		err := s.commit.Commit(ctx, w)
		if model.IsNotFound(err) {
			continue // fired or cancelled by someone else, or its conversation is gone
		}
		if err != nil {
			return fired, err
		}
		fired++
	}
	return fired, nil
}
