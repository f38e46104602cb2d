package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// Driven turns let Go code run a turn step by step inside the sandbox: the
// workflow engine decides what happens (which card runs next), JavaScript
// does what needs JavaScript (expressions, templates, code cards, actions,
// sending messages through the client and the before_outgoing hooks).
//
// The bot code of a driven turn registers message and event handlers that
// call the global function named DriverGlobal in a loop:
//
//	let res
//	for (;;) {
//	  const req = __parleyDrive(res)   // the next request of the Go driver
//	  if (req.op === 'done') break
//	  res = JSON.stringify({ ok: await perform(req) })  // or { error: ... }
//	}
//
// Each request is a JSON value sent by the driver's call function; each
// answer is the JSON string of {ok: value} or {error: {name, message, stack}}.
// The driver runs as a coroutine of the JavaScript handler, so everything
// happens on the turn's goroutine order: one request at a time, within the
// turn's time budget, with the hooks, state, logs and limits of an ordinary
// turn (docs/runtime.md). When the turn ends early (a hook stopped it, bot
// code failed, the budget ran out), the driver's call returns ErrDriveStopped
// and the driver must return.

// DriverGlobal is the name of the global function a driven turn's bot code
// calls to get the driver's next request.
const DriverGlobal = "__parleyDrive"

// ErrDriveStopped is returned by a driver's call when the turn ended before
// the driver did.
var ErrDriveStopped = errors.New("runtime: the driven turn ended")

// ScriptError is a JavaScript exception thrown while performing a request
// and caught by the bot code's driver loop.
type ScriptError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack"`
}

func (e *ScriptError) Error() string {
	if e.Name != "" && e.Name != "Error" {
		return e.Name + ": " + e.Message
	}
	return e.Message
}

// DriveCall sends one request to the JavaScript side and returns the JSON
// of its answer ("null" for undefined). A *ScriptError reports an exception
// the request threw; ErrDriveStopped that the turn is over.
type DriveCall func(req any) (json.RawMessage, error)

// DriveResult tells what became of the driver.
type DriveResult struct {
	// Completed is true when the driver returned while the turn was still
	// running; only then is Err meaningful.
	Completed bool
	// Started is true when the bot code called the driver at all (a
	// before_incoming_message hook may have stopped the turn before).
	Started bool
	Err     error
}

type driven struct {
	next      func() (any, bool)
	stop      func()
	answer    json.RawMessage
	answerErr error
	res       DriveResult
	driveErr  error
	finished  bool
}

// RunDriven runs a turn like RunTurn, with drive as the Go side of the bot
// code's driver loop (see DriverGlobal). It returns the turn's result and
// what became of the driver.
func (e *Engine) RunDriven(ctx context.Context, in TurnInput, drive func(call DriveCall) error) (TurnResult, DriveResult) {
	d := &driven{}
	seq := func(yield func(any) bool) {
		d.driveErr = drive(func(req any) (json.RawMessage, error) {
			if !yield(req) {
				return nil, ErrDriveStopped
			}
			return d.answer, d.answerErr
		})
	}
	d.next, d.stop = iter.Pull(seq)

	prepare := func(inst *instance) {
		_ = inst.vm.Set(DriverGlobal, func(call goja.FunctionCall) goja.Value { return inst.nativeDrive(d, call) })
	}
	// The coroutine is stopped on the turn's goroutine, after the turn: the
	// JavaScript side is the only one that resumes it.
	res, ran := e.run(ctx, in, prepare, d.stop)
	if !ran {
		return res, DriveResult{}
	}
	// The turn is done, after the last nativeDrive call: d.res is settled.
	return res, d.res
}

// nativeDrive is the JavaScript side's entry into the driver: it takes the
// answer to the previous request and returns the next request, or
// {op: "done"} when the driver has finished.
func (in *instance) nativeDrive(d *driven, call goja.FunctionCall) goja.Value {
	if in.t == nil || d.finished {
		return in.toJS(map[string]any{"op": "done"})
	}
	if d.res.Started {
		d.answer, d.answerErr = nil, nil
		s, ok := call.Argument(0).Export().(string)
		var a struct {
			OK    json.RawMessage `json:"ok"`
			Error *ScriptError    `json:"error"`
		}
		if !ok || json.Unmarshal([]byte(s), &a) != nil {
			d.answerErr = &ScriptError{Name: "TypeError", Message: "the driver loop answered with something that is not JSON"}
		} else if a.Error != nil {
			d.answerErr = a.Error
		} else {
			d.answer = a.OK
			if len(d.answer) == 0 {
				d.answer = json.RawMessage("null")
			}
		}
	}
	d.res.Started = true
	req, ok := d.next()
	if !ok {
		d.finished = true
		d.res.Completed = true
		d.res.Err = d.driveErr
		return in.toJS(map[string]any{"op": "done"})
	}
	// A request made of JSON's own values (the workflow engine's are)
	// becomes JavaScript values directly: through its JSON text, goja's
	// JSON.parse (a token decoder) and the Marshal took a sixth of a
	// workflow echo turn (BenchmarkEchoTurn).
	if plainJSON(req, 0) {
		return in.toJS(req)
	}
	raw, err := json.Marshal(req)
	if err != nil {
		panic(fmt.Errorf("runtime: driver request: %w", err))
	}
	return in.toJS(json.RawMessage(raw))
}

// plainJSON tells a value that toJS turns into what JSON.parse would make
// of its JSON (json.Marshal's): maps with string keys, slices, strings,
// finite numbers, booleans and null, nested at most maxPlainDepth deep.
// Anything else (another Go type, a string that is not UTF-8, which
// json.Marshal would mend, a NaN it would refuse) goes through JSON.
func plainJSON(v any, depth int) bool {
	if depth > maxPlainDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, int, int64:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !plainJSON(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// maxPlainDepth bounds plainJSON's walk (and toJS's recursion after it).
const maxPlainDepth = 64
