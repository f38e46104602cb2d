package runtime

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/dop251/goja"

	"github.com/parley-bots/parley/internal/model"
)

// Go values into JavaScript: the event's fields and the host's answers.

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
