package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/parley-bots/parley/internal/model"
)

// The native functions the prelude and the bot's client call: the Chat
// and Runtime API operations a turn may make through its Host, logs, and
// the checks of their arguments.

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

// encodeObject turns a JS value into a JSON object through JSON.stringify,
// so what reaches the Host is exactly what JSON would carry and bot code
// keeps no reference into it; a host that stores it takes the JSON as
// written (client.createMessage's payload and metadata: decoded to Go and
// encoded again, they cost an echo bot's reply two conversions more than
// its validation's), others a Go map (objectOf). Over max bytes the turn
// ends.
func (in *instance) encodeObject(v goja.Value, what string, max int) (json.RawMessage, bool) {
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
	// JSON.stringify writes valid JSON, or undefined; an object's toJSON
	// may make it anything else than an object.
	if !goja.IsUndefined(j) && strings.HasPrefix(s, "{") {
		return json.RawMessage(s), true
	}
	in.throwType("%s must be a JSON object", what)
	return nil, false
}

// objectOf is encodeObject's JSON as a fresh Go map: JSON.stringify's
// output of an object, so it decodes.
func objectOf(raw json.RawMessage, ok bool) (map[string]any, bool) {
	if !ok {
		return nil, false
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
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
	m, ok := objectOf(in.encodeObject(v, "tags", in.e.opts.MaxPayloadBytes))
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
	payload, ok := objectOf(in.encodeObject(call.Argument(1), "payload", in.e.opts.MaxPayloadBytes))
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
	var metadata json.RawMessage
	if v := call.Argument(2); defined(v) {
		if metadata, ok = in.encodeObject(v, "metadata", in.e.opts.MaxPayloadBytes); !ok {
			return goja.Undefined()
		}
	}
	tags := in.tagsArg(call.Argument(3))
	if !in.countCall() {
		return goja.Undefined()
	}
	build, err := t.in.Host.CreateMessage(t.ctx, conv, payload, metadata, tags)
	if err != nil {
		return in.hostError(err)
	}
	return in.createdGetter(build)
}

// createdGetter is the getter of the message property of what
// client.createMessage resolves to (created, in prelude.js): it builds the
// message on its first read, and leaves it there as a plain property.
// Building it takes two conversions (the stored JSON to Go, Go to JS), a
// tenth of an echo bot's turn, for a value most bots never read.
func (in *instance) createdGetter(build func() map[string]any) goja.Value {
	var msg goja.Value
	return in.vm.ToValue(func(call goja.FunctionCall) goja.Value {
		if msg == nil {
			msg = in.toJS(build())
		}
		if o, ok := call.This.(*goja.Object); ok {
			_ = o.DefineDataProperty("message", msg, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		}
		return msg
	})
}

func (in *instance) nativeCreateEvent(call goja.FunctionCall) goja.Value {
	t := in.current("client.createEvent")
	conv := in.stringArg(call.Argument(0), "conversationId")
	payload, ok := objectOf(in.encodeObject(call.Argument(1), "payload", in.e.opts.MaxPayloadBytes))
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
	input, ok := objectOf(in.encodeObject(call.Argument(1), "input", in.e.opts.MaxPayloadBytes))
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
