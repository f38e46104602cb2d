package runtimeapi

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Workflows are stored and listed; Parley does not run them (no
// workflow_update events are sent to bots).
type Workflows struct{ deps }

// WorkflowInput is the body of createWorkflow and getOrCreateWorkflow.
type WorkflowInput struct {
	Name                      string            `json:"name"`
	Input                     json.RawMessage   `json:"input"`
	ParentWorkflowID          string            `json:"parentWorkflowId"`
	ConversationID            string            `json:"conversationId"`
	UserID                    string            `json:"userId"`
	TimeoutAt                 string            `json:"timeoutAt"`
	Tags                      map[string]string `json:"tags"`
	Status                    string            `json:"status"`
	EventID                   string            `json:"eventId"`
	DiscriminateByTags        []string          `json:"discriminateByTags"`
	DiscriminateByStatusGroup string            `json:"discriminateByStatusGroup"`
}

// DefaultWorkflowTimeout is a workflow's timeout when none is given.
const DefaultWorkflowTimeout = 24 * time.Hour

func parseTime(field, s string, def time.Time) (time.Time, error) {
	if s == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, model.Invalid("%s: must be an ISO 8601 date", field)
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

func (s *Workflows) build(ctx context.Context, c *Caller, in WorkflowInput) (*model.Workflow, error) {
	if in.Name == "" {
		return nil, model.Invalid("name: required")
	}
	if !slices.Contains([]string{"pending", "in_progress", "listening"}, in.Status) {
		return nil, model.Invalid("status: must be pending, in_progress or listening")
	}
	input, err := requireObject("input", in.Input, false)
	if err != nil {
		return nil, err
	}
	if err := model.ValidateTags("tags", in.Tags); err != nil {
		return nil, err
	}
	now := model.Now()
	timeout, err := parseTime("timeoutAt", in.TimeoutAt, now.Add(DefaultWorkflowTimeout))
	if err != nil {
		return nil, err
	}
	if in.ConversationID != "" {
		if _, err := s.store.Chat().GetConversation(ctx, c.BotID, in.ConversationID); err != nil {
			return nil, orNotFound(err, "Conversation", in.ConversationID)
		}
	}
	if in.UserID != "" {
		if _, err := s.store.Chat().GetUser(ctx, c.BotID, in.UserID); err != nil {
			return nil, orNotFound(err, "User", in.UserID)
		}
	}
	if in.ParentWorkflowID != "" {
		if _, err := s.store.Workflows().Get(ctx, c.BotID, in.ParentWorkflowID); err != nil {
			return nil, orNotFound(err, "Workflow", in.ParentWorkflowID)
		}
	}
	return &model.Workflow{BotID: c.BotID, ID: model.NewID(), Name: in.Name, Status: in.Status, Input: input,
		Output: json.RawMessage("{}"), ParentWorkflowID: in.ParentWorkflowID, ConversationID: in.ConversationID,
		UserID: in.UserID, EventID: in.EventID, Tags: model.CleanTags(in.Tags), TimeoutAt: timeout,
		CreatedAt: now, UpdatedAt: now}, nil
}

// Create creates a workflow.
func (s *Workflows) Create(ctx context.Context, c *Caller, in WorkflowInput) (*model.Workflow, error) {
	if err := c.require("createWorkflow"); err != nil {
		return nil, err
	}
	w, err := s.build(ctx, c, in)
	if err != nil {
		return nil, err
	}
	return w, s.store.Workflows().Create(ctx, w)
}

// finished are the statuses of the "finished" status group.
var finished = []string{"completed", "failed", "timedout", "cancelled"}

// GetOrCreate returns the workflow of that name whose tags match on the
// keys of discriminateByTags (and whose status is in the status group,
// when given), creating it when none does.
func (s *Workflows) GetOrCreate(ctx context.Context, c *Caller, in WorkflowInput) (*model.Workflow, bool, error) {
	if err := c.require("getOrCreateWorkflow"); err != nil {
		return nil, false, err
	}
	w, err := s.build(ctx, c, in)
	if err != nil {
		return nil, false, err
	}
	f := store.WorkflowFilter{Name: in.Name, Tags: pick(w.Tags, in.DiscriminateByTags), ConversationID: in.ConversationID}
	switch in.DiscriminateByStatusGroup {
	case "":
	case "finished":
		f.Statuses = finished
	case "active":
		for _, st := range model.WorkflowStatuses {
			if !slices.Contains(finished, st) {
				f.Statuses = append(f.Statuses, st)
			}
		}
	default:
		return nil, false, model.Invalid("discriminateByStatusGroup: must be active or finished")
	}
	found, _, err := s.store.Workflows().List(ctx, c.BotID, f, store.Page{Size: 1})
	if err != nil {
		return nil, false, err
	}
	if len(found) > 0 {
		return found[0], false, nil
	}
	return w, true, s.store.Workflows().Create(ctx, w)
}

// Get returns a workflow.
func (s *Workflows) Get(ctx context.Context, c *Caller, id string) (*model.Workflow, error) {
	if err := c.require("getWorkflow"); err != nil {
		return nil, err
	}
	w, err := s.store.Workflows().Get(ctx, c.BotID, id)
	return w, orNotFound(err, "Workflow", id)
}

// WorkflowUpdate is the body of updateWorkflow.
type WorkflowUpdate struct {
	Output        json.RawMessage `json:"output"`
	TimeoutAt     string          `json:"timeoutAt"`
	Status        string          `json:"status"`
	FailureReason *string         `json:"failureReason"`
	Tags          TagPatch        `json:"tags"`
	UserID        *string         `json:"userId"`
	EventID       *string         `json:"eventId"`
}

// Update changes a workflow.
func (s *Workflows) Update(ctx context.Context, c *Caller, id string, in WorkflowUpdate) (*model.Workflow, error) {
	if err := c.require("updateWorkflow"); err != nil {
		return nil, err
	}
	if in.Status != "" && !slices.Contains([]string{"completed", "cancelled", "listening", "paused", "failed", "in_progress"}, in.Status) {
		return nil, model.Invalid("status: must be completed, cancelled, listening, paused, failed or in_progress")
	}
	if in.Output != nil {
		if _, err := requireObject("output", in.Output, true); err != nil {
			return nil, err
		}
	}
	if err := in.Tags.validate("tags"); err != nil {
		return nil, err
	}
	var w *model.Workflow
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if w, err = tx.Workflows().Get(ctx, c.BotID, id); err != nil {
			return orNotFound(err, "Workflow", id)
		}
		if in.Output != nil {
			w.Output = in.Output
		}
		if w.TimeoutAt, err = parseTime("timeoutAt", in.TimeoutAt, w.TimeoutAt); err != nil {
			return err
		}
		now := model.Now()
		if in.Status != "" {
			w.Status = in.Status
			if slices.Contains(finished, in.Status) && w.CompletedAt.IsZero() {
				w.CompletedAt = now
			}
		}
		if in.FailureReason != nil {
			w.FailureReason = *in.FailureReason
		}
		if in.UserID != nil {
			w.UserID = *in.UserID
		}
		if in.EventID != nil {
			w.EventID = *in.EventID
		}
		w.Tags = in.Tags.apply(w.Tags)
		w.UpdatedAt = now
		return tx.Workflows().Update(ctx, w)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Delete deletes a workflow.
func (s *Workflows) Delete(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteWorkflow"); err != nil {
		return err
	}
	return orNotFound(s.store.Workflows().Delete(ctx, c.BotID, id), "Workflow", id)
}

// List lists workflows, newest first.
func (s *Workflows) List(ctx context.Context, c *Caller, f store.WorkflowFilter, token string, size int) ([]*model.Workflow, string, error) {
	if err := c.require("listWorkflows"); err != nil {
		return nil, "", err
	}
	for _, st := range f.Statuses {
		if !slices.Contains(model.WorkflowStatuses, st) {
			return nil, "", model.Errorf(model.ErrInvalidQuery, "statuses: unknown status %q", st)
		}
	}
	return s.store.Workflows().List(ctx, c.BotID, f, page(token, size))
}
