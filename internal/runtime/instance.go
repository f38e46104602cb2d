package runtime

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dop251/goja"
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
