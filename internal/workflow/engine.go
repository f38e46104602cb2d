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
	// LastActivity is Unix milliseconds, kept while the dialog is active
	// (only an active dialog times out: TimeoutAt).
	LastActivity int64 `json:"lastActivity,omitempty"`
	// Timeout overrides the inactivity timeout, in minutes (timeout card).
	Timeout float64 `json:"timeout,omitempty"`
	// Turns is 0 until the conversation's first turn (the
	// conversation_started trigger), then 1. (It was a count, which no
	// rule read; a stored count stays as it is.) With LastActivity, a turn
	// that leaves an idle dialog as it found it changes none of it, and
	// then stores nothing (package turns).
	Turns int `json:"turns"`
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
	if r.in.Kind != InputSchedule && r.d.Turns == 0 {
		r.d.Turns = 1
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
	switch {
	case !r.d.Active():
		r.d.LastActivity = 0
	case changed && r.in.Kind != InputSchedule:
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
