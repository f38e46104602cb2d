package runtimeapi

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// States are named JSON documents attached to a user, conversation, the
// bot, an integration, a workflow or a task. A state with an expiry is
// gone once it expires (reads answer 404 at once); the Scheduler deletes
// it and gives the bot a `state_expired` event.
type States struct{ deps }

// StateKey names a state: its type, the id of what it is attached to, and
// its name.
type StateKey struct {
	Type, ID, Name string
}

// StateInput is the body of setState, getOrSetState and patchState.
// Expiry is in milliseconds; null or absent means none.
type StateInput struct {
	Payload json.RawMessage `json:"payload"`
	Expiry  *int64          `json:"expiry"`
}

// MaxStatePayload bounds a state's payload (the request's 1 MB limit also
// applies).
const MaxStatePayload = 512 << 10

// check validates the key and that its owner exists.
func (s *States) check(ctx context.Context, c *Caller, k StateKey) error {
	if !slices.Contains(model.StateTypes, k.Type) {
		return model.Invalid("type: must be one of %v", model.StateTypes)
	}
	if k.Name == "" || k.ID == "" {
		return model.Invalid("id and name: required")
	}
	var err error
	switch k.Type {
	case "user":
		_, err = s.store.Chat().GetUser(ctx, c.BotID, k.ID)
		err = orNotFound(err, "User", k.ID)
	case "conversation":
		_, err = s.store.Chat().GetConversation(ctx, c.BotID, k.ID)
		err = orNotFound(err, "Conversation", k.ID)
	case "bot":
		if k.ID != c.BotID {
			err = notFound("Bot", k.ID)
		}
	case "workflow":
		_, err = s.store.Workflows().Get(ctx, c.BotID, k.ID)
		err = orNotFound(err, "Workflow", k.ID)
	case "task":
		_, err = s.store.Tasks().Get(ctx, c.BotID, k.ID)
		err = orNotFound(err, "Task", k.ID)
	}
	return err
}

func expiryOf(exp *int64, now time.Time) (int64, time.Time, error) {
	if exp == nil || *exp == 0 {
		return 0, time.Time{}, nil
	}
	if *exp < 0 {
		return 0, time.Time{}, model.Invalid("expiry: must not be negative")
	}
	return *exp, now.Add(time.Duration(*exp) * time.Millisecond), nil
}

func statePayload(raw json.RawMessage) (json.RawMessage, error) {
	p, err := requireObject("payload", raw, true)
	if err != nil {
		return nil, err
	}
	if len(p) > MaxStatePayload {
		return nil, model.Errorf(model.ErrPayloadTooLarge, "payload: a state holds at most %d bytes", MaxStatePayload)
	}
	return p, nil
}

// live returns the stored state unless it is missing or expired.
func (s *States) live(ctx context.Context, c *Caller, k StateKey) (*model.State, error) {
	st, err := s.store.RuntimeStates().Get(ctx, c.BotID, k.Type, k.ID, k.Name)
	if err != nil {
		return nil, orNotFound(err, "State", k.Name)
	}
	if !st.ExpiresAt.IsZero() && !st.ExpiresAt.After(model.Now()) {
		return nil, notFound("State", k.Name)
	}
	return st, nil
}

// Get returns a state.
func (s *States) Get(ctx context.Context, c *Caller, k StateKey) (*model.State, error) {
	if err := c.require("getState"); err != nil {
		return nil, err
	}
	if err := s.check(ctx, c, k); err != nil {
		return nil, err
	}
	return s.live(ctx, c, k)
}

// Set creates or replaces a state; a null payload deletes it (and returns
// nil).
func (s *States) Set(ctx context.Context, c *Caller, k StateKey, in StateInput) (*model.State, error) {
	if err := c.require("setState"); err != nil {
		return nil, err
	}
	if err := s.check(ctx, c, k); err != nil {
		return nil, err
	}
	if len(in.Payload) == 0 || string(in.Payload) == "null" {
		err := s.store.RuntimeStates().Delete(ctx, c.BotID, k.Type, k.ID, k.Name)
		if err != nil && !model.IsNotFound(err) {
			return nil, err
		}
		return nil, nil
	}
	return s.put(ctx, c, k, in.Payload, in.Expiry)
}

func (s *States) put(ctx context.Context, c *Caller, k StateKey, raw json.RawMessage, exp *int64) (*model.State, error) {
	payload, err := statePayload(raw)
	if err != nil {
		return nil, err
	}
	now := model.Now()
	expiry, expiresAt, err := expiryOf(exp, now)
	if err != nil {
		return nil, err
	}
	st := &model.State{BotID: c.BotID, ID: model.NewID(), Type: k.Type, OwnerID: k.ID, Name: k.Name, Payload: payload,
		Expiry: expiry, ExpiresAt: expiresAt, CreatedAt: now, UpdatedAt: now}
	if err := s.store.RuntimeStates().Put(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// GetOrSet returns the state, setting it to in when there is none.
func (s *States) GetOrSet(ctx context.Context, c *Caller, k StateKey, in StateInput) (*model.State, error) {
	if err := c.require("getOrSetState"); err != nil {
		return nil, err
	}
	if err := s.check(ctx, c, k); err != nil {
		return nil, err
	}
	st, err := s.live(ctx, c, k)
	if err == nil || !model.IsNotFound(err) {
		return st, err
	}
	return s.put(ctx, c, k, in.Payload, in.Expiry)
}

// Patch merges in's payload into the state's (top-level keys; a null value
// removes the key).
func (s *States) Patch(ctx context.Context, c *Caller, k StateKey, in StateInput) (*model.State, error) {
	if err := c.require("patchState"); err != nil {
		return nil, err
	}
	if err := s.check(ctx, c, k); err != nil {
		return nil, err
	}
	patch, err := statePayload(in.Payload)
	if err != nil {
		return nil, err
	}
	var st *model.State
	err = s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if st, err = (&States{deps{store: tx}}).live(ctx, c, k); err != nil {
			return err
		}
		var cur, add map[string]json.RawMessage
		_ = json.Unmarshal(st.Payload, &cur)
		_ = json.Unmarshal(patch, &add)
		if cur == nil {
			cur = map[string]json.RawMessage{}
		}
		for key, v := range add {
			if string(v) == "null" {
				delete(cur, key)
			} else {
				cur[key] = v
			}
		}
		merged, _ := json.Marshal(cur)
		if st.Payload, err = statePayload(merged); err != nil {
			return err
		}
		st.UpdatedAt = model.Now()
		if in.Expiry != nil {
			if st.Expiry, st.ExpiresAt, err = expiryOf(in.Expiry, st.UpdatedAt); err != nil {
				return err
			}
		}
		return tx.RuntimeStates().Put(ctx, st)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// SetExpiry changes when a state expires (null: never).
func (s *States) SetExpiry(ctx context.Context, c *Caller, k StateKey, expiry *int64) (*model.State, error) {
	if err := c.require("setStateExpiry"); err != nil {
		return nil, err
	}
	if err := s.check(ctx, c, k); err != nil {
		return nil, err
	}
	var st *model.State
	err := s.store.InTx(ctx, func(tx store.Store) error {
		var err error
		if st, err = (&States{deps{store: tx}}).live(ctx, c, k); err != nil {
			return err
		}
		st.UpdatedAt = model.Now()
		if st.Expiry, st.ExpiresAt, err = expiryOf(expiry, st.UpdatedAt); err != nil {
			return err
		}
		return tx.RuntimeStates().Put(ctx, st)
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// expire deletes the states expired at now and stores a state_expired
// event for each ({state} as payload); a conversation's state gives the
// bot a turn in that conversation.
func (s *States) expire(ctx context.Context, now time.Time) (int, error) {
	expired, err := s.store.RuntimeStates().Expired(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, st := range expired {
		payload, _ := json.Marshal(map[string]any{"state": wire.NewState(st)})
		e := &model.Event{BotID: st.BotID, ID: model.NewID(), Type: model.StateExpiredEvent, Payload: payload,
			Status: model.EventProcessed, CreatedAt: model.Now()}
		switch st.Type {
		case "conversation":
			e.ConversationID = st.OwnerID
		case "user":
			e.UserID = st.OwnerID
		}
		w := &store.Write{Apply: func(ctx context.Context, tx store.Store) error {
			if err := tx.RuntimeStates().DeleteExpired(ctx, st.BotID, st.Type, st.OwnerID, st.Name, now); err != nil {
				return err
			}
			return tx.Chat().CreateEvent(ctx, e)
		}}
		if e.ConversationID != "" {
			w.Turn = eventTurn(e)
		}
		err := s.commit.Commit(ctx, w)
		if model.IsNotFound(err) {
			continue // renewed, deleted or expired by another node
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
