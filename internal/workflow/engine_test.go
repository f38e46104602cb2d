package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/runtime"
)

var testEngine = runtime.New(runtime.Options{})

func mustParse(t *testing.T, doc string) *Bot {
	t.Helper()
	b, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return b
}

// texts renders the bot's payloads as previews.
func texts(ps []map[string]any) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = runtime.Preview(p)
	}
	return out
}

type step struct {
	say   string
	value string         // button value
	event map[string]any // a custom event instead
	want  []string
}

func converse(t *testing.T, l *Local, steps []step) {
	t.Helper()
	ctx := context.Background()
	for i, s := range steps {
		var got []map[string]any
		var err error
		switch {
		case s.event != nil:
			got, err = l.Event(ctx, s.event)
		case s.value != "":
			got, err = l.Message(ctx, map[string]any{"type": "text", "text": s.say, "value": s.value})
		default:
			got, err = l.Say(ctx, s.say)
		}
		if err != nil {
			t.Fatalf("step %d (%q): %v", i, s.say, err)
		}
		if g := texts(got); !slices.Equal(g, s.want) {
			t.Fatalf("step %d (%q): bot said %q, want %q\nlogs: %v\nproblems: %v\nissues: %v", i, s.say, g, s.want, l.Logs, l.Problems, l.Issues)
		}
	}
}

func doc(workflows string, extra ...string) string {
	s := `{"workflows": ` + workflows
	for _, e := range extra {
		s += ", " + e
	}
	return s + "}"
}

func TestSendMessageTemplatesAndPayloads(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"nodes": {
		"start": {"type": "start", "cards": [
			{"type": "set", "variable": "user.name", "value": "Ada"},
			{"type": "message", "payload": "Hello {{ user.name }}, you said {{ event.preview }} ({{ event.type }})"},
			{"type": "message", "payload": {"type": "image", "imageUrl": "https://x.test/{{ user.name }}.png"}},
			{"type": "message", "payload": {"type": "choice", "text": "Pick", "options": [{"label": "{{ user.name }}", "value": "a"}]}},
			{"type": "message", "payload": {"type": "card", "title": "T {{ 1 + 1 }}", "actions": [{"action": "url", "label": "Go", "value": "https://x.test"}]}},
			{"type": "message", "payload": {"type": "markdown", "markdown": "**{{ workflow.n || 0 }}**"}},
			{"type": "message", "payload": {"type": "location", "latitude": 1, "longitude": 2, "title": "Here"}},
			{"type": "message", "payload": {"type": "bloc", "items": [{"type": "text", "text": "a {{ 'b' }}"}]}},
			{"type": "message", "payload": "\\{{ literal }}"}
		]}}}}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{{say: "hi", want: []string{
		"Hello Ada, you said hi (text)", "[image] https://x.test/Ada.png", "Pick\n[Ada]", "T 2\n[Go]", "**0**",
		"[location] Here (1, 2)", "a b", "{{ literal }}"}}})
}

func TestCodeSetLogActionAndTransitions(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"variables": [{"name": "count", "type": "number", "default": 0}], "nodes": {
		"start": {"type": "start", "cards": [
			{"type": "code", "code": "workflow.count += 1; user.visits = (user.visits || 0) + 1; logger.info('visit', user.visits)"},
			{"type": "log", "level": "warn", "message": "count is {{ workflow.count }}"},
			{"type": "action", "action": "double", "input": {"n": "{{ user.visits }}", "label": "x{{ user.visits }}"}, "output": "workflow.doubled"},
			{"type": "expression", "condition": "workflow.doubled.n > 4", "to": "big"},
			{"type": "expression", "condition": "workflow.doubled.n > 2", "to": "medium"},
			{"type": "always", "to": "small"}
		]},
		"small": {"type": "standard", "cards": [{"type": "message", "payload": "small {{ workflow.doubled.n }} {{ workflow.doubled.label }}"}]},
		"medium": {"type": "standard", "cards": [{"type": "message", "payload": "medium {{ workflow.doubled.n }}"}]},
		"big": {"type": "end", "cards": [{"type": "message", "payload": "big {{ workflow.doubled.n }}"}]}
	}}}`, `"actions": {"double": {"code": "return { n: input.n * 2, label: input.label }"}}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{
		{say: "a", want: []string{"small 2 x1"}},
		{say: "b", want: []string{"medium 4"}},
		{say: "c", want: []string{"big 6"}},
	})
	var warn bool
	for _, lg := range l.Logs {
		if lg.Level == "warn" && lg.Message == "count is 1" {
			warn = true
		}
	}
	if !warn {
		t.Fatalf("log card line missing: %v", l.Logs)
	}
}

func TestCaptureKinds(t *testing.T) {
	cases := []struct {
		kind    string
		extra   string
		answers []string
		want    string
	}{
		{"raw", ``, []string{"anything at all"}, `"anything at all"`},
		{"number", ``, []string{"abc", "1,250.5"}, `1250.5`},
		{"email", ``, []string{"nope", "Ada@Example.org"}, `"ada@example.org"`},
		{"phone", ``, []string{"12", "+1 (555) 010-9999"}, `"+15550109999"`},
		{"boolean", ``, []string{"maybe", "Yes!"}, `true`},
		{"choice", `, "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}]`, []string{"medium", "large"}, `"l"`},
		{"date", ``, []string{"someday", "2025-03-01"}, `"2025-03-01"`},
		{"date", ``, []string{"tomorrow"}, `"2025-06-02"`},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			b := mustParse(t, doc(`{"main": {"nodes": {
				"start": {"type": "start", "cards": [
					{"type": "capture", "kind": "`+c.kind+`", "variable": "workflow.v", "prompt": "Give", "retryMessage": "Again"`+c.extra+`},
					{"type": "message", "payload": "got {{ JSON.stringify(workflow.v) }}"}
				]}}}}`))
			l := NewLocal(testEngine, b)
			l.Now = func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }
			ctx := context.Background()
			first, err := l.Say(ctx, "start")
			if err != nil || len(first) != 1 {
				t.Fatalf("prompt: %v %v", first, err)
			}
			var got []map[string]any
			for i, a := range c.answers {
				got, err = l.Say(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				if i < len(c.answers)-1 && (len(got) != 1 || !strings.HasPrefix(runtime.Preview(got[0]), "Again")) {
					t.Fatalf("retry of %q: %q", a, texts(got))
				}
			}
			if g := texts(got); len(g) != 1 || g[0] != "got "+c.want {
				t.Fatalf("got %q, want got %s (logs %v, issues %v)", g, c.want, l.Logs, l.Issues)
			}
		})
	}
}

func TestCaptureRetriesFailureValidationCancel(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"nodes": {
		"start": {"type": "start", "cards": [
			{"type": "capture", "kind": "number", "variable": "user.age", "prompt": "Age?", "retries": 1,
			 "retryMessage": "A number between 1 and 120 please", "validation": "value >= 1 && value <= 120",
			 "onFailure": "failed", "cancel": ["stop", "cancel"], "onCancel": "cancelled"},
			{"type": "message", "payload": "Age {{ user.age }}"}
		]},
		"failed": {"type": "end", "cards": [{"type": "message", "payload": "Giving up"}]},
		"cancelled": {"type": "end", "cards": [{"type": "message", "payload": "Cancelled"}]}
	}}}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{
		{say: "hi", want: []string{"Age?"}},
		{say: "500", want: []string{"A number between 1 and 120 please"}},
		{say: "x", want: []string{"Giving up"}},
		{say: "hi", want: []string{"Age?"}},
		{say: "Cancel", want: []string{"Cancelled"}},
		{say: "hi", want: []string{"Age?"}},
		{say: "42", want: []string{"Age 42"}},
	})
	if len(l.Issues) != 0 {
		t.Fatalf("issues: %v", l.Issues)
	}
}

func TestChoiceTransitionsValueThenLabel(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"nodes": {
		"start": {"type": "start", "cards": [
			{"type": "choice", "prompt": "Color?", "variable": "workflow.color", "options": [
				{"label": "Red", "value": "blue", "to": "red"}, {"label": "Blue", "value": "b", "to": "blue"}]}
		]},
		"red": {"type": "end", "cards": [{"type": "message", "payload": "red {{ workflow.color }}"}]},
		"blue": {"type": "end", "cards": [{"type": "message", "payload": "blue {{ workflow.color }}"}]}
	}}}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{
		{say: "hi", want: []string{"Color?\n[Red] [Blue]"}},
		// "blue" is the Red button's value: the value wins over the label.
		{say: "blue", want: []string{"red blue"}},
		{say: "hi", want: []string{"Color?\n[Red] [Blue]"}},
		{say: "BLUE!", value: "b", want: []string{"blue b"}},
		{say: "hi", want: []string{"Color?\n[Red] [Blue]"}},
		{say: "  ReD ", want: []string{"red blue"}},
	})
}

func TestWaitTimeoutCardCallWorkflowAndEnd(t *testing.T) {
	b := mustParse(t, doc(`{
		"main": {"nodes": {
			"start": {"type": "start", "cards": [
				{"type": "timeout", "minutes": 1},
				{"type": "message", "payload": "Say something"},
				{"type": "wait"},
				{"type": "call", "workflow": "greet", "input": {"name": "{{ event.preview }}"}, "output": {"greeting": "session.greeting"}},
				{"type": "message", "payload": "back: {{ session.greeting }}"},
				{"type": "end"},
				{"type": "message", "payload": "never"}
			]}}},
		"greet": {"variables": [{"name": "name", "type": "string", "input": true}, {"name": "greeting", "type": "string", "output": true}],
			"nodes": {
				"entry": {"type": "start", "next": "done", "cards": [{"type": "set", "variable": "workflow.greeting", "expression": "'Hi ' + workflow.name"}]},
				"done": {"type": "exit"}
			}}}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{
		{say: "hello", want: []string{"Say something"}},
		{say: "Bob", want: []string{"back: Hi Bob"}},
	})
	if l.Dialog.Active() || l.Dialog.Session != nil && len(l.Dialog.Session) > 0 {
		t.Fatalf("dialog after end = %+v", l.Dialog)
	}
}

func TestTriggersAndEventTrigger(t *testing.T) {
	b := mustParse(t, doc(`{
		"main": {"nodes": {"start": {"type": "start", "cards": [{"type": "message", "payload": "main"}]}}},
		"welcome": {"nodes": {"w": {"type": "start", "cards": [{"type": "message", "payload": "welcome {{ event.trigger.flowId }}/{{ event.trigger.nodeId }}"}]}}},
		"orders": {"nodes": {"o": {"type": "start", "cards": [{"type": "message", "payload": "orders"}]},
		                     "status": {"type": "standard", "cards": [{"type": "message", "payload": "status via {{ event.trigger.flowId }}/{{ event.trigger.nodeId }}"}]}}},
		"ping": {"nodes": {"p": {"type": "start", "cards": [{"type": "message", "payload": "pong {{ event.trigger.eventName }} {{ event.payload.n }}"}]}}}
	}`, `"intents": {
		"order_status": {"utterances": ["where is my order", "track my package", "order status"], "keywords": ["tracking number"]},
		"greeting": {"utterances": ["hello", "hi there", "good morning"]}
	}`, `"triggers": [
		{"type": "conversation_started", "workflow": "welcome"},
		{"type": "intent", "intent": "order_status", "workflow": "orders", "node": "status"},
		{"type": "event", "eventName": "ping", "workflow": "ping"}
	]`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{
		{say: "yo", want: []string{"welcome welcome/w"}},
		{say: "where is my order?", want: []string{"status via orders/status"}},
		{say: "I have a tracking number", want: []string{"status via orders/status"}},
		{say: "something else entirely", want: []string{"main"}},
		{event: map[string]any{"name": "ping", "n": 3}, want: []string{"pong ping 3"}},
		{event: map[string]any{"name": "other"}, want: nil},
	})
	if m := b.Classify("where's my order"); len(m) == 0 || m[0].Intent != "order_status" || m[0].Confidence < 0.5 {
		t.Fatalf("classify = %v", m)
	}
}

func TestScheduleTrigger(t *testing.T) {
	b := mustParse(t, doc(`{
		"main": {"nodes": {"start": {"type": "start", "cards": [{"type": "message", "payload": "ticks {{ bot.ticks }}"}]}}},
		"tick": {"nodes": {"t": {"type": "start", "cards": [{"type": "code", "code": "bot.ticks = (bot.ticks || 0) + 1"}]}}}
	}`, `"triggers": [{"type": "schedule", "cron": "*/5 * * * * *", "workflow": "tick"}]`))
	l := NewLocal(testEngine, b)
	ss := b.Schedules()
	if len(ss) != 1 {
		t.Fatal("no schedule")
	}
	next := ss[0].Spec.Next(time.Date(2025, 1, 1, 0, 0, 1, 0, time.UTC))
	if next != time.Date(2025, 1, 1, 0, 0, 5, 0, time.UTC) {
		t.Fatalf("next = %v", next)
	}
	for range 2 {
		if _, err := l.Schedule(context.Background(), ss[0].Trigger); err != nil {
			t.Fatal(err)
		}
	}
	converse(t, l, []step{{say: "hi", want: []string{"ticks 2"}}})
	if len(l.Triggers) != 2 || l.Triggers[0].FlowID != "tick" || l.Triggers[0].NodeID != "t" {
		t.Fatalf("triggers = %+v", l.Triggers)
	}
}

func TestErrorsLeadToErrorWorkflow(t *testing.T) {
	b := mustParse(t, doc(`{
		"main": {"nodes": {
			"start": {"type": "start", "cards": [{"type": "expression", "condition": "event.preview === 'loop'", "to": "loop"}, {"type": "code", "code": "throw new Error('boom')"}]},
			"loop": {"type": "standard", "cards": [{"type": "always", "to": "loop"}]}
		}},
		"error": {"nodes": {"e": {"type": "start", "cards": [{"type": "message", "payload": "Oops: {{ workflow.error.code }} at {{ workflow.error.nodeId }}"}]}}}
	}`, `"settings": {"nodeRepetitionLimit": 5}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{
		{say: "hi", want: []string{"Oops: workflow_error at start"}},
		{say: "loop", want: []string{"Oops: node_repetition_limit at loop"}},
	})
	if len(l.Issues) != 2 || l.Issues[0].Code != IssueCardError || !strings.Contains(l.Issues[0].Description, "boom") ||
		!strings.Contains(l.Issues[0].Description, "/workflows/main/nodes/start/cards/1") || l.Issues[1].Code != IssueRepetition {
		t.Fatalf("issues = %+v", l.Issues)
	}
}

func TestInactivityTimeout(t *testing.T) {
	b := mustParse(t, doc(`{
		"main": {"nodes": {"start": {"type": "start", "cards": [
			{"type": "capture", "kind": "raw", "variable": "session.name", "prompt": "Name?"},
			{"type": "message", "payload": "Hi {{ session.name }}"}]}}},
		"timeout": {"nodes": {"t": {"type": "start", "cards": [{"type": "message", "payload": "Timed out"}]}}}
	}`, `"settings": {"inactivityTimeout": 5}`))
	l := NewLocal(testEngine, b)
	now := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	l.Now = func() time.Time { return now }
	ctx := context.Background()
	converse(t, l, []step{{say: "hi", want: []string{"Name?"}}})
	if at := l.Dialog.TimeoutAt(b); !at.Equal(now.Add(5 * time.Minute)) {
		t.Fatalf("timeout at %v", at)
	}
	now = now.Add(4 * time.Minute)
	if got, _ := l.Timeout(ctx); len(got) != 0 || !l.Dialog.Active() {
		t.Fatalf("early timeout turn: %v %+v", texts(got), l.Dialog)
	}
	now = now.Add(2 * time.Minute)
	if got, _ := l.Timeout(ctx); !slices.Equal(texts(got), []string{"Timed out"}) || l.Dialog.Active() {
		t.Fatalf("timeout turn: %v %+v", texts(got), l.Dialog)
	}
	// Lazily: a message after the timeout runs the timeout workflow, then
	// starts afresh.
	converse(t, l, []step{{say: "hi", want: []string{"Name?"}}})
	now = now.Add(time.Hour)
	converse(t, l, []step{{say: "Ada", want: []string{"Timed out", "Name?"}}})
}

func TestEventStateShowsDialog(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"variables": [{"name": "x", "type": "number", "default": 7}], "nodes": {
		"start": {"type": "start", "cards": [
			{"type": "message", "payload": "{{ event.state.context.currentWorkflow }}/{{ event.state.context.currentNode }} x={{ event.state.workflow.x }} u={{ event.state.user.plan }}"}
		]}}}}`, `"variables": [{"name": "plan", "scope": "user", "type": "enum", "values": ["free", "pro"], "default": "free"}]`))
	converse(t, NewLocal(testEngine, b), []step{{say: "hi", want: []string{"main/start x=7 u=free"}}})
}

func TestHooksRun(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"nodes": {"start": {"type": "start", "cards": [{"type": "message", "payload": "echo {{ event.preview }}"}]}}}}`,
		`"hooks": {
			"before_incoming_message": "if (event.preview === 'secret') return { stop: true }; event.payload = { type: 'text', text: event.preview.toUpperCase() }",
			"before_outgoing_message": "event.payload.text += '!'"
		}`))
	converse(t, NewLocal(testEngine, b), []step{
		{say: "hi", want: []string{"echo HI!"}},
		{say: "secret", want: nil},
	})
}

func TestDialogSurvivesSerialization(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"nodes": {"start": {"type": "start", "cards": [
		{"type": "set", "variable": "workflow.a", "value": 1},
		{"type": "capture", "kind": "number", "variable": "workflow.b", "prompt": "b?"},
		{"type": "message", "payload": "sum {{ workflow.a + workflow.b }}"}]}}}}`))
	l := NewLocal(testEngine, b)
	converse(t, l, []step{{say: "go", want: []string{"b?"}}})
	raw, _ := json.Marshal(l.Dialog)
	// A new process: fresh engine and session, the dialog read back.
	l2 := NewLocal(runtime.New(runtime.Options{}), b)
	if err := json.Unmarshal(raw, &l2.Dialog); err != nil {
		t.Fatal(err)
	}
	converse(t, l2, []step{{say: "41", want: []string{"sum 42"}}})
	_ = fmt.Sprint
}

// TestWebhookTrigger: a webhook:event goes to the webhook trigger only,
// even on a conversation's first turn (never conversation_started), and
// to nothing in a bot without one.
func TestWebhookTrigger(t *testing.T) {
	flows := `{
		"main": {"nodes": {"start": {"type": "start", "cards": [{"type": "message", "payload": "main"}]}}},
		"welcome": {"nodes": {"w": {"type": "start", "cards": [{"type": "message", "payload": "welcome"}]}}},
		"hook": {"nodes": {"h": {"type": "start", "cards": [{"type": "message", "payload": "hook"}]}}}
	}`
	with := mustParse(t, doc(flows, `"triggers": [{"type": "conversation_started", "workflow": "welcome"},
		{"type": "webhook", "path": "/orders", "workflow": "main"}, {"type": "webhook", "workflow": "hook"}]`))
	without := mustParse(t, doc(flows, `"triggers": [{"type": "conversation_started", "workflow": "welcome"}]`))
	event := func(path string) Input {
		return InputFor(runtime.Event{Type: model.WebhookEventType, Payload: map[string]any{"body": map[string]any{}, "path": path}}, time.Now())
	}
	if in := event("/x"); in.Kind != InputWebhook || in.WebhookPath != "/x" {
		t.Fatalf("input = %+v", in)
	}
	for _, c := range []struct {
		name string
		bot  *Bot
		d    *Dialog
		path string
		want string
	}{
		{"first turn", with, nil, "", "hook"},
		{"later turn", with, &Dialog{Turns: 3}, "", "hook"},
		{"the trigger of its path", with, nil, "/orders", "main"},
		{"another path", with, nil, "/other", "hook"},
		{"no webhook trigger", without, nil, "", ""},
	} {
		got := ""
		if trig := c.bot.Route(c.d, event(c.path)); trig != nil {
			got = trig.Workflow
		}
		if got != c.want {
			t.Errorf("%s: routed to %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDriverAwaitsWhatIsAsync: whatever an expression, a code card or an
// action gives later, through a promise or another thenable (or throws
// later), is what the turn sees.
func TestDriverAwaitsWhatIsAsync(t *testing.T) {
	cases := []struct {
		name, cards, actions string
		want                 []string
	}{
		{"a condition that is a promise is its value, not a truthy object",
			`{"type": "expression", "condition": "Promise.resolve(false)", "to": "no"}, {"type": "message", "payload": "kept on"}`,
			``, []string{"kept on"}},
		{"a template's promise is awaited",
			`{"type": "message", "payload": "{{ Promise.resolve('later') }}"}`, ``, []string{"later"}},
		{"a code card's work after an await comes before the next card",
			`{"type": "code", "code": "await null; await Promise.resolve(); workflow.v = 'set late'"}, {"type": "message", "payload": "{{ workflow.v }}"}`,
			``, []string{"set late"}},
		{"an async action's result is its output",
			`{"type": "action", "action": "slow", "input": {"n": 2}, "output": "workflow.out"}, {"type": "message", "payload": "{{ workflow.out.n }}"}`,
			`"actions": {"slow": {"code": "await null; return { n: input.n * 10 }"}}`, []string{"20"}},
		{"a thenable that is not a promise is awaited too",
			`{"type": "action", "action": "th", "output": "workflow.out"}, {"type": "message", "payload": "{{ workflow.out }}"}`,
			`"actions": {"th": {"code": "return { then(ok) { ok('from then') } }"}}`, []string{"from then"}},
		{"a synchronous action's value is its output",
			`{"type": "action", "action": "now", "output": "workflow.out"}, {"type": "message", "payload": "{{ workflow.out }}"}`,
			`"actions": {"now": {"code": "return 'at once'"}}`, []string{"at once"}},
		{"a rejection after an await leads to the error workflow",
			`{"type": "code", "code": "await null; throw new Error('late boom')"}, {"type": "message", "payload": "not reached"}`,
			``, []string{"Oops: late boom"}},
		{"a synchronous throw in an expression leads to the error workflow",
			`{"type": "message", "payload": "{{ (() => { throw new Error('early boom') })() }}"}`,
			``, []string{"Oops: early boom"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			extra := []string{}
			if tc.actions != "" {
				extra = append(extra, tc.actions)
			}
			b := mustParse(t, doc(`{
				"main": {"nodes": {"start": {"type": "start", "cards": [`+tc.cards+`]}, "no": {"type": "end", "cards": [{"type": "message", "payload": "went to no"}]}}},
				"error": {"nodes": {"e": {"type": "start", "cards": [{"type": "message", "payload": "Oops: {{ workflow.error.message }}"}]}}}
			}`, extra...))
			converse(t, NewLocal(testEngine, b), []step{{say: "hi", want: tc.want}})
		})
	}
}

// TestIdleDialogUnchanged: a turn that starts and ends its workflow leaves
// the idle dialog it found as it was (its turn counter stops at 1, and an
// idle dialog keeps no activity time), so the service stores nothing for
// it; a waiting dialog keeps its last activity, for its timeout.
func TestIdleDialogUnchanged(t *testing.T) {
	b := mustParse(t, doc(`{"main": {"nodes": {
		"start": {"type": "start", "cards": [
			{"type": "expression", "condition": "event.preview === 'ask'", "to": "ask"},
			{"type": "message", "payload": "echo {{ event.preview }}"}]},
		"ask": {"type": "standard", "cards": [{"type": "capture", "kind": "raw", "variable": "workflow.x", "prompt": "x?"}]}}}}`))
	l := NewLocal(testEngine, b)
	now := time.UnixMilli(1_700_000_000_000)
	l.Now = func() time.Time { now = now.Add(time.Minute); return now }
	dialog := func() string { raw, _ := json.Marshal(l.Dialog); return string(raw) }
	converse(t, l, []step{{say: "a", want: []string{"echo a"}}})
	first := dialog()
	converse(t, l, []step{{say: "b", want: []string{"echo b"}}, {say: "c", want: []string{"echo c"}}})
	if d := dialog(); d != first || d != `{"turns":1}` {
		t.Fatalf("idle dialog after later turns: %s, after the first: %s", d, first)
	}
	converse(t, l, []step{{say: "ask", want: []string{"x?"}}})
	if l.Dialog.LastActivity != now.UnixMilli() || !l.Dialog.Active() {
		t.Fatalf("waiting dialog: %s (now %d)", dialog(), now.UnixMilli())
	}
	converse(t, l, []step{{say: "42", want: nil}})
	if d := dialog(); d != `{"turns":1}` {
		t.Fatalf("idle dialog after the capture: %s", d)
	}
}
