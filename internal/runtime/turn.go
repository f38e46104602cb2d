package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/parley-bots/parley/internal/model"
)

// A turn's run in an instance: its state, its result from the prelude, its
// failures and logs.

// turn is the state of one RunTurn.
type turn struct {
	e      *Engine
	in     *TurnInput
	res    *TurnResult
	inst   *instance
	parent context.Context // the caller's
	ctx    context.Context // the caller's, bounded by the time budget

	input  TurnInput // storage of in and res for Engine.run
	result TurnResult

	started   time.Time // for the watchdog
	killed    bool      // set by the watchdog, under its lock
	abandoned atomic.Bool
	aborted   *interruption
	rejected  []*goja.Promise
	dropped   int // log lines over the limit
	hostCalls int
	problems  int

	// Set by the prelude's last step (nativeResult): whether a hook stopped
	// the turn and the states' JSON (savedOK false when not a plain object).
	finished bool
	stopped  bool
	saved    [3]string
	savedOK  [3]bool
}

// run executes the turn in t.inst and reports whether the runtime may be
// reused.
func (t *turn) run() bool {
	in := t.inst
	vm := in.vm
	in.t = t
	ev := &t.in.Event

	// One call into the runtime: every value is built by the prelude or
	// copied in fresh, and goja drops its value stack after each top-level
	// call.
	var args [23]goja.Value
	args[0] = vm.ToValue(ev.MessageID != "")
	for i, raw := range [3]json.RawMessage{t.in.States.User, t.in.States.Conversation, t.in.States.Bot} {
		args[1+i] = goja.Undefined()
		if len(raw) > 0 {
			args[1+i] = vm.ToValue(string(raw))
		}
	}
	args[4] = in.toJSOrUndefined(t.in.Message)
	args[5] = in.toJSOrUndefined(t.in.User)
	args[6] = in.toJSOrUndefined(t.in.Conversation)
	in.eventArgs((*[16]goja.Value)(args[7:]), ev)
	ret, err := in.dispatchTurn(goja.Undefined(), args[:]...)
	defer t.flushDropped()
	if err != nil {
		t.failErr(err)
		return false
	}
	// The prelude returns undefined when the turn finished synchronously,
	// or the promise of its async continuation.
	if o, ok := ret.(*goja.Object); ok {
		p, _ := o.Export().(*goja.Promise)
		if p == nil {
			t.fail(&Problem{Code: ProblemInternal, Title: "Internal error", Description: "turn returned an unexpected value"})
			return false
		}
		switch p.State() {
		case goja.PromiseStateRejected:
			t.fail(&Problem{Code: ProblemUncaught, Title: "Uncaught error in bot code", Description: in.describe(p.Result(), nil)})
			return false
		case goja.PromiseStatePending:
			t.fail(&Problem{Code: ProblemPending, Title: "A handler never finished",
				Description: "a handler awaited a promise that nothing can settle (there are no timers or I/O in bot code)"})
			return false
		}
	}
	if len(t.rejected) > 0 {
		t.fail(&Problem{Code: ProblemRejection, Title: "Unhandled promise rejection", Description: in.describe(t.rejected[0].Result(), nil)})
		return false
	}
	if !t.finished {
		t.fail(&Problem{Code: ProblemInternal, Title: "Internal error", Description: "the turn ended without a result"})
		return false
	}
	t.res.Stopped = t.stopped
	return t.collectStates()
}

// nativeResult receives the outcome of the turn from the prelude: whether
// it was stopped and the JSON of the three states (null when not a plain
// object).
func (in *instance) nativeResult(call goja.FunctionCall) goja.Value {
	t := in.t
	if t == nil || t.finished {
		return goja.Undefined()
	}
	t.finished = true
	t.stopped = call.Argument(0).ToBoolean()
	if len(call.Arguments) == 2 {
		// The JSON array of the three states.
		parts, ok := splitArray3(call.Argument(1).String())
		if !ok {
			panic(in.vm.NewGoError(errors.New("runtime: malformed state array")))
		}
		for i := range parts {
			t.saved[i], t.savedOK[i] = parts[i], true
		}
		return goja.Undefined()
	}
	for i := range t.saved {
		if v := call.Argument(1 + i); !goja.IsNull(v) && !goja.IsUndefined(v) {
			t.saved[i], t.savedOK[i] = v.String(), true
		}
	}
	return goja.Undefined()
}

// splitArray3 splits the compact JSON of an array of three values (as
// JSON.stringify writes it) into the JSON of each value.
func splitArray3(s string) (parts [3]string, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return parts, false
	}
	depth, n, start, inStr := 0, 0, 1, false
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				if n == 2 {
					return parts, false
				}
				parts[n] = s[start:i]
				n++
				start = i + 1
			}
		}
	}
	if n != 2 || depth != 0 || inStr {
		return parts, false
	}
	parts[2] = s[start : len(s)-1]
	return parts, true
}

var stateNames = [3]string{"user", "conversation", "bot"}

// collectStates checks the states' JSON (serialized by the prelude; nil
// when not a plain object) and keeps those that changed.
func (t *turn) collectStates() bool {
	raws := [3]json.RawMessage{t.in.States.User, t.in.States.Conversation, t.in.States.Bot}
	var out [3]json.RawMessage
	for i, name := range stateNames {
		if !t.savedOK[i] {
			t.fail(&Problem{Code: ProblemInvalidState, Title: "Invalid state", Description: "state." + name + " must be a plain object"})
			return true
		}
		s := t.saved[i]
		if len(s) > t.e.opts.MaxStateBytes {
			t.fail(&Problem{Code: ProblemStateTooLarge, Title: "State too large",
				Description: fmt.Sprintf("state.%s is %d bytes of JSON; the limit is %d", name, len(s), t.e.opts.MaxStateBytes)})
			return true
		}
		if !sameJSON(raws[i], s) {
			out[i] = json.RawMessage(s)
		}
	}
	t.res.States = States{User: out[0], Conversation: out[1], Bot: out[2]}
	return true
}

// sameJSON reports whether stored state old serializes to s. A stored
// value written by us is already compact; anything else is compacted.
func sameJSON(old json.RawMessage, s string) bool {
	if len(old) == 0 || string(old) == "null" {
		return s == "{}"
	}
	if string(old) == s {
		return true
	}
	var b bytes.Buffer
	if json.Compact(&b, old) != nil {
		return false
	}
	return b.String() == s
}

// fail ends the turn with a bot problem, logged as an error line.
func (t *turn) fail(p *Problem) {
	if t.res.Problem != nil {
		return
	}
	t.res.Problem = p
	t.res.States = States{}
	t.problems++
	msg := p.Title
	if p.Description != "" {
		msg += ": " + p.Description
	}
	t.addLog("error", t.e.truncate(msg))
}

// failErr classifies an error returned by a call into the runtime.
func (t *turn) failErr(err error) {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		ir, _ := ie.Value().(*interruption)
		if t.aborted != nil {
			ir = t.aborted
		}
		switch {
		case ir == nil:
			t.fail(&Problem{Code: ProblemInternal, Title: "Internal error", Description: ie.Error()})
		case ir.err != nil:
			t.res.Err = ir.err
			t.res.States = States{}
		case ir == errDeadline:
			budget := t.e.budget(t.in.Timeout)
			t.fail(&Problem{Code: ProblemTimeout, Title: ir.problem.Title,
				Description: fmt.Sprintf("the turn ran longer than its budget of %s and was stopped%s", budget, where(ie.Stack()))})
		default:
			p := *ir.problem
			if ir.where {
				p.Description += where(ie.Stack())
			}
			t.fail(&p)
		}
		return
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		t.fail(&Problem{Code: ProblemUncaught, Title: "Uncaught error in bot code",
			Description: fmt.Sprintf("RangeError: Maximum call stack size (%d) exceeded%s", t.e.opts.MaxCallStackSize, where(so.Stack()))})
		return
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		t.fail(&Problem{Code: ProblemUncaught, Title: "Uncaught error in bot code", Description: t.inst.describe(ex.Value(), ex.Stack())})
		return
	}
	t.fail(&Problem{Code: ProblemUncaught, Title: "Uncaught error in bot code", Description: err.Error()})
}

func where(stack []goja.StackFrame) string {
	for _, f := range stack {
		if f.SrcName() == botSource {
			p := f.Position()
			return fmt.Sprintf(" at line %d column %d", p.Line, p.Column)
		}
	}
	return ""
}

// describe renders a thrown value: its stack when it is an Error, else
// the value followed by the bot's frames of where it was thrown (frames,
// nil when unknown). Either way only frames of the bot's code are shown
// (cleanStack).
func (in *instance) describe(v goja.Value, frames []goja.StackFrame) string {
	if o, ok := v.(*goja.Object); ok {
		if s := o.Get("stack"); s != nil && !goja.IsUndefined(s) {
			return in.e.truncate(cleanStack(s.String()))
		}
	}
	if v == nil {
		return "undefined" + botFrames(frames)
	}
	return in.e.truncate(v.String() + botFrames(frames))
}

func (e *Engine) truncate(s string) string {
	max := e.opts.MaxLogLineBytes
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (t *turn) addLog(level, msg string) {
	ev := &t.in.Event
	t.res.Logs = append(t.res.Logs, model.LogEntry{
		BotID: t.in.BotID, Time: time.Now().UTC(), Level: level, Message: msg,
		ConversationID: ev.ConversationID, UserID: ev.UserID, EventID: ev.ID,
	})
}

func (t *turn) flushDropped() {
	if t.dropped > 0 {
		t.addLog("warn", fmt.Sprintf("%d log lines dropped: at most %d are kept per turn", t.dropped, t.e.opts.MaxLogLines))
	}
}
