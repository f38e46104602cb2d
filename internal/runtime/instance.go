package runtime

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/parley-bots/parley/internal/model"
)

//go:embed prelude.js
var preludeSource string

// preludeProgram is compiled once; a *goja.Program is safe to run in many
// runtimes.
var preludeProgram = goja.MustCompile("prelude.js", preludeSource, true)

// instance is one goja runtime with a bot version's code evaluated in it.
// It is used by one turn at a time.
type instance struct {
	e  *Engine
	vm *goja.Runtime
	// dispatchTurn is the prelude's dispatchTurn (prelude.js): it builds
	// the event object and runs the hooks and the bot's handlers for one
	// turn. turn.run calls it.
	dispatchTurn goja.Callable
	makeEvent    goja.Callable
	stringify    goja.Callable
	parse        goja.Callable
	errCtor      *goja.Object // captured before bot code could replace them
	typeErr      *goja.Object
	rangeErr     *goja.Object

	origStringify goja.Callable // goja's JSON.stringify
	jsonReplacer  goja.Value    // nativeJSONReplacer as a JS function
	json          []*jsonFrame  // the running bounded JSON.stringify calls
	joining       []*goja.Object
	t             *turn // the running turn; nil when idle
	strs          [4]cachedStr
	strNext       int
}

var errInit = &interruption{problem: &Problem{Code: ProblemTimeout}}

// Limits of the built-in guards in prelude.js (see docs/runtime.md).
const (
	maxJSONDepth = 1000  // JSON.stringify nesting
	maxApplyArgs = 65536 // arguments spread by apply/Reflect.apply/construct
	// shallowBudget bounds the property reads of nativeShallow. Below
	// maxJSONDepth, so a value it accepts cannot be nested too deep.
	shallowBudget = 512
)

var _ = [maxJSONDepth - shallowBudget - 1]struct{}{} // shallowBudget < maxJSONDepth

// newInstance creates a runtime, installs the API and evaluates the code's
// top level within the init budget. Errors are 400s with line and column.
func (e *Engine) newInstance(p *program) (*instance, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(e.opts.MaxCallStackSize)
	in := &instance{e: e, vm: vm}
	jsonObj := vm.Get("JSON").ToObject(vm)
	in.origStringify, _ = goja.AssertFunction(jsonObj.Get("stringify"))
	in.parse, _ = goja.AssertFunction(jsonObj.Get("parse"))
	in.errCtor = vm.Get("Error").ToObject(vm)
	in.typeErr = vm.Get("TypeError").ToObject(vm)
	in.rangeErr = vm.Get("RangeError").ToObject(vm)
	in.jsonReplacer = vm.ToValue(in.nativeJSONReplacer)

	natives := vm.NewObject()
	for name, f := range map[string]func(goja.FunctionCall) goja.Value{
		"log":             in.nativeLog,
		"refresh":         in.nativeRefresh,
		"result":          in.nativeResult,
		"shallow":         in.nativeShallow,
		"outgoingEvent":   in.nativeOutgoingEvent,
		"createMessage":   in.nativeCreateMessage,
		"createEvent":     in.nativeCreateEvent,
		"getMessage":      in.nativeGet("client.getMessage", Host.GetMessage),
		"getUser":         in.nativeGet("client.getUser", Host.GetUser),
		"getConversation": in.nativeGet("client.getConversation", Host.GetConversation),
		"listMessages":    in.nativeListMessages,
		"call":            in.nativeCall,
		"stringify":       in.nativeStringify,
		"join":            in.nativeJoin,
		"tooBig":          in.nativeTooBig,
		"isBoxedString":   in.nativeIsBoxedString,
		"regexpTimeout":   in.nativeRegexpTimeout,
	} {
		_ = natives.Set(name, f)
	}
	limits := vm.NewObject()
	_ = limits.Set("maxStringLength", e.opts.MaxStringLength)
	_ = limits.Set("maxArrayLength", e.opts.MaxArrayLength)
	_ = limits.Set("regexpMs", RegexpTimeout.Milliseconds())
	_ = limits.Set("maxDepth", maxJSONDepth)
	_ = limits.Set("maxArgs", maxApplyArgs)

	pv, err := vm.RunProgram(preludeProgram)
	if err != nil {
		return nil, fmt.Errorf("runtime: prelude: %w", err)
	}
	preludeFn, _ := goja.AssertFunction(pv)
	ops := make([]any, len(ClientOperations))
	for i, op := range ClientOperations {
		ops[i] = op
	}
	apiV, err := preludeFn(goja.Undefined(), natives, limits, vm.NewArray(ops...))
	if err != nil {
		return nil, fmt.Errorf("runtime: prelude: %w", err)
	}
	api := apiV.ToObject(vm)
	_ = vm.Set("bot", api.Get("bot"))
	_ = vm.Set("console", api.Get("console"))
	in.dispatchTurn, _ = goja.AssertFunction(api.Get("dispatchTurn"))
	in.makeEvent, _ = goja.AssertFunction(api.Get("makeEvent"))
	in.stringify, _ = goja.AssertFunction(api.Get("stringify"))
	lock, _ := goja.AssertFunction(api.Get("lock"))

	timer := time.AfterFunc(e.opts.InitTimeout, func() { vm.Interrupt(errInit) })
	_, err = vm.RunProgram(p.prog)
	if !timer.Stop() {
		return nil, codeError(fmt.Sprintf("the top level did not finish within %s", e.opts.InitTimeout), 0, 0)
	}
	if err != nil {
		return nil, topLevelError(err)
	}
	if _, err := lock(goja.Undefined()); err != nil {
		return nil, fmt.Errorf("runtime: lock: %w", err)
	}
	vm.SetPromiseRejectionTracker(in.trackRejection)
	return in, nil
}

// topLevelError reports an exception of the code's top level as a 400 with
// the position of the innermost frame in the bot's code.
func topLevelError(err error) error {
	var ex *goja.Exception
	if !errors.As(err, &ex) {
		return codeError(err.Error(), 0, 0)
	}
	msg := ex.Value().String()
	for _, f := range ex.Stack() {
		if f.SrcName() == botSource {
			pos := f.Position()
			return codeError(msg, pos.Line, pos.Column)
		}
	}
	return codeError(msg, 0, 0)
}

func (in *instance) trackRejection(p *goja.Promise, op goja.PromiseRejectionOperation) {
	t := in.t
	if t == nil {
		return
	}
	if op == goja.PromiseRejectionReject {
		t.rejected = append(t.rejected, p)
	} else if i := slices.Index(t.rejected, p); i >= 0 {
		t.rejected = slices.Delete(t.rejected, i, i+1)
	}
}

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

// abort ends the turn from inside a native function: the interrupt cannot
// be caught by bot code.
func (in *instance) abort(ir *interruption) goja.Value {
	in.t.aborted = ir
	in.vm.Interrupt(ir)
	return goja.Undefined()
}

func (in *instance) throwType(format string, args ...any) {
	o, _ := in.vm.New(in.typeErr, in.vm.ToValue(fmt.Sprintf(format, args...)))
	panic(o)
}

// hostError turns a Host failure into a JS exception (a *model.Error) or an
// abort of the turn (anything else).
func (in *instance) hostError(err error) goja.Value {
	t := in.t
	var me *model.Error
	if errors.As(err, &me) {
		o, _ := in.vm.New(in.errCtor, in.vm.ToValue(me.Message))
		_ = o.Set("type", string(me.Type))
		panic(o)
	}
	switch {
	case t.parent.Err() != nil:
		return in.abort(&interruption{err: t.parent.Err()})
	case t.ctx.Err() != nil:
		return in.abort(errDeadline)
	}
	return in.abort(&interruption{err: fmt.Errorf("runtime: host: %w", err)})
}

func (in *instance) current(what string) *turn {
	if in.t == nil {
		o, _ := in.vm.New(in.errCtor, in.vm.ToValue(what+" can only be used while a turn runs"))
		panic(o)
	}
	return in.t
}

// countCall enforces the per-turn cap on host calls.
func (in *instance) countCall() bool {
	t := in.t
	t.hostCalls++
	if t.hostCalls > in.e.opts.MaxHostCalls {
		in.abort(&interruption{problem: &Problem{Code: ProblemOutputTooLarge, Title: "Output too large",
			Description: fmt.Sprintf("more than %d client calls in one turn", in.e.opts.MaxHostCalls)}})
		return false
	}
	return true
}

// encodeObject turns a JS value into a JSON object (a fresh Go map) through
// JSON.stringify, so what reaches the Host is exactly what JSON would carry
// and bot code keeps no reference into it. Over max bytes the turn ends.
func (in *instance) encodeObject(v goja.Value, what string, max int) (map[string]any, bool) {
	o, ok := v.(*goja.Object)
	if !ok || o.ClassName() == "Array" || o.ClassName() == "Function" {
		in.throwType("%s must be an object", what)
	}
	j, err := in.stringify(goja.Undefined(), v)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) && !isInterrupt(err) {
			panic(ex.Value())
		}
		panic(err)
	}
	s := j.String()
	if len(s) > max {
		in.abort(&interruption{problem: &Problem{Code: ProblemOutputTooLarge, Title: "Output too large",
			Description: fmt.Sprintf("%s is %d bytes of JSON; the limit is %d", what, len(s), max)}})
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		in.throwType("%s must be a JSON object", what)
	}
	return m, true
}

var (
	typeJSObject = reflect.TypeOf(map[string]any{}) // goja's export type of ordinary objects
	typeJSArray  = reflect.TypeOf([]any{})          // of arrays (and of Sets)
)

// nativeShallow is the fast path of the prelude's depth check before
// JSON.stringify. It walks the value exactly as checkDepth does (the same
// reads in the same order: own enumerable keys of objects, indexes of
// arrays, depth first from the last pushed), but in Go, without allocating
// JS arrays. It answers true when the value certainly passes: it is not
// an object, or it is made of ordinary objects and arrays with at most
// shallowBudget properties in all, so it cannot be nested deeper than
// maxJSONDepth. Anything else (more properties, a proxy, a Date, a Map, a
// typed array...) answers false and the JS walk runs; getters read here are
// then read again by it.
func (in *instance) nativeShallow(call goja.FunctionCall) goja.Value {
	o, ok := call.Argument(0).(*goja.Object)
	if !ok || o.ExportType().Kind() == reflect.Func {
		return in.vm.ToValue(true)
	}
	var buf [16]*goja.Object
	stack := append(buf[:0], o)
	budget := shallowBudget
	push := func(v goja.Value) {
		// checkDepth pushes values with typeof 'object': not functions.
		if x, ok := v.(*goja.Object); ok && x.ExportType().Kind() != reflect.Func {
			stack = append(stack, x)
		}
	}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch t := o.ExportType(); {
		case t == typeJSObject:
			keys := o.Keys()
			if budget -= len(keys); budget < 0 {
				return in.vm.ToValue(false)
			}
			for _, k := range keys {
				push(o.Get(k))
			}
		case t == typeJSArray && o.ClassName() == "Array":
			n := o.Get("length").ToInteger()
			if budget -= int(min(n, shallowBudget+1)); budget < 0 {
				return in.vm.ToValue(false)
			}
			for i := range n {
				push(o.Get(strconv.FormatInt(i, 10)))
			}
		default:
			return in.vm.ToValue(false)
		}
	}
	return in.vm.ToValue(true)
}

func isInterrupt(err error) bool {
	var ie *goja.InterruptedError
	return errors.As(err, &ie)
}

func defined(v goja.Value) bool { return v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) }

func (in *instance) stringArg(v goja.Value, what string) string {
	if s, ok := v.(goja.String); ok { // a primitive string: no Export boxing
		if s.Length() > 0 {
			return s.String()
		}
	} else if s, ok := v.Export().(string); ok && s != "" { // a String object
		return s
	}
	in.throwType("%s must be a non-empty string", what)
	return ""
}

func (in *instance) tagsArg(v goja.Value) map[string]string {
	if !defined(v) {
		return nil
	}
	m, ok := in.encodeObject(v, "tags", in.e.opts.MaxPayloadBytes)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			in.throwType("tags.%s must be a string", k)
		}
		out[k] = s
	}
	return out
}

// nativeLog formats console.* and logger.* arguments like console.log:
// strings as they are, errors by their stack, other values as JSON.
//
// Outside a turn (the code's top level, run once per runtime) lines are
// dropped: they would repeat for every pooled runtime.
func (in *instance) nativeLog(call goja.FunctionCall) goja.Value {
	t := in.t
	if t == nil {
		return goja.Undefined()
	}
	if len(t.res.Logs)-t.problems >= in.e.opts.MaxLogLines {
		t.dropped++
		return goja.Undefined()
	}
	level := call.Argument(0).String()
	args := call.Argument(1).ToObject(in.vm)
	n := int(args.Get("length").ToInteger())
	var b strings.Builder
	for i := 0; i < n && b.Len() <= in.e.opts.MaxLogLineBytes; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(in.format(args.Get(strconv.Itoa(i))))
	}
	t.addLog(level, in.e.truncate(b.String()))
	return goja.Undefined()
}

func (in *instance) format(v goja.Value) string {
	o, ok := v.(*goja.Object)
	if !ok {
		if v == nil {
			return "undefined"
		}
		return v.String()
	}
	if s := o.Get("stack"); s != nil && !goja.IsUndefined(s) {
		return cleanStack(s.String())
	}
	if o.ClassName() != "Function" {
		if j, err := in.stringify(goja.Undefined(), o); err == nil && !goja.IsUndefined(j) {
			return j.String()
		} else if isInterrupt(err) {
			panic(err)
		}
	}
	return o.String()
}

// nativeRefresh recomputes event.type and event.preview after a
// before_incoming_message hook, which may have changed event.payload.
func (in *instance) nativeRefresh(call goja.FunctionCall) goja.Value {
	ev := call.Argument(0).ToObject(in.vm)
	s := call.Argument(1).String() // JSON.stringify(event.payload), done by the prelude
	if len(s) > in.e.opts.MaxPayloadBytes {
		return in.abort(&interruption{problem: &Problem{Code: ProblemOutputTooLarge, Title: "Output too large",
			Description: fmt.Sprintf("event.payload is %d bytes of JSON; the limit is %d", len(s), in.e.opts.MaxPayloadBytes)}})
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		in.throwType("event.payload must be an object")
	}
	if typ, ok := m["type"].(string); ok {
		_ = ev.Set("type", typ)
	}
	_ = ev.Set("preview", Preview(m))
	return goja.Undefined()
}

// nativeOutgoingEvent builds the event a before_outgoing_message hook sees.
func (in *instance) nativeOutgoingEvent(call goja.FunctionCall) goja.Value {
	t := in.current("client.createMessage")
	conv := in.stringArg(call.Argument(0), "conversationId")
	payload, ok := in.encodeObject(call.Argument(1), "payload", in.e.opts.MaxPayloadBytes)
	if !ok {
		return goja.Undefined()
	}
	tags := in.tagsArg(call.Argument(2))
	turnEv := &t.in.Event
	ev := Event{
		BotID: t.in.BotID, ConversationID: conv, CreatedOn: model.Now(), Direction: model.DirectionOutgoing,
		ID: model.NewID(), Integration: turnEv.Integration, Payload: payload, Preview: Preview(payload),
	}
	ev.Type, _ = payload["type"].(string)
	if conv == turnEv.ConversationID {
		ev.UserID = turnEv.UserID
		if turnEv.Tags != nil {
			ev.Tags = NewTags(turnEv.Tags.Conversation, tags, turnEv.Tags.User)
		}
	}
	if ev.Tags == nil {
		ev.Tags = NewTags(nil, tags, nil)
	}
	var args [17]goja.Value
	in.eventArgs((*[16]goja.Value)(args[:]), &ev)
	copy(args[11:], args[10:16]) // state goes after preview
	args[10] = call.Argument(3)
	v, err := in.makeEvent(goja.Undefined(), args[:]...)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) && !isInterrupt(err) {
			panic(ex.Value())
		}
		panic(err)
	}
	return v
}

func (in *instance) nativeCreateMessage(call goja.FunctionCall) goja.Value {
	t := in.current("client.createMessage")
	conv := in.stringArg(call.Argument(0), "conversationId")
	payload, ok := in.encodeObject(call.Argument(1), "payload", in.e.opts.MaxPayloadBytes)
	if !ok {
		return goja.Undefined()
	}
	var metadata map[string]any
	if v := call.Argument(2); defined(v) {
		if metadata, ok = in.encodeObject(v, "metadata", in.e.opts.MaxPayloadBytes); !ok {
			return goja.Undefined()
		}
	}
	tags := in.tagsArg(call.Argument(3))
	if !in.countCall() {
		return goja.Undefined()
	}
	msg, err := t.in.Host.CreateMessage(t.ctx, conv, payload, metadata, tags)
	if err != nil {
		return in.hostError(err)
	}
	return in.toJS(msg)
}

func (in *instance) nativeCreateEvent(call goja.FunctionCall) goja.Value {
	t := in.current("client.createEvent")
	conv := in.stringArg(call.Argument(0), "conversationId")
	payload, ok := in.encodeObject(call.Argument(1), "payload", in.e.opts.MaxPayloadBytes)
	if !ok || !in.countCall() {
		return goja.Undefined()
	}
	ev, err := t.in.Host.CreateEvent(t.ctx, conv, payload)
	if err != nil {
		return in.hostError(err)
	}
	return in.toJS(ev)
}

func (in *instance) nativeGet(what string, get func(Host, context.Context, string) (map[string]any, error)) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		t := in.current(what)
		id := in.stringArg(call.Argument(0), what+": id")
		if !in.countCall() {
			return goja.Undefined()
		}
		v, err := get(t.in.Host, t.ctx, id)
		if err != nil {
			return in.hostError(err)
		}
		return in.toJS(v)
	}
}

// nativeCall runs a Runtime API operation of ClientOperations:
// native.call(op, input).
func (in *instance) nativeCall(call goja.FunctionCall) goja.Value {
	op := call.Argument(0).String()
	what := "client." + op
	t := in.current(what)
	input, ok := in.encodeObject(call.Argument(1), "input", in.e.opts.MaxPayloadBytes)
	if !ok || !in.countCall() {
		return goja.Undefined()
	}
	v, err := t.in.Host.Call(t.ctx, op, input)
	if err != nil {
		return in.hostError(err)
	}
	return in.toJS(v)
}

func (in *instance) nativeListMessages(call goja.FunctionCall) goja.Value {
	t := in.current("client.listMessages")
	conv := in.stringArg(call.Argument(0), "conversationId")
	var token string
	if v := call.Argument(1); defined(v) {
		token = v.String()
	}
	if !in.countCall() {
		return goja.Undefined()
	}
	msgs, next, err := t.in.Host.ListMessages(t.ctx, conv, token)
	if err != nil {
		return in.hostError(err)
	}
	arr := make([]any, len(msgs))
	for i, m := range msgs {
		arr[i] = m
	}
	meta := map[string]any{}
	if next != "" {
		meta["nextToken"] = next
	}
	return in.toJS(map[string]any{"messages": arr, "meta": meta})
}

// eventArgs fills the arguments of the prelude's makeEvent but state
// (botId, conversationId, createdMs, direction, id, integration, kb,
// messageId, payload, preview, tags.conversation, tags.message, tags.user,
// trigger, type, userId), undefined for the optional fields that are not
// set. Every value is fresh, so bot code cannot reach the Go-side event
// through the object.
func (in *instance) eventArgs(a *[16]goja.Value, ev *Event) {
	vm := in.vm
	undef := goja.Undefined()
	opt := func(s string) goja.Value { // an optional field
		if s == "" {
			return undef
		}
		return vm.ToValue(s)
	}
	dir := ev.Direction
	if dir == "" {
		dir = model.DirectionIncoming
	}
	a[0] = in.str(ev.BotID)
	a[1] = opt(ev.ConversationID)
	a[2] = vm.ToValue(ev.CreatedOn.UnixMilli())
	a[3] = in.str(dir)
	a[4] = vm.ToValue(ev.ID)
	a[5] = undef
	if ev.Integration != "" {
		a[5] = in.str(ev.Integration)
	}
	a[6] = undef
	if ev.KB != nil {
		a[6] = in.toJS(ev.KB)
	}
	a[7] = opt(ev.MessageID)
	a[8] = in.toJS(ev.Payload)
	a[9] = vm.ToValue(ev.Preview)
	a[10], a[11], a[12] = undef, undef, undef
	if ev.Tags != nil {
		a[10] = in.stringMap(ev.Tags.Conversation)
		a[11] = in.stringMap(ev.Tags.Message)
		a[12] = in.stringMap(ev.Tags.User)
	}
	a[13] = undef
	if ev.Trigger != nil {
		a[13] = in.toJS(ev.Trigger)
	}
	a[14] = vm.ToValue(ev.Type)
	a[15] = opt(ev.UserID)
}

// str returns s as a JS string, for the bot id, integration and direction,
// which repeat on every turn of a runtime: JS strings are immutable values,
// so the last few are cached.
func (in *instance) str(s string) goja.Value {
	for i := range in.strs {
		if c := &in.strs[i]; c.v != nil && c.s == s {
			return c.v
		}
	}
	v := in.vm.ToValue(s)
	in.strs[in.strNext] = cachedStr{s, v}
	in.strNext = (in.strNext + 1) % len(in.strs)
	return v
}

type cachedStr struct {
	s string
	v goja.Value
}

func (in *instance) stringMap(m map[string]string) *goja.Object {
	o := in.vm.NewObject()
	var buf [8]string
	for _, k := range sortedKeys(m, buf[:]) {
		_ = o.Set(k, m[k])
	}
	return o
}

func (in *instance) toJSOrUndefined(m map[string]any) goja.Value {
	if m == nil {
		return goja.Undefined()
	}
	return in.toJS(m)
}

// toJS copies JSON-shaped Go data into fresh native JS values. goja's
// ToValue would wrap maps and slices live, letting bot code write into Go
// memory; this never does. Keys are sorted for deterministic output.
func (in *instance) toJS(v any) goja.Value {
	vm := in.vm
	switch x := v.(type) {
	case nil:
		return goja.Null()
	case string:
		return vm.ToValue(x)
	case bool:
		return vm.ToValue(x)
	case float64:
		return vm.ToValue(x)
	case int:
		return vm.ToValue(x)
	case int64:
		return vm.ToValue(x)
	case json.Number:
		f, _ := x.Float64()
		return vm.ToValue(f)
	case time.Time:
		return vm.ToValue(model.FormatTime(x))
	case map[string]any:
		o := vm.NewObject()
		if x == nil {
			return o
		}
		var buf [8]string
		for _, k := range sortedKeys(x, buf[:]) {
			_ = o.Set(k, in.toJS(x[k]))
		}
		return o
	case map[string]string:
		return in.stringMap(x)
	case []any:
		items := make([]any, len(x))
		for i, it := range x {
			items[i] = in.toJS(it)
		}
		return vm.NewArray(items...)
	case []map[string]any:
		items := make([]any, len(x))
		for i, it := range x {
			items[i] = in.toJS(it)
		}
		return vm.NewArray(items...)
	case json.RawMessage:
		v, err := in.parse(goja.Undefined(), vm.ToValue(string(x)))
		if err != nil {
			return goja.Null()
		}
		return v
	default:
		j, err := json.Marshal(x)
		if err != nil {
			return goja.Null()
		}
		return in.toJS(json.RawMessage(j))
	}
}

// sortedKeys returns the keys of m, sorted, in buf when they fit.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	if len(m) == 0 {
		return nil
	}
	ks := buf[:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
