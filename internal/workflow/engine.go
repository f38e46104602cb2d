package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/parley-bots/parley/internal/runtime"
)

// Bot is a validated, compiled bot JSON document.
type Bot struct {
	Doc *Document
	// Raw is the document as published (compacted).
	Raw json.RawMessage

	vars      map[string]map[string]*Variable // user, conversation, bot
	flowVars  map[string]map[string]*Variable // workflow id → variables
	intents   *intentIndex
	schedules []Schedule
}

// Schedule is a schedule trigger with its parsed cron spec.
type Schedule struct {
	Trigger *Trigger
	Spec    cron.Schedule
}

// Schedules lists the bot's schedule triggers.
func (b *Bot) Schedules() []Schedule { return b.schedules }

// Classify matches a text against the bot's intents, best first.
func (b *Bot) Classify(text string) []Match { return b.intents.Classify(text) }

func (b *Bot) decl(flow, scope, name string) *Variable {
	if scope == "workflow" {
		return b.flowVars[flow][name]
	}
	return b.vars[scope][name]
}

func (b *Bot) settings() (timeout time.Duration, repeat int, threshold float64) {
	s := b.Doc.Settings
	minutes := s.InactivityTimeout
	if minutes <= 0 {
		minutes = DefaultInactivityTimeout
	}
	repeat = s.NodeRepetitionLimit
	if repeat <= 0 {
		repeat = DefaultNodeRepetitionLimit
	}
	threshold = s.IntentThreshold
	if threshold <= 0 {
		threshold = DefaultIntentThreshold
	}
	return time.Duration(minutes * float64(time.Minute)), repeat, threshold
}

// Dialog is a conversation's dialog state: the stack of running workflows,
// what it waits for, session variables and the time of the last activity.
// The service persists it between turns; it survives restarts.
type Dialog struct {
	Stack    []*Frame       `json:"stack,omitempty"`
	Waiting  string         `json:"waiting,omitempty"` // "", "input" or "capture"
	Attempts int            `json:"attempts,omitempty"`
	Session  map[string]any `json:"session,omitempty"`
	// LastActivity is Unix milliseconds.
	LastActivity int64 `json:"lastActivity,omitempty"`
	// Timeout overrides the inactivity timeout, in minutes (timeout card).
	Timeout float64 `json:"timeout,omitempty"`
	Turns   int     `json:"turns"`
}

// Frame is one running workflow: where it is and its variables.
type Frame struct {
	Workflow string         `json:"workflow"`
	Node     string         `json:"node"`
	Card     int            `json:"card"`
	Vars     map[string]any `json:"vars,omitempty"`
}

// Waiting states.
const (
	WaitInput   = "input"
	WaitCapture = "capture"
)

// Active reports whether a workflow is running (waiting for the user).
func (d *Dialog) Active() bool { return d != nil && len(d.Stack) > 0 }

// TimeoutAt is when the dialog times out; zero when it is not active.
func (d *Dialog) TimeoutAt(b *Bot) time.Time {
	if !d.Active() || d.LastActivity == 0 {
		return time.Time{}
	}
	timeout, _, _ := b.settings()
	if d.Timeout > 0 {
		timeout = time.Duration(d.Timeout * float64(time.Minute))
	}
	return time.UnixMilli(d.LastActivity).Add(timeout)
}

func (d *Dialog) expired(b *Bot, now time.Time) bool {
	at := d.TimeoutAt(b)
	return !at.IsZero() && !now.Before(at)
}

// Input kinds.
const (
	InputMessage  = "message"
	InputEvent    = "event"
	InputTimeout  = "timeout"
	InputSchedule = "schedule"
	// InputWebhook is a webhook:event of the built-in webhook integration.
	InputWebhook = "webhook"
)

// Input is what the engine needs of the turn's event.
type Input struct {
	Kind string
	// Text is the message's plain text (the event preview); Value the
	// button value of a choice reply (payload.value), if any.
	Text  string
	Value string
	// EventName is a custom event's name: payload.name, else payload.type.
	EventName string
	// WebhookPath is a webhook event's payload.path.
	WebhookPath     string
	Now             time.Time
	HasConversation bool
	// Knowledge answers queryKnowledgeBase cards (nil: they find nothing).
	Knowledge Knowledge
}

// Route picks the trigger that starts this turn, if any; package turns puts
// it in event.trigger. d is nil on a conversation's first turn.
func (b *Bot) Route(d *Dialog, in Input) *Trigger {
	if in.Kind == InputTimeout || in.Kind == InputSchedule {
		return nil
	}
	if in.Kind == InputWebhook {
		// Only a webhook trigger: the webhook conversation has no user to
		// greet, and a chat conversation's dialog is not the webhook's.
		for i := range b.Doc.Triggers {
			if t := &b.Doc.Triggers[i]; t.Type == TriggerWebhook && (t.Path == "" || t.Path == in.WebhookPath) {
				return t
			}
		}
		return nil
	}
	if d == nil || d.Turns == 0 {
		for i := range b.Doc.Triggers {
			if t := &b.Doc.Triggers[i]; t.Type == TriggerConversationStarted {
				return t
			}
		}
	}
	waiting := d.Active() && d.Waiting != "" && !d.expired(b, in.Now)
	switch in.Kind {
	case InputEvent:
		for i := range b.Doc.Triggers {
			if t := &b.Doc.Triggers[i]; t.Type == TriggerEvent && t.EventName == in.EventName {
				return t
			}
		}
	case InputMessage:
		_, _, threshold := b.settings()
		matches := b.Classify(in.Text)
		for _, m := range matches {
			if m.Confidence < threshold {
				break
			}
			for i := range b.Doc.Triggers {
				t := &b.Doc.Triggers[i]
				if t.Type == TriggerIntent && t.Intent == m.Intent && (!waiting || t.Interrupt) {
					return t
				}
			}
		}
	}
	return nil
}

// Issue is a problem of the bot found while running a turn (a card threw,
// a node repeated too often); package turns records it as a bot issue.
type Issue struct {
	Code        string
	Title       string
	Description string
}

// Issue codes.
const (
	IssueCardError  = "workflow_error"
	IssueRepetition = "node_repetition_limit"
	IssueStack      = "workflow_stack_overflow"
)

// Outcome is what a turn left: the dialog to persist and the issues.
type Outcome struct {
	Dialog *Dialog
	Issues []Issue
	// Sent counts the messages sent.
	Sent int
}

// Run runs one turn of the engine. call reaches the JavaScript side (see
// runtime.RunDriven); d is the stored dialog (nil for none) and is not
// modified; trig is Route's answer. The error is only ever an error of call
// that is not the bot's (the turn ended, the host failed).
func (b *Bot) Run(call runtime.DriveCall, d *Dialog, in Input, trig *Trigger) (*Outcome, error) {
	r := &run{b: b, call: call, in: in, out: &Outcome{}, visits: map[string]int{}}
	r.d = cloneDialog(d)
	err := r.turn(trig)
	if err != nil {
		return nil, err
	}
	r.out.Dialog = r.d
	return r.out, nil
}

func cloneDialog(d *Dialog) *Dialog {
	if d == nil {
		return &Dialog{}
	}
	raw, _ := json.Marshal(d)
	var c Dialog
	_ = json.Unmarshal(raw, &c)
	return &c
}

type run struct {
	b      *Bot
	call   runtime.DriveCall
	d      *Dialog
	in     Input
	out    *Outcome
	visits map[string]int
	ptr    string // the card running, for issues
}

// fatal wraps errors that end the turn (not the bot's fault).
type fatal struct{ err error }

func (f *fatal) Error() string { return f.err.Error() }
func (f *fatal) Unwrap() error { return f.err }

// botError is a problem of the bot: it leads to the error workflow.
type botError struct {
	code string
	msg  string
}

func (e *botError) Error() string { return e.msg }

func (r *run) req(op string, kv ...any) (json.RawMessage, error) {
	m := map[string]any{"op": op, "context": r.context()}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	raw, err := r.call(m)
	if err != nil {
		var se *runtime.ScriptError
		if errors.As(err, &se) {
			return nil, &botError{code: IssueCardError, msg: se.Error()}
		}
		return nil, &fatal{err}
	}
	return raw, nil
}

// context is event.state.context: where the dialog is.
func (r *run) context() map[string]any {
	c := map[string]any{"waiting": r.d.Waiting, "attempts": r.d.Attempts}
	stack := make([]any, 0, len(r.d.Stack))
	for _, f := range r.d.Stack {
		stack = append(stack, map[string]any{"workflow": f.Workflow, "node": f.Node, "card": f.Card})
	}
	c["stack"] = stack
	if f := r.top(); f != nil {
		c["currentWorkflow"], c["currentNode"] = f.Workflow, f.Node
	}
	return c
}

func (r *run) top() *Frame {
	if len(r.d.Stack) == 0 {
		return nil
	}
	return r.d.Stack[len(r.d.Stack)-1]
}

func (r *run) turn(trig *Trigger) error {
	first := r.d.Turns == 0
	_ = first
	var vars map[string]any
	if f := r.top(); f != nil {
		vars = f.Vars
	}
	var defaults []any
	for _, s := range stateScopes {
		for _, name := range sortedKeys(r.b.vars[s]) {
			if v := r.b.vars[s][name]; v.Default != nil {
				dv, _ := coerce(v, v.Default)
				defaults = append(defaults, map[string]any{"scope": s, "name": name, "value": dv})
			}
		}
	}
	if _, err := r.req("begin", "workflow", orEmpty(vars), "session", orEmpty(r.d.Session), "defaults", defaults); err != nil {
		return unwrapFatal(err)
	}
	if r.in.Kind != InputSchedule {
		r.d.Turns++
	}
	changed := true
	if r.d.expired(r.b, r.in.Now) {
		if err := r.runTimeout(); err != nil {
			return err
		}
	} else if r.in.Kind == InputTimeout {
		changed = false // activity since the timer was set: nothing to do
	}
	var err error
	switch {
	case r.in.Kind == InputTimeout:
	case trig != nil:
		err = r.start(trig.Workflow, trig.Node)
	case r.in.Kind == InputMessage && r.d.Active() && r.d.Waiting != "":
		err = r.resume()
	case r.in.Kind == InputMessage:
		err = r.start("main", "")
	default:
		changed = false // an event nothing listens to
	}
	if err != nil {
		return err
	}
	raw, err := r.req("snapshot")
	if err != nil {
		return unwrapFatal(err)
	}
	var snap struct {
		Workflow map[string]any `json:"workflow"`
		Session  map[string]any `json:"session"`
	}
	_ = json.Unmarshal(raw, &snap)
	if f := r.top(); f != nil {
		f.Vars = snap.Workflow
	}
	r.d.Session = snap.Session
	if changed && r.in.Kind != InputSchedule {
		r.d.LastActivity = r.in.Now.UnixMilli()
	}
	return nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func unwrapFatal(err error) error {
	var f *fatal
	if errors.As(err, &f) {
		return f.err
	}
	return err
}

// runTimeout runs the timeout workflow of an expired dialog, then ends the
// dialog and its session.
func (r *run) runTimeout() error {
	r.d.Stack, r.d.Waiting, r.d.Attempts, r.d.Timeout = nil, "", 0, 0
	if _, ok := r.b.Doc.Workflows["timeout"]; ok {
		if err := r.start("timeout", ""); err != nil {
			return err
		}
	}
	r.d.Stack, r.d.Waiting, r.d.Attempts = nil, "", 0
	return r.resetSession()
}

func (r *run) resetSession() error {
	r.d.Session = nil
	_, err := r.req("session", "session", map[string]any{})
	return unwrapFatal(err)
}

// start resets the dialog to one workflow at a node ("" = its start node)
// and runs it.
func (r *run) start(flow, node string) error {
	if node == "" {
		node = r.b.Doc.Workflows[flow].start
	}
	r.d.Stack, r.d.Waiting, r.d.Attempts = nil, "", 0
	if err := r.push(flow, node, nil); err != nil {
		return r.handle(err)
	}
	return r.exec()
}

// push starts a workflow on top of the stack with its default variables
// plus inputs.
func (r *run) push(flow, node string, inputs map[string]any) error {
	if len(r.d.Stack) >= maxStackDepth {
		return &botError{code: IssueStack, msg: fmt.Sprintf("workflow %q: more than %d workflows called within each other", flow, maxStackDepth)}
	}
	vars := map[string]any{}
	for name, v := range r.b.flowVars[flow] {
		if v.Default != nil {
			vars[name], _ = coerce(v, v.Default)
		}
	}
	for k, v := range inputs {
		vars[k] = v
	}
	raw, err := r.req("frame", "workflow", vars)
	if err != nil {
		return err
	}
	if f := r.top(); f != nil {
		var old map[string]any
		_ = json.Unmarshal(raw, &old)
		f.Vars = old
	}
	r.d.Stack = append(r.d.Stack, &Frame{Workflow: flow, Node: node})
	return r.enter(node)
}

// enter counts a visit of the top frame's node.
func (r *run) enter(node string) error {
	f := r.top()
	f.Node, f.Card = node, 0
	key := f.Workflow + "/" + node
	r.visits[key]++
	if _, limit, _ := r.b.settings(); r.visits[key] > limit {
		return &botError{code: IssueRepetition, msg: fmt.Sprintf("node %q of workflow %q was entered more than %d times in one turn (settings.nodeRepetitionLimit)", node, f.Workflow, limit)}
	}
	return nil
}

// handle turns a bot error into the error workflow; fatal errors pass.
func (r *run) handle(err error) error {
	var be *botError
	if !errors.As(err, &be) {
		return unwrapFatal(err)
	}
	f := r.top()
	var flow, node string
	if f != nil {
		flow, node = f.Workflow, f.Node
	}
	title := map[string]string{IssueCardError: "Error in a workflow card", IssueRepetition: "Node repetition limit reached",
		IssueStack: "Too many nested workflow calls"}[be.code]
	desc := be.msg
	if r.ptr != "" {
		desc = r.ptr + ": " + desc
	}
	r.out.Issues = append(r.out.Issues, Issue{Code: be.code, Title: title, Description: desc})
	if _, err := r.req("log", "level", "error", "message", title+": "+desc); err != nil {
		return unwrapFatal(err)
	}
	inError := slices.ContainsFunc(r.d.Stack, func(f *Frame) bool { return f.Workflow == "error" })
	r.d.Stack, r.d.Waiting, r.d.Attempts = nil, "", 0
	if _, ok := r.b.Doc.Workflows["error"]; !ok || inError {
		return nil
	}
	info := map[string]any{"code": be.code, "message": be.msg, "flowId": flow, "nodeId": node}
	if err := r.push("error", r.b.Doc.Workflows["error"].start, map[string]any{"error": info}); err != nil {
		return r.handle(err)
	}
	return r.exec()
}

// exec runs cards until the dialog waits or ends.
func (r *run) exec() error {
	for {
		f := r.top()
		if f == nil {
			return nil
		}
		node := r.b.Doc.Workflows[f.Workflow].Nodes[f.Node]
		r.ptr = Pointer("workflows", f.Workflow, "nodes", f.Node)
		var err error
		var stop bool
		if f.Card >= len(node.Cards) {
			switch {
			case node.Type == NodeEnd:
				stop = true
				err = r.end(false)
			case node.Next != "" && node.Type != NodeExit:
				err = r.enter(node.Next)
			default:
				err = r.ret()
			}
		} else {
			r.ptr += Pointer("cards", f.Card)
			stop, err = r.card(node.Cards[f.Card])
		}
		if err != nil {
			return r.handle(err)
		}
		if stop {
			return nil
		}
	}
}

// end ends the dialog; the end card also ends the session.
func (r *run) end(session bool) error {
	r.d.Stack, r.d.Waiting, r.d.Attempts, r.d.Timeout = nil, "", 0, 0
	if session {
		return r.resetSession()
	}
	return nil
}

// ret returns from the top workflow to its caller (or ends the dialog).
func (r *run) ret() error {
	r.d.Stack = r.d.Stack[:len(r.d.Stack)-1]
	caller := r.top()
	if caller == nil {
		return r.end(false)
	}
	raw, err := r.req("frame", "workflow", orEmpty(caller.Vars))
	if err != nil {
		return err
	}
	caller.Vars = nil
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	card := r.b.Doc.Workflows[caller.Workflow].Nodes[caller.Node].Cards[caller.Card]
	for _, k := range sortedKeys(card.outputMap) {
		if err := r.set(card.outputMap[k], out[k]); err != nil {
			return err
		}
	}
	caller.Card++
	return nil
}

// set assigns a variable "scope.name", converted to its declared type.
func (r *run) set(ref string, v any) error {
	scope, name, _ := strings.Cut(ref, ".")
	f := r.top()
	flow := ""
	if f != nil {
		flow = f.Workflow
	}
	cv, err := coerce(r.b.decl(flow, scope, name), v)
	if err != nil {
		return &botError{code: IssueCardError, msg: err.Error()}
	}
	_, err = r.req("set", "scope", scope, "name", name, "value", cv)
	return err
}

func (r *run) get(ref string) (any, error) {
	scope, name, _ := strings.Cut(ref, ".")
	raw, err := r.req("get", "scope", scope, "name", name)
	if err != nil {
		return nil, err
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return v, nil
}

func (r *run) eval(src string, value any, asBool bool) (json.RawMessage, error) {
	return r.req("eval", "src", src, "value", value, "bool", asBool)
}

func (r *run) truthy(src string, value any) (bool, error) {
	raw, err := r.eval(src, value, true)
	if err != nil {
		return false, err
	}
	return string(raw) == "true", nil
}

// renderString evaluates the {{ }} expressions of a template string.
func (r *run) renderString(s string) (string, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return "", &botError{code: IssueCardError, msg: err.Error()}
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.expr {
			b.WriteString(p.text)
			continue
		}
		raw, err := r.eval(p.text, nil, false)
		if err != nil {
			return "", err
		}
		b.WriteString(templateString(raw))
	}
	return b.String(), nil
}

// renderValue renders every string of a JSON value. A string that is one
// {{ expression }} and nothing else keeps the expression's value as is.
func (r *run) renderValue(v any) (any, error) { return mapStrings(v, r.renderRaw) }

// renderRaw renders one string for renderValue.
func (r *run) renderRaw(x string) (any, error) {
	parts, err := parseTemplate(x)
	if err != nil {
		return nil, &botError{code: IssueCardError, msg: err.Error()}
	}
	if len(parts) == 1 && parts[0].expr {
		raw, err := r.eval(parts[0].text, nil, false)
		if err != nil {
			return nil, err
		}
		var out any
		_ = json.Unmarshal(raw, &out)
		return out, nil
	}
	return r.renderString(x)
}

// mapStrings rebuilds a JSON value with every string replaced by leaf(s).
func mapStrings(v any, leaf func(string) (any, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return leaf(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			v, err := mapStrings(x[k], leaf)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			v, err := mapStrings(it, leaf)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return v, nil
}

// renderMessage renders a message: a template string is a text message.
func (r *run) renderMessage(raw json.RawMessage) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &botError{code: IssueCardError, msg: err.Error()}
	}
	if s, ok := v.(string); ok {
		text, err := r.renderString(s)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "text", "text": text}, nil
	}
	m, _ := v.(map[string]any)
	out := make(map[string]any, len(m))
	for _, k := range sortedKeys(m) {
		var err error
		if s, ok := m[k].(string); ok {
			out[k], err = r.renderString(s)
		} else {
			out[k], err = r.renderDeep(m[k])
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renderDeep renders strings as strings (never as raw values): payloads
// keep their shape.
func (r *run) renderDeep(v any) (any, error) {
	return mapStrings(v, func(s string) (any, error) { return r.renderString(s) })
}

func (r *run) send(p map[string]any) error {
	if !r.in.HasConversation {
		_, err := r.req("log", "level", "warn", "message", "message card skipped: this turn has no conversation (schedule trigger)")
		return err
	}
	if _, err := r.req("send", "payload", p); err != nil {
		return err
	}
	r.out.Sent++
	return nil
}

// card runs one card; stop means the turn is over (waiting or ended).
func (r *run) card(c *Card) (stop bool, err error) {
	f := r.top()
	switch c.Type {
	case CardMessage:
		p, err := r.renderMessage(c.Payload)
		if err == nil {
			err = r.send(p)
		}
		if err != nil {
			return false, err
		}
	case CardCode:
		if _, err := r.req("exec", "src", c.Code); err != nil {
			return false, err
		}
	case CardSet:
		var v any
		if c.Expression != "" {
			raw, err := r.eval(c.Expression, nil, false)
			if err != nil {
				return false, err
			}
			_ = json.Unmarshal(raw, &v)
		} else {
			_ = json.Unmarshal(c.Value, &v)
			if v, err = r.renderValue(v); err != nil {
				return false, err
			}
		}
		if err := r.set(c.Variable, v); err != nil {
			return false, err
		}
	case CardLog:
		msg, err := r.renderString(c.Message)
		if err != nil {
			return false, err
		}
		level := c.Level
		if level == "" {
			level = "info"
		}
		if _, err := r.req("log", "level", level, "message", msg); err != nil {
			return false, err
		}
	case CardAction:
		in, err := r.renderValue(orEmptyAny(c.Input))
		if err != nil {
			return false, err
		}
		raw, err := r.req("action", "name", c.Action, "input", in)
		if err != nil {
			return false, err
		}
		if c.outputVar != "" {
			var out any
			_ = json.Unmarshal(raw, &out)
			if err := r.set(c.outputVar, out); err != nil {
				return false, err
			}
		}
	case CardTableRead:
		filter, err := r.renderValue(orEmptyAny(c.Filter))
		if err != nil {
			return false, err
		}
		raw, err := r.req("client", "name", "findTableRows", "input", map[string]any{"table": c.Table, "filter": filter, "limit": 1})
		if err != nil {
			return false, err
		}
		var res struct{ Rows []any }
		_ = json.Unmarshal(raw, &res)
		var row any
		if len(res.Rows) > 0 {
			row = res.Rows[0]
		}
		if err := r.set(c.outputVar, row); err != nil {
			return false, err
		}
	case CardTableWrite:
		row, err := r.renderValue(orEmptyAny(c.Row))
		if err != nil {
			return false, err
		}
		in := map[string]any{"table": c.Table, "rows": []any{row}}
		if c.KeyColumn != "" {
			in["keyColumn"] = c.KeyColumn
		}
		if _, err := r.req("client", "name", "upsertTableRows", "input", in); err != nil {
			return false, err
		}
	case CardQueryKB:
		if err := r.queryKB(c); err != nil {
			return false, err
		}
	case CardHandoff:
		reason, err := r.renderString(c.Reason)
		if err != nil {
			return false, err
		}
		if _, err := r.req("client", "name", "requestHandoff", "input", map[string]any{"reason": reason}); err != nil {
			return false, err
		}
	case CardExpression:
		ok, err := r.truthy(c.Condition, nil)
		if err != nil {
			return false, err
		}
		if ok {
			return false, r.enter(c.To)
		}
	case CardAlways:
		return false, r.enter(c.To)
	case CardCapture, CardChoice:
		if c.SkipIfSet && c.Variable != "" {
			v, err := r.get(c.Variable)
			if err != nil {
				return false, err
			}
			if v != nil && v != "" {
				break
			}
		}
		if err := r.prompt(c); err != nil {
			return false, err
		}
		r.d.Waiting, r.d.Attempts = WaitCapture, 0
		return true, nil
	case CardWait:
		f.Card++
		r.d.Waiting = WaitInput
		return true, nil
	case CardTimeout:
		r.d.Timeout = c.Minutes
	case CardCall:
		in, err := r.renderValue(orEmptyAny(c.Input))
		if err != nil {
			return false, err
		}
		inputs, _ := in.(map[string]any)
		for k, v := range inputs {
			if inputs[k], err = coerce(r.b.flowVars[c.Workflow][k], v); err != nil {
				return false, &botError{code: IssueCardError, msg: err.Error()}
			}
		}
		return false, r.push(c.Workflow, r.b.Doc.Workflows[c.Workflow].start, inputs)
	case CardEnd:
		return true, r.end(true)
	}
	f.Card++
	return false, nil
}

func orEmptyAny(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func captureKind(c *Card) string {
	if c.Type == CardChoice {
		return "choice"
	}
	return c.Kind
}

func captureOptions(c *Card) []Option {
	if captureKind(c) == "boolean" && len(c.Options) == 0 {
		return []Option{{Label: "Yes", Value: "yes"}, {Label: "No", Value: "no"}}
	}
	return c.Options
}

// prompt sends a capture's question; choices become a choice message.
func (r *run) prompt(c *Card) error { return r.promptText(c, "") }

// promptText sends the prompt, or the retry text instead of the prompt's
// text when there is one (with the options again, if any).
func (r *run) promptText(c *Card, retry string) error {
	raw := c.Prompt
	if retry != "" {
		raw, _ = json.Marshal(retry)
	}
	if len(raw) == 0 {
		return nil
	}
	p, err := r.renderMessage(raw)
	if err != nil {
		return err
	}
	if opts := captureOptions(c); len(opts) > 0 && p["type"] == "text" {
		var os []any
		for _, o := range opts {
			label, err := r.renderString(o.Label)
			if err != nil {
				return err
			}
			os = append(os, map[string]any{"label": label, "value": o.value()})
		}
		p = map[string]any{"type": "choice", "text": p["text"], "options": os}
	}
	return r.send(p)
}

// resume feeds the message to what the dialog waits for.
func (r *run) resume() error {
	if r.d.Waiting == WaitInput {
		r.d.Waiting = ""
		return r.exec()
	}
	f := r.top()
	node := r.b.Doc.Workflows[f.Workflow].Nodes[f.Node]
	if f.Card >= len(node.Cards) {
		r.d.Waiting = ""
		return r.exec()
	}
	c := node.Cards[f.Card]
	r.ptr = Pointer("workflows", f.Workflow, "nodes", f.Node, "cards", f.Card)
	if err := r.answer(c); err != nil {
		if err == errWait {
			return nil
		}
		return r.handle(err)
	}
	return r.exec()
}

// answer handles the user's answer to a capture or choice card.
func (r *run) answer(c *Card) error {
	f := r.top()
	n := normalize(r.in.Text)
	for _, p := range c.Cancel {
		if normalize(p) == n && n != "" {
			r.d.Waiting, r.d.Attempts = "", 0
			if c.OnCancel != "" {
				return r.enter(c.OnCancel)
			}
			return r.end(false)
		}
	}
	kind := captureKind(c)
	opts := captureOptions(c)
	v, ok := extract(kind, r.in.Text, r.in.Value, opts, r.in.Now)
	if ok && c.Validation != "" {
		valid, err := r.truthy(c.Validation, v)
		if err != nil {
			return err
		}
		ok = valid
	}
	if ok && c.Variable != "" {
		scope, name, _ := strings.Cut(c.Variable, ".")
		if _, err := coerce(r.b.decl(f.Workflow, scope, name), v); err != nil {
			ok = false
		}
	}
	if ok {
		r.d.Waiting, r.d.Attempts = "", 0
		if c.Variable != "" {
			if err := r.set(c.Variable, v); err != nil {
				return err
			}
		}
		if c.Type == CardChoice {
			if o, found := matchOption(opts, r.in.Value, r.in.Text); found && o.To != "" {
				return r.enter(o.To)
			}
		}
		f.Card++
		return nil
	}
	r.d.Attempts++
	retries := 2
	if c.Retries != nil {
		retries = *c.Retries
	}
	if r.d.Attempts > retries {
		r.d.Waiting, r.d.Attempts = "", 0
		if c.OnFailure != "" {
			return r.enter(c.OnFailure)
		}
		f.Card++
		return nil
	}
	if err := r.promptText(c, c.RetryMsg); err != nil {
		return err
	}
	// Still waiting: the turn ends here.
	r.d.Waiting = WaitCapture
	return errWait
}

// errWait stops exec after a retry prompt.
var errWait = errors.New("waiting")
