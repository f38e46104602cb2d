package runtimeapi

import (
	"context"
	"encoding/json"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/wire"
)

// Invoke runs a Runtime API operation for a bot's own code (the sandbox's
// `client`): the input is the operation's input as the client takes it
// (path parameters included), the output its response body. The bot acts
// with every right on its own data. Operations not listed here are not
// offered in a turn.
func (api *API) Invoke(ctx context.Context, botID, op string, input json.RawMessage) (json.RawMessage, error) {
	fn, ok := invokers[op]
	if !ok {
		return nil, model.Errorf(model.ErrMethodNotFound, "client.%s is not available in bot code", op)
	}
	out, err := fn(ctx, api, BotCaller(botID), input)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// in decodes an operation's input.
func in[T any](input json.RawMessage) (T, error) {
	var v T
	if len(input) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(input, &v); err != nil {
		return v, model.Invalid("invalid input: %v", err)
	}
	return v, nil
}

type stateArgs struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
	Expiry  *int64          `json:"expiry"`
}

func (a stateArgs) key() StateKey { return StateKey{Type: a.Type, ID: a.ID, Name: a.Name} }

func stateOut(st *model.State, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return map[string]any{"state": wire.NewState(st), "meta": map[string]bool{"cached": false}}, nil
}

type listArgs struct {
	NextToken      string            `json:"nextToken"`
	PageSize       int               `json:"pageSize"`
	ID             string            `json:"id"`
	ConversationID string            `json:"conversationId"`
	UserID         string            `json:"userId"`
	Tags           map[string]string `json:"tags"`
	Type           string            `json:"type"`
	ParticipantIDs []string          `json:"participantIds"`
}

func metaOf(next string) map[string]any {
	m := map[string]any{}
	if next != "" {
		m["nextToken"] = next
	}
	return m
}

func (api *API) runtimeConversation(ctx context.Context, c *Caller, conv *model.Conversation) (wire.RuntimeConversation, error) {
	n, err := api.Conversations.MessageCount(ctx, c, conv.ID)
	return wire.NewRuntimeConversation(conv, n), err
}

var invokers = map[string]func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error){
	"searchFiles": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		if api.files == nil {
			return nil, model.Errorf(model.ErrMethodNotFound, "client.searchFiles is not available: no Files API")
		}
		return api.files.SearchForBot(ctx, c.BotID, input)
	},
	"getState": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[stateArgs](input)
		if err != nil {
			return nil, err
		}
		return stateOut(api.States.Get(ctx, c, a.key()))
	},
	"setState": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[stateArgs](input)
		if err != nil {
			return nil, err
		}
		st, err := api.States.Set(ctx, c, a.key(), StateInput{Payload: a.Payload, Expiry: a.Expiry})
		if err == nil && st == nil {
			return map[string]any{"state": nil}, nil
		}
		return stateOut(st, err)
	},
	"getOrSetState": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[stateArgs](input)
		if err != nil {
			return nil, err
		}
		return stateOut(api.States.GetOrSet(ctx, c, a.key(), StateInput{Payload: a.Payload, Expiry: a.Expiry}))
	},
	"patchState": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[stateArgs](input)
		if err != nil {
			return nil, err
		}
		return stateOut(api.States.Patch(ctx, c, a.key(), StateInput{Payload: a.Payload, Expiry: a.Expiry}))
	},
	"setStateExpiry": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[stateArgs](input)
		if err != nil {
			return nil, err
		}
		return stateOut(api.States.SetExpiry(ctx, c, a.key(), a.Expiry))
	},
	"updateUser": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[struct {
			ID string `json:"id"`
			UserUpdate
		}](input)
		if err != nil {
			return nil, err
		}
		u, err := api.Users.Update(ctx, c, a.ID, a.UserUpdate)
		if err != nil {
			return nil, err
		}
		return map[string]any{"user": wire.NewRuntimeUser(u)}, nil
	},
	"updateConversation": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[struct {
			ID string `json:"id"`
			ConversationUpdate
		}](input)
		if err != nil {
			return nil, err
		}
		conv, err := api.Conversations.Update(ctx, c, a.ID, a.ConversationUpdate)
		if err != nil {
			return nil, err
		}
		v, err := api.runtimeConversation(ctx, c, conv)
		return map[string]any{"conversation": v}, err
	},
	"updateMessage": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[struct {
			ID string `json:"id"`
			MessageUpdate
		}](input)
		if err != nil {
			return nil, err
		}
		m, err := api.Messages.Update(ctx, c, a.ID, a.MessageUpdate)
		if err != nil {
			return nil, err
		}
		return map[string]any{"message": wire.NewRuntimeMessage(m)}, nil
	},
	"getOrCreateUser": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[UserInput](input)
		if err != nil {
			return nil, err
		}
		u, created, err := api.Users.GetOrCreate(ctx, c, a)
		if err != nil {
			return nil, err
		}
		return map[string]any{"user": wire.NewRuntimeUser(u), "meta": map[string]bool{"created": created}}, nil
	},
	"getOrCreateConversation": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[ConversationInput](input)
		if err != nil {
			return nil, err
		}
		conv, created, err := api.Conversations.GetOrCreate(ctx, c, a)
		if err != nil {
			return nil, err
		}
		v, err := api.runtimeConversation(ctx, c, conv)
		return map[string]any{"conversation": v, "meta": map[string]bool{"created": created}}, err
	},
	"listUsers": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[listArgs](input)
		if err != nil {
			return nil, err
		}
		us, next, err := api.Users.List(ctx, c, ListUsersQuery{NextToken: a.NextToken, PageSize: a.PageSize,
			ConversationID: a.ConversationID, Tags: a.Tags})
		if err != nil {
			return nil, err
		}
		out := make([]wire.RuntimeUser, len(us))
		for i, u := range us {
			out[i] = wire.NewRuntimeUser(u)
		}
		return map[string]any{"users": out, "meta": metaOf(next)}, nil
	},
	"listConversations": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[listArgs](input)
		if err != nil {
			return nil, err
		}
		convs, next, err := api.Conversations.List(ctx, c, ListConversationsQuery{NextToken: a.NextToken, PageSize: a.PageSize,
			Tags: a.Tags, ParticipantIDs: a.ParticipantIDs})
		if err != nil {
			return nil, err
		}
		out := make([]wire.RuntimeConversation, len(convs))
		for i, conv := range convs {
			if out[i], err = api.runtimeConversation(ctx, c, conv); err != nil {
				return nil, err
			}
		}
		return map[string]any{"conversations": out, "meta": metaOf(next)}, nil
	},
	"listParticipants": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[listArgs](input)
		if err != nil {
			return nil, err
		}
		us, next, err := api.Conversations.ListParticipants(ctx, c, a.ID, a.NextToken, a.PageSize)
		if err != nil {
			return nil, err
		}
		out := make([]wire.RuntimeUser, len(us))
		for i, u := range us {
			out[i] = wire.NewRuntimeUser(u)
		}
		return map[string]any{"participants": out, "meta": metaOf(next)}, nil
	},
	"listEvents": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[listArgs](input)
		if err != nil {
			return nil, err
		}
		es, next, err := api.Events.List(ctx, c, ListEventsQuery{NextToken: a.NextToken, PageSize: a.PageSize,
			EventFilter: store.EventFilter{Type: a.Type, ConversationID: a.ConversationID, UserID: a.UserID}})
		if err != nil {
			return nil, err
		}
		out := make([]wire.RuntimeEvent, len(es))
		for i, e := range es {
			out[i] = wire.NewRuntimeEvent(e)
		}
		return map[string]any{"events": out, "meta": metaOf(next)}, nil
	},
	"getEvent": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[listArgs](input)
		if err != nil {
			return nil, err
		}
		e, err := api.Events.Get(ctx, c, a.ID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"event": wire.NewRuntimeEvent(e)}, nil
	},
	"callAction": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[ActionInput](input)
		if err != nil {
			return nil, err
		}
		out, err := api.Actions.Call(ctx, c, a)
		if err != nil {
			return nil, err
		}
		return map[string]any{"output": out}, nil
	},
	"trackAnalytics": func(ctx context.Context, api *API, c *Caller, input json.RawMessage) (any, error) {
		a, err := in[AnalyticsInput](input)
		if err != nil {
			return nil, err
		}
		return struct{}{}, api.Actions.Track(ctx, c, a)
	},
}
