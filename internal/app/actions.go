package app

import (
	"context"
	"encoding/json"

	"github.com/parley-bots/parley/internal/integrations"
	"github.com/parley-bots/parley/internal/runtimeapi"
)

// actionRouter is the Runtime API's callAction: '<alias>:<action>' of an
// integration the bot installed runs in the integration, any other action
// is the bot's own (SDK bots).
type actionRouter struct {
	integrations *integrations.Actions
	bots         runtimeapi.ActionCaller
}

func (r actionRouter) CallAction(ctx context.Context, botID, typ string, input json.RawMessage) (json.RawMessage, error) {
	out, handled, err := r.integrations.CallAction(ctx, botID, typ, input)
	if handled {
		return out, err
	}
	return r.bots.CallAction(ctx, botID, typ, input)
}
