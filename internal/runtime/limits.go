package runtime

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// Output-size guards of the built-ins that build a result in one native call
// (docs/runtime.md, Isolation model). goja checks its interrupt flag between
// JS instructions only, so a single call such as JSON.stringify or
// Array.prototype.join runs to completion whatever the time budget or the
// memory watchdog say: the size of what it produces must be known, or
// counted as it is produced, and refused before it is allocated.

// RegexpTimeout bounds one regular-expression match of the engine goja uses
// for the patterns Go's regexp cannot run (lookaround, backreferences):
// dlclark/regexp2, whose backtracking has no other limit. goja compiles a
// pattern once per program and shares it between runtimes, so the limit
// cannot follow each turn's deadline: it is process-wide, set at start-up
// (regexp2.DefaultMatchTimeout), and a match that runs longer stops as if
// nothing more matched. The prelude ends the turn (timeout) when
// RegExp.prototype.test, match or search ran that long.
const RegexpTimeout = time.Second

func init() {
	// Before any bot code is compiled: goja reads the default when it
	// compiles a pattern.
	regexp2.DefaultMatchTimeout = RegexpTimeout
}

// sizeLimit ends the turn because a built-in call would produce more than
// max characters or elements. Outside a turn (the code's top level) it
// throws a RangeError instead.
func (in *instance) sizeLimit(what string, max int) {
	msg := fmt.Sprintf("%s: the result would be over the sandbox limit of %d", what, max)
	if in.t == nil {
		in.throwRange(msg)
	}
	in.abort(&interruption{where: true, problem: &Problem{Code: ProblemMemory, Title: "Memory limit exceeded", Description: msg}})
}

func (in *instance) throwRange(msg string) {
	o, _ := in.vm.New(in.rangeErr, in.vm.ToValue(msg))
	panic(o)
}

// nativeTooBig is the prelude's guards' way to refuse a size: arguments
// what and the limit.
func (in *instance) nativeTooBig(call goja.FunctionCall) goja.Value {
	in.sizeLimit(call.Argument(0).String(), int(call.Argument(1).ToInteger()))
	return goja.Undefined()
}

// nativeRegexpTimeout ends the turn after a match that hit RegexpTimeout.
func (in *instance) nativeRegexpTimeout(call goja.FunctionCall) goja.Value {
	what := call.Argument(0).String()
	if in.t == nil {
		in.throwRange(what + ": regular expression match over " + RegexpTimeout.String())
	}
	in.abort(&interruption{where: true, problem: &Problem{Code: ProblemTimeout, Title: "Regular expression time limit exceeded",
		Description: fmt.Sprintf("%s ran longer than %s, the limit of one match (catastrophic backtracking?)", what, RegexpTimeout)}})
	return goja.Undefined()
}

// stopped reports whether the running turn is over (budget or caller), so
// that a native loop can stop early: the interrupt is already pending.
func (in *instance) stopped() bool {
	t := in.t
	return t != nil && (t.ctx.Err() != nil || t.aborted != nil)
}

// nativeJoin is Array.prototype.join (and so toString): goja's, but each
// element is converted once, the length of the result is counted first and
// refused over MaxStringLength, and the loop stops when the turn is over.
func (in *instance) nativeJoin(call goja.FunctionCall) goja.Value {
	vm := in.vm
	o := call.This.ToObject(vm)
	for _, x := range in.joining {
		if x == o {
			return vm.ToValue("") // a cycle, as goja (and V8) do
		}
	}
	in.joining = append(in.joining, o)
	defer func() { in.joining = in.joining[:len(in.joining)-1] }()

	max := in.e.opts.MaxStringLength
	n := o.Get("length").ToFloat()
	if !(n > 0) {
		return vm.ToValue("")
	}
	var sep goja.String = nil
	if s := call.Argument(0); !goja.IsUndefined(s) {
		sep = in.jsString(s)
	} else {
		sep = vm.ToValue(",").(goja.String)
	}
	if n > float64(in.maxArrayLength()) {
		in.sizeLimit("Array.prototype.join", in.maxArrayLength())
		return goja.Undefined()
	}
	l := int(n)
	total := (l - 1) * sep.Length()
	if total > max {
		in.sizeLimit("Array.prototype.join", max)
		return goja.Undefined()
	}
	parts := make([]goja.String, l)
	for i := range l {
		if i&1023 == 1023 && in.stopped() {
			return goja.Undefined()
		}
		el := o.Get(strconv.Itoa(i))
		if el == nil || goja.IsUndefined(el) || goja.IsNull(el) {
			continue
		}
		s := in.jsString(el)
		if total += s.Length(); total > max {
			in.sizeLimit("Array.prototype.join", max)
			return goja.Undefined()
		}
		parts[i] = s
	}
	var b goja.StringBuilder
	b.Grow(total)
	for i, s := range parts {
		if i > 0 {
			b.WriteString(sep)
		}
		if s != nil {
			b.WriteString(s)
		}
	}
	return b.String()
}

func (in *instance) maxArrayLength() int { return in.e.opts.MaxArrayLength }

// jsonFrame is the state of one bounded JSON.stringify (they nest when a
// toJSON or replacer calls JSON.stringify).
type jsonFrame struct {
	user    goja.Callable // the caller's replacer function
	list    []goja.Value  // the caller's property list (replacer array)
	gap     int
	total   int
	stack   []*goja.Object // the objects being serialized, outermost first
	stopped bool
}

// nativeStringify is JSON.stringify(value, replacer, space) with a bound on
// the size of its output. goja's JSON.stringify is called with a replacer
// function of ours, which sees every value that is written, in order,
// after toJSON and the caller's replacer: it adds up the characters each
// one will take (escapes, keys, indentation) and, over MaxStringLength,
// ends the turn and makes the rest of the call write nothing. The same
// replacer stops the call when the turn's budget is spent.
func (in *instance) nativeStringify(call goja.FunctionCall) goja.Value {
	vm := in.vm
	f := &jsonFrame{}
	if r, ok := call.Argument(1).(*goja.Object); ok {
		if fn, ok := goja.AssertFunction(r); ok {
			f.user = fn
		} else if r.ClassName() == "Array" {
			f.list = propertyList(vm, r)
		}
	}
	gap := ""
	space := call.Argument(2)
	if o, ok := space.(*goja.Object); ok {
		switch o.ClassName() {
		case "Number":
			space = o.ToNumber()
		case "String":
			space = o.ToString()
		}
	}
	if goja.IsNumber(space) {
		if n := space.ToInteger(); n > 0 {
			gap = "          "[:min(int(n), 10)]
		}
	} else if s, ok := space.(goja.String); ok {
		gap = s.String()
		if s.Length() > 10 {
			gap = s.Substring(0, 10).String()
		}
	}
	f.gap = len(gap)
	in.json = append(in.json, f)
	defer func() { in.json = in.json[:len(in.json)-1] }()
	res, err := in.origStringify(goja.Undefined(), call.Argument(0), in.jsonReplacer, vm.ToValue(gap))
	if err != nil {
		rethrow(err)
	}
	return res
}

// rethrow re-raises an error of a call into the runtime from a native
// function: an exception as the same JS value, an interrupt as itself.
func rethrow(err error) {
	if ex, ok := err.(*goja.Exception); ok {
		panic(ex.Value())
	}
	panic(err)
}

// propertyList is the replacer array's list of names, as JSON.stringify
// builds it.
func propertyList(vm *goja.Runtime, r *goja.Object) []goja.Value {
	n := int(min(r.Get("length").ToInteger(), 1<<20))
	seen := map[string]bool{}
	var out []goja.Value
	for i := range n {
		v := r.Get(strconv.Itoa(i))
		if o, ok := v.(*goja.Object); ok {
			if c := o.ClassName(); c != "Number" && c != "String" {
				continue
			}
		} else if !goja.IsNumber(v) && !goja.IsString(v) {
			continue
		}
		name := v.String()
		if !seen[name] {
			seen[name] = true
			out = append(out, vm.ToValue(name))
		}
	}
	return out
}

// nativeJSONReplacer: see nativeStringify.
func (in *instance) nativeJSONReplacer(call goja.FunctionCall) goja.Value {
	f := in.json[len(in.json)-1]
	if f.stopped {
		return goja.Undefined()
	}
	key, v := call.Argument(0), call.Argument(1)
	if f.user != nil {
		var err error
		if v, err = f.user(call.This, key, v); err != nil {
			rethrow(err)
		}
	}
	holder, _ := call.This.(*goja.Object)
	// The depth of the holder: its place on the stack of open objects
	// (0: the wrapper around the value, which has no key of its own).
	depth := -1
	for i := len(f.stack) - 1; i >= 0; i-- {
		if f.stack[i] == holder {
			f.stack, depth = f.stack[:i+1], i
			break
		}
	}
	if depth < 0 {
		f.stack, depth = append(f.stack[:0], holder), 0
	}
	cost := 0
	if depth > 0 {
		cost++ // comma
		if holder.ClassName() != "Array" {
			cost += quotedLen(in.jsString(key)) + 1 // "key":
			if f.gap > 0 {
				cost++ // the space after the colon
			}
		}
		if f.gap > 0 {
			cost += 1 + f.gap*depth // newline and indentation
		}
	}
	switch {
	case v == nil || goja.IsUndefined(v) || goja.IsNull(v):
		cost += 4
	case goja.IsString(v):
		if x := v.(goja.String); f.total+cost+x.Length()+2 > in.e.opts.MaxStringLength {
			cost += x.Length() + 2 // over already: escapes only add
		} else {
			cost += quotedLen(x)
		}
	case goja.IsNumber(v):
		x := v.ToFloat()
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			cost += len(strconv.FormatInt(int64(x), 10))
		} else {
			cost += len(v.String())
		}
	default:
		if o, ok := v.(*goja.Object); ok {
			switch o.ClassName() {
			case "String":
				v = o.ToString()
				cost += quotedLen(v.(goja.String))
			case "Number":
				v = o.ToNumber()
				cost += len(v.String())
			case "RawJSON":
				cost += in.jsString(o.Get("rawJSON")).Length()
			case "Function":
				cost += 4
			default:
				if f.list != nil && o.ClassName() != "Array" {
					o = in.pick(o, f.list)
					v = o
				}
				cost += 2
				if f.gap > 0 {
					cost += 1 + f.gap*depth
				}
				f.stack = append(f.stack, o)
			}
		} else {
			cost += len(v.String()) // booleans; a BigInt throws
		}
	}
	max := in.e.opts.MaxStringLength
	if f.total += cost; f.total > max {
		f.stopped = true
		in.sizeLimit("JSON.stringify", max)
		return goja.Undefined()
	}
	if in.stopped() {
		f.stopped = true
		return goja.Undefined()
	}
	return v
}

// pick copies the properties of o named in list, in its order: what
// JSON.stringify writes of an object when the replacer is an array.
func (in *instance) pick(o *goja.Object, list []goja.Value) *goja.Object {
	c := in.vm.NewObject()
	for _, k := range list {
		if x := o.Get(k.String()); x != nil && !goja.IsUndefined(x) {
			_ = c.DefineDataProperty(k.String(), x, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		}
	}
	return c
}

// quotedLen is the length of s written as a JSON string, quotes included.
func quotedLen(s goja.String) int {
	n := s.Length()
	out := n + 2
	if n == 0 {
		return out
	}
	if x, ok := s.Export().(string); ok && len(x) == n && n > 64 {
		// Probably goja's ASCII string, which exports as itself: scan
		// bytes rather than call CharAt. (A non-ASCII string exported
		// to UTF-8 has more bytes than UTF-16 units, unless it has
		// lone surrogates, which were replaced: then fall through.)
		ascii := true
		for i := 0; i < len(x); i++ {
			switch c := x[i]; {
			case c >= 0x80:
				ascii = false
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				out++
			case c < 0x20:
				out += 5
			}
			if !ascii {
				break
			}
		}
		if ascii {
			return out
		}
		out = n + 2
	}
	for i := 0; i < n; i++ {
		c := s.CharAt(i)
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			out++
		case c < 0x20:
			out += 5
		case c >= 0xD800 && c <= 0xDBFF:
			if i+1 < n {
				if d := s.CharAt(i + 1); d >= 0xDC00 && d <= 0xDFFF {
					i++
					continue
				}
			}
			out += 5
		case c >= 0xDC00 && c <= 0xDFFF:
			out += 5
		}
	}
	return out
}

// jsString converts v to a JS string value (ToString), keeping it in goja's
// representation.
func (in *instance) jsString(v goja.Value) goja.String {
	if s, ok := v.(goja.String); ok {
		return s
	}
	if s, ok := v.ToString().(goja.String); ok {
		return s
	}
	return in.vm.ToValue(v.String()).(goja.String)
}

// nativeIsBoxedString tells a String object, which JSON.stringify writes as
// a string, from other objects.
func (in *instance) nativeIsBoxedString(call goja.FunctionCall) goja.Value {
	o, ok := call.Argument(0).(*goja.Object)
	return in.vm.ToValue(ok && o.ClassName() == "String")
}
