package workflow

import (
	"context"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
)

// TimeoutEventType is the event type of the turn package turns queues when
// a dialog has been inactive for its timeout.
const TimeoutEventType = "workflow:timeout"

// ScheduleEventType is the event type of a schedule trigger's turn.
const ScheduleEventType = "workflow:schedule"

// InputFor derives the engine's input from the turn's event.
func InputFor(ev runtime.Event, now time.Time) Input {
	in := Input{Text: ev.Preview, Now: now, HasConversation: ev.ConversationID != ""}
	switch {
	case ev.MessageID != "":
		in.Kind = InputMessage
		if v, ok := ev.Payload["value"].(string); ok {
			in.Value = v
		}
	case ev.Type == TimeoutEventType:
		in.Kind = InputTimeout
	case ev.Type == ScheduleEventType:
		in.Kind = InputSchedule
	case ev.Type == model.WebhookEventType:
		in.Kind = InputWebhook
		in.WebhookPath, _ = ev.Payload["path"].(string)
	default:
		in.Kind = InputEvent
		if n, ok := ev.Payload["name"].(string); ok && n != "" {
			in.EventName = n
		} else if n, ok := ev.Payload["type"].(string); ok {
			in.EventName = n
		}
	}
	return in
}

// TurnResult is a workflow turn's result: the runtime's (states, logs, a
// Problem) and the engine's.
type TurnResult struct {
	runtime.TurnResult
	// Outcome is nil when the engine did not finish: a before_incoming
	// hook stopped the turn, or the turn failed (see Problem and Err). The
	// dialog must then be left as it was.
	Outcome *Outcome
	Trigger *Trigger
	// EventTrigger is event.trigger as the turn saw it.
	EventTrigger *runtime.Trigger
}

// RunTurn runs one turn of a workflow bot: it routes the event to a
// trigger (filling event.trigger), then runs the engine inside a driven
// runtime turn. in.Code is replaced by the bot's generated code; d is the
// stored dialog (nil for none). A schedule turn passes its trigger as trig;
// other turns pass nil and are routed here. kb answers queryKnowledgeBase
// cards (nil: they find nothing).
func RunTurn(ctx context.Context, e *runtime.Engine, b *Bot, in runtime.TurnInput, d *Dialog, trig *Trigger, now time.Time, kb Knowledge) TurnResult {
	input := InputFor(in.Event, now)
	input.Knowledge = kb
	if trig == nil {
		trig = b.Route(d, input)
	}
	if trig != nil {
		t := &runtime.Trigger{FlowID: trig.Workflow, NodeID: trig.Node, ConversationID: in.Event.ConversationID,
			Integration: in.Event.Integration, UserID: in.Event.UserID}
		if trig.Type == TriggerEvent {
			t.EventName = trig.EventName
		}
		in.Event.Trigger = t
	}
	in.Code = b.Code()
	var out *Outcome
	res, dr := e.RunDriven(ctx, in, func(call runtime.DriveCall) error {
		var err error
		out, err = b.Run(call, d, input, trig)
		return err
	})
	r := TurnResult{TurnResult: res, Trigger: trig, EventTrigger: in.Event.Trigger}
	if dr.Completed && dr.Err == nil && res.Problem == nil && res.Err == nil {
		r.Outcome = out
	}
	return r
}
