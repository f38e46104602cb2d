package runtimeapi

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Tasks are the tasks of @botpress/client 1.35.0 (SDK 5.4.3's client):
// stored and listed.
type Tasks struct{ deps }

// TaskInput is the body of createTask.
type TaskInput struct {
	Title          string            `json:"title"`
	Description    string            `json:"description"`
	Type           string            `json:"type"`
	Data           json.RawMessage   `json:"data"`
	ParentTaskID   string            `json:"parentTaskId"`
	ConversationID string            `json:"conversationId"`
	UserID         string            `json:"userId"`
	TimeoutAt      string            `json:"timeoutAt"`
	Tags           map[string]string `json:"tags"`
}

// Create creates a task (status pending).
func (s *Tasks) Create(ctx context.Context, c *Caller, in TaskInput) (*model.Task, error) {
	if err := c.require("createTask"); err != nil {
		return nil, err
	}
	if in.Type == "" {
		return nil, model.Invalid("type: required")
	}
	data, err := requireObject("data", in.Data, false)
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
	if in.ParentTaskID != "" {
		if _, err := s.store.Tasks().Get(ctx, c.BotID, in.ParentTaskID); err != nil {
			return nil, orNotFound(err, "Task", in.ParentTaskID)
		}
	}
	t := &model.Task{BotID: c.BotID, ID: model.NewID(), Title: in.Title, Description: in.Description, Type: in.Type,
		Data: data, Status: "pending", ParentTaskID: in.ParentTaskID, ConversationID: in.ConversationID, UserID: in.UserID,
		Tags: model.CleanTags(in.Tags), TimeoutAt: timeout, CreatedAt: now, UpdatedAt: now}
	return t, s.store.Tasks().Create(ctx, t)
}

// Get returns a task.
func (s *Tasks) Get(ctx context.Context, c *Caller, id string) (*model.Task, error) {
	if err := c.require("getTask"); err != nil {
		return nil, err
	}
	t, err := s.store.Tasks().Get(ctx, c.BotID, id)
	return t, orNotFound(err, "Task", id)
}

// TaskUpdate is the body of updateTask.
type TaskUpdate struct {
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	Data        json.RawMessage `json:"data"`
	TimeoutAt   string          `json:"timeoutAt"`
	Status      string          `json:"status"`
	Tags        TagPatch        `json:"tags"`
}

// Update changes a task.
func (s *Tasks) Update(ctx context.Context, c *Caller, id string, in TaskUpdate) (*model.Task, error) {
	if err := c.require("updateTask"); err != nil {
		return nil, err
	}
	if in.Status != "" && !slices.Contains(model.TaskStatuses, in.Status) {
		return nil, model.Invalid("status: unknown status %q", in.Status)
	}
	if in.Data != nil {
		if _, err := requireObject("data", in.Data, true); err != nil {
			return nil, err
		}
	}
	if err := in.Tags.validate("tags"); err != nil {
		return nil, err
	}
	var t *model.Task
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if t, err = tx.Tasks().Get(ctx, c.BotID, id); err != nil {
			return orNotFound(err, "Task", id)
		}
		if in.Title != nil {
			t.Title = *in.Title
		}
		if in.Description != nil {
			t.Description = *in.Description
		}
		if in.Data != nil {
			t.Data = in.Data
		}
		if t.TimeoutAt, err = parseTime("timeoutAt", in.TimeoutAt, t.TimeoutAt); err != nil {
			return err
		}
		if in.Status != "" {
			t.Status = in.Status
		}
		t.Tags = in.Tags.apply(t.Tags)
		t.UpdatedAt = model.Now()
		return tx.Tasks().Update(ctx, t)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Delete deletes a task.
func (s *Tasks) Delete(ctx context.Context, c *Caller, id string) error {
	if err := c.require("deleteTask"); err != nil {
		return err
	}
	return orNotFound(s.store.Tasks().Delete(ctx, c.BotID, id), "Task", id)
}

// List lists tasks, newest first.
func (s *Tasks) List(ctx context.Context, c *Caller, f store.TaskFilter, token string, size int) ([]*model.Task, string, error) {
	if err := c.require("listTasks"); err != nil {
		return nil, "", err
	}
	return s.store.Tasks().List(ctx, c.BotID, f, page(token, size))
}
