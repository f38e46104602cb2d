package runtimeapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
)

// Actions are the operations on the bot as a whole: callAction,
// trackAnalytics and listTagValues.
type Actions struct {
	deps
	caller ActionCaller
}

// ActionInput is the body of callAction.
type ActionInput struct {
	Type  string          `json:"type"`
	Input json.RawMessage `json:"input"`
}

// Call runs one of the bot's actions and returns its output.
func (s *Actions) Call(ctx context.Context, c *Caller, in ActionInput) (json.RawMessage, error) {
	if err := c.require("callAction"); err != nil {
		return nil, err
	}
	if in.Type == "" {
		return nil, model.Invalid("type: required")
	}
	input, err := requireObject("input", in.Input, true)
	if err != nil {
		return nil, err
	}
	if s.caller == nil {
		return nil, model.Errorf(model.ErrRuntime, "action %s: this server has no runtime that runs bot actions", quote(in.Type))
	}
	out, err := s.caller.CallAction(ctx, c.BotID, in.Type, input)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || string(out) == "null" {
		out = json.RawMessage("{}")
	}
	return out, nil
}

// AnalyticsInput is the body of trackAnalytics.
type AnalyticsInput struct {
	Name  string `json:"name"`
	Count *int64 `json:"count"`
}

// Track adds count to the bot's counter name for today (UTC).
func (s *Actions) Track(ctx context.Context, c *Caller, in AnalyticsInput) error {
	if err := c.require("trackAnalytics"); err != nil {
		return err
	}
	if in.Name == "" || len(in.Name) > 200 {
		return model.Invalid("name: required, at most 200 characters")
	}
	if in.Count == nil {
		return model.Invalid("count: required")
	}
	return s.store.Analytics().Add(ctx, c.BotID, in.Name, model.Now().Format(time.DateOnly), *in.Count)
}

// Analytics reads back a bot's counters for days in [from, to]
// (YYYY-MM-DD, inclusive), for the analytics features.
func (s *Actions) Analytics(ctx context.Context, c *Caller, from, to string) ([]model.AnalyticsCount, error) {
	if err := c.require("getAnalytics"); err != nil {
		return nil, err
	}
	return s.store.Analytics().List(ctx, c.BotID, from, to)
}

// TagValues lists the distinct values of a tag on the bot's users,
// conversations or messages.
func (s *Actions) TagValues(ctx context.Context, c *Caller, kind, key, token string, size int) ([]string, string, error) {
	if err := c.require("listTagValues"); err != nil {
		return nil, "", err
	}
	if kind == "" {
		return nil, "", model.Errorf(model.ErrInvalidQuery, "type: required (user, conversation or message)")
	}
	return s.store.Chat().TagValues(ctx, c.BotID, kind, key, store.Page{Token: token, Size: size})
}

// ConfigureInput is the body of configureIntegration.
type ConfigureInput struct {
	Identifier           *string         `json:"identifier"`
	ScheduleRegisterCall *string         `json:"scheduleRegisterCall"`
	SandboxIdentifiers   json.RawMessage `json:"sandboxIdentifiers"`
}

// ConfigureIntegration is an integration recording on the bot's entry the
// external identifier it is linked to (null clears it). Only an
// integration may call it. scheduleRegisterCall is accepted and not
// acted on (Parley calls register on install and on change).
func (s *Actions) ConfigureIntegration(ctx context.Context, c *Caller, in ConfigureInput) error {
	if c.Kind != KindIntegration {
		return model.Forbidden("configureIntegration is called by an integration, with its own credential and x-integration-id")
	}
	if in.Identifier != nil && len(*in.Identifier) > 1000 {
		return model.Invalid("identifier: at most 1000 characters")
	}
	return s.store.InTx(ctx, func(tx store.Store) error {
		ins, err := tx.Bots().Integrations(ctx, c.BotID)
		if err != nil {
			return err
		}
		for _, e := range ins {
			if e.Name == c.Integration && e.IntegrationID == c.IntegrationID {
				if in.Identifier == nil {
					e.Identifier = ""
				} else {
					e.Identifier = *in.Identifier
				}
				e.UpdatedAt = model.Now()
				return tx.Bots().PutIntegration(ctx, e)
			}
		}
		return notFound("Integration", c.Integration)
	})
}
