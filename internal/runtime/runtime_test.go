package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

var created = time.Date(2025, 3, 1, 10, 0, 0, 120e6, time.UTC)

func textEvent(text string) Event {
	ev, err := NewMessageEvent("chat", model.Message{
		BotID: "bot1", ID: "msg1", ConversationID: "conv1", UserID: "user1",
		Payload: json.RawMessage(`{"type":"text","text":` + quote(text) + `}`), CreatedAt: created,
		Direction: model.DirectionIncoming,
	})
	if err != nil {
		panic(err)
	}
	ev.ID = "evt1"
	return ev
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// run runs one turn of code for bot1 (version v-<code hash-ish>) on ev.
func run(t testing.TB, e *Engine, code string, ev Event, mod ...func(*TurnInput)) (TurnResult, *fakeHost) {
	t.Helper()
	h := newFakeHost()
	in := TurnInput{BotID: "bot1", VersionID: fmt.Sprintf("v%d", len(code)), Code: code, Event: ev, Host: h,
		User: map[string]any{"id": "user1"}, Conversation: map[string]any{"id": "conv1"}}
	if ev.MessageID != "" {
		in.Message = map[string]any{"id": ev.MessageID, "createdAt": model.FormatTime(ev.CreatedOn), "payload": ev.Payload,
			"userId": ev.UserID, "conversationId": ev.ConversationID, "metadata": map[string]any{"foo": "bar"}}
	}
	for _, m := range mod {
		m(&in)
	}
	return e.RunTurn(context.Background(), in), h
}

func messages(res TurnResult) []string {
	var out []string
	for _, l := range res.Logs {
		out = append(out, l.Message)
	}
	return out
}

func problem(res TurnResult) string {
	if res.Problem == nil {
		return ""
	}
	return res.Problem.Code
}

func TestCompileErrors(t *testing.T) {
	e := New(Options{InitTimeout: 200 * time.Millisecond})
	for _, tc := range []struct {
		name, code string
		line, col  int
		contains   string
	}{
		{"ok", "console.log('top level'); bot.on.message('*', async () => {})", 0, 0, ""},
		{"unclosed", "bot.on.message('*', () => {\n  console.log('x')\n", 3, 1, "line 3 column 1"},
		{"bad token", "const a = 1\nconst b = ;\n", 2, 11, "line 2 column 11"},
		{"top-level throw", "\n\nnotDefined.x = 1\n", 3, 1, "notDefined is not defined"},
		{"bad hook name", "bot.hook('before_everything', () => {})", 1, 9, "unknown hook"},
		{"top-level loop", "while (true) {}", 0, 0, "did not finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Compile("v-"+tc.name, tc.code)
			if tc.contains == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var me *model.Error
			if !errorsAs(err, &me) || me.Type != model.ErrInvalidPayload {
				t.Fatalf("want InvalidPayload, got %#v", err)
			}
			if !strings.Contains(me.Message, tc.contains) {
				t.Errorf("message %q does not contain %q", me.Message, tc.contains)
			}
			if tc.line > 0 {
				if me.Metadata["line"] != tc.line || me.Metadata["column"] != tc.col {
					t.Errorf("metadata %v, want line %d column %d", me.Metadata, tc.line, tc.col)
				}
				if want := fmt.Sprintf("line %d column %d", tc.line, tc.col); !strings.Contains(me.Message, want) {
					t.Errorf("message %q lacks %q", me.Message, want)
				}
			}
		})
	}
	// A turn on code that does not compile is a compile_error problem.
	res, _ := run(t, e, "bot.on.message(", textEvent("hi"))
	if problem(res) != ProblemCompile {
		t.Fatalf("problem %v", res.Problem)
	}
}

func errorsAs(err error, me **model.Error) bool {
	e, ok := err.(*model.Error)
	*me = e
	return ok
}

func TestHandlersByType(t *testing.T) {
	e := New(Options{})
	code := `
bot.on.message('text', async ({event}) => console.log('text:' + event.preview))
bot.on.message('*', ({event}) => console.log('any-message:' + event.type))
bot.on.message('image', () => console.log('image'))
bot.on.event('chat:custom', ({event}) => console.log('custom:' + event.payload.foo))
bot.on.event('*', ({event}) => console.log('any-event:' + event.type))
bot.on.event('chat:other', () => console.log('other'))
`
	res, _ := run(t, e, code, textEvent("hello"))
	if got, want := messages(res), []string{"text:hello", "any-message:text"}; !slices.Equal(got, want) {
		t.Errorf("text: %q, want %q", got, want)
	}
	custom, _ := NewCustomEvent("chat", model.Event{BotID: "bot1", ID: "evt9", ConversationID: "conv1", UserID: "user1",
		Payload: json.RawMessage(`{"foo":"bar"}`), CreatedAt: created})
	res, _ = run(t, e, code, custom)
	if got, want := messages(res), []string{"custom:bar", "any-event:chat:custom"}; !slices.Equal(got, want) {
		t.Errorf("custom: %q, want %q", got, want)
	}
}

// jsEvent runs code whose handler logs JSON.stringify of a probe value,
// and returns the decoded log lines.
func TestEventObject(t *testing.T) {
	e := New(Options{})
	probe := `JSON.stringify({keys: Object.keys(event), isDate: event.createdOn instanceof Date,
	  iso: event.createdOn.toISOString(), json: event, ownMethods: Object.keys(event).filter(k => typeof event[k] === 'function' || k[0] === '_')})`
	code := `
bot.on.message('*', ({event}) => console.log(` + probe + `))
bot.on.event('*', ({event}) => console.log(` + probe + `))
bot.hook('before_outgoing_message', ({event}) => console.log(` + probe + `))
bot.on.message('text', async ({client, event}) => { await client.createMessage({conversationId: event.conversationId, payload: {type: 'text', text: 'reply'}, tags: {k: 'v'}}) })
`
	image, _ := NewMessageEvent("chat", model.Message{BotID: "bot1", ID: "msg2", ConversationID: "conv1", UserID: "user1",
		Payload: json.RawMessage(`{"type":"image","imageUrl":"https://x/y.png"}`), CreatedAt: created, Tags: map[string]string{"t": "1"}})
	image.ID = "evt2"
	custom, _ := NewCustomEvent("chat", model.Event{BotID: "bot1", ID: "evt3", ConversationID: "conv1", UserID: "user1",
		Payload: json.RawMessage(`{"foo":"bar","n":1}`), CreatedAt: created})
	state := `{"user":{},"conversation":{},"bot":{}}`
	msgKeys := []string{"botId", "conversationId", "createdOn", "direction", "id", "integration", "messageId", "payload", "preview", "state", "tags", "type", "userId"}
	evKeys := slices.DeleteFunc(slices.Clone(msgKeys), func(k string) bool { return k == "messageId" })

	type probeOut struct {
		Keys       []string        `json:"keys"`
		IsDate     bool            `json:"isDate"`
		ISO        string          `json:"iso"`
		JSON       json.RawMessage `json:"json"`
		OwnMethods []string        `json:"ownMethods"`
	}
	check := func(t *testing.T, line string, keys []string, wantJSON string) {
		t.Helper()
		var p probeOut
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if !slices.Equal(p.Keys, keys) {
			t.Errorf("keys %q, want %q", p.Keys, keys)
		}
		if !p.IsDate || len(p.OwnMethods) != 0 {
			t.Errorf("createdOn is a Date: %v; methods/underscore fields: %v", p.IsDate, p.OwnMethods)
		}
		if wantJSON != "" && string(p.JSON) != wantJSON {
			t.Errorf("event JSON\n got %s\nwant %s", p.JSON, wantJSON)
		}
	}

	t.Run("text message", func(t *testing.T) {
		ev := textEvent("Hello")
		res, h := run(t, e, code, ev)
		if res.Problem != nil || len(res.Logs) != 2 {
			t.Fatalf("problem %v logs %q", res.Problem, messages(res))
		}
		want := `{"botId":"bot1","conversationId":"conv1","createdOn":"2025-03-01T10:00:00.120Z","direction":"incoming","id":"evt1","integration":"chat","messageId":"msg1","payload":{"text":"Hello","type":"text"},"preview":"Hello","state":` + state + `,"tags":{"conversation":{},"message":{},"user":{}},"type":"text","userId":"user1"}`
		check(t, res.Logs[0].Message, msgKeys, want)
		// The Go JSON form is the same object.
		if j, _ := json.Marshal(ev); string(j) != want {
			t.Errorf("Go JSON\n got %s\nwant %s", j, want)
		}
		// Outgoing message, as seen by the before_outgoing hook.
		var p probeOut
		_ = json.Unmarshal([]byte(res.Logs[1].Message), &p)
		check(t, res.Logs[1].Message, evKeys, "")
		var out map[string]any
		_ = json.Unmarshal(p.JSON, &out)
		if out["direction"] != "outgoing" || out["type"] != "text" || out["preview"] != "reply" || out["integration"] != "chat" ||
			out["conversationId"] != "conv1" || out["userId"] != "user1" || out["botId"] != "bot1" || out["id"] == "" || out["id"] == "evt1" {
			t.Errorf("outgoing event %s", p.JSON)
		}
		if tags := out["tags"].(map[string]any); !reflect.DeepEqual(tags["message"], map[string]any{"k": "v"}) {
			t.Errorf("outgoing tags %v", tags)
		}
		if len(h.sent()) != 1 {
			t.Errorf("sent %v", h.sent())
		}
	})
	t.Run("image message", func(t *testing.T) {
		res, _ := run(t, e, code, image)
		want := `{"botId":"bot1","conversationId":"conv1","createdOn":"2025-03-01T10:00:00.120Z","direction":"incoming","id":"evt2","integration":"chat","messageId":"msg2","payload":{"imageUrl":"https://x/y.png","type":"image"},"preview":"[image] https://x/y.png","state":` + state + `,"tags":{"conversation":{},"message":{"t":"1"},"user":{}},"type":"image","userId":"user1"}`
		check(t, res.Logs[0].Message, msgKeys, want)
	})
	t.Run("custom event", func(t *testing.T) {
		res, _ := run(t, e, code, custom)
		want := `{"botId":"bot1","conversationId":"conv1","createdOn":"2025-03-01T10:00:00.120Z","direction":"incoming","id":"evt3","integration":"chat","payload":{"foo":"bar","n":1},"preview":"{\"foo\":\"bar\",\"n\":1}","state":` + state + `,"tags":{"conversation":{},"message":{},"user":{}},"type":"chat:custom","userId":"user1"}`
		check(t, res.Logs[0].Message, evKeys, want)
	})
	t.Run("kb and trigger only when set", func(t *testing.T) {
		ev := textEvent("x")
		ev.KB = &KB{Included: []any{map[string]any{"id": "kb1"}}, Results: []any{}}
		ev.Trigger = &Trigger{FlowID: "f1", NodeID: "n1"}
		res, _ := run(t, e, code, ev)
		var p probeOut
		_ = json.Unmarshal([]byte(res.Logs[0].Message), &p)
		want := []string{"botId", "conversationId", "createdOn", "direction", "id", "integration", "kb", "messageId", "payload", "preview", "state", "tags", "trigger", "type", "userId"}
		if !slices.Equal(p.Keys, want) {
			t.Errorf("keys %q", p.Keys)
		}
		if !strings.Contains(string(p.JSON), `"kb":{"included":[{"id":"kb1"}],"results":[]}`) || !strings.Contains(string(p.JSON), `"trigger":{"flowId":"f1","nodeId":"n1"}`) {
			t.Errorf("json %s", p.JSON)
		}
	})
	t.Run("bot code cannot corrupt the stored event", func(t *testing.T) {
		ev := textEvent("keep")
		mut := `bot.on.message('*', ({event, message}) => { event.payload.text = 'changed'; event.tags.user.x = '1'; event.botId = 'evil'; message.payload.text = 'changed' })`
		in := ev
		res, _ := run(t, e, mut, in, func(ti *TurnInput) { in = ti.Event })
		if res.Problem != nil || in.Payload["text"] != "keep" || in.Tags.User["x"] != "" || in.BotID != "bot1" {
			t.Errorf("event changed: %+v %v", in, res.Problem)
		}
	})
}

func TestHooks(t *testing.T) {
	e := New(Options{})
	order := `
bot.hook('before_incoming_message', ({event}) => console.log('before_incoming:' + event.preview))
bot.hook('after_incoming_message', () => console.log('after_incoming'))
bot.hook('after_turn_end', () => console.log('after_turn_end'))
bot.hook('before_outgoing_message', ({event}) => console.log('before_outgoing:' + event.direction))
bot.on.message('*', async ({client}) => { console.log('handler'); await client.createMessage({payload: {type: 'text', text: 'r'}}); console.log('sent') })
bot.on.event('*', () => console.log('event handler'))
`
	for _, tc := range []struct {
		name, code string
		ev         Event
		logs       []string
		sent       []string // texts stored
		stopped    bool
	}{
		{"order", order, textEvent("hi"),
			[]string{"before_incoming:hi", "handler", "before_outgoing:outgoing", "sent", "after_incoming", "after_turn_end"}, []string{"r"}, false},
		{"events skip message hooks", order, mustCustom(),
			[]string{"event handler", "after_turn_end"}, nil, false},
		{"stop", `
bot.hook('before_incoming_message', ({event}) => { if (event.preview === 'stop') return { stop: true } })
bot.hook('before_incoming_message', () => console.log('second hook'))
bot.on.message('*', () => console.log('handler'))
bot.hook('after_incoming_message', () => console.log('after_incoming'))
bot.hook('after_turn_end', () => console.log('after_turn_end'))`, textEvent("stop"),
			[]string{"after_turn_end"}, nil, true},
		{"async stop", `
bot.hook('before_incoming_message', async () => { await null; return { stop: true } })
bot.on.message('*', () => console.log('handler'))`, textEvent("x"), nil, nil, true},
		{"change incoming payload", `
bot.hook('before_incoming_message', ({event}) => { event.payload = { type: 'markdown', markdown: '**' + event.payload.text + '**' } })
bot.on.message('text', () => console.log('text handler'))
bot.on.message('markdown', ({event, message}) => console.log(event.type + ' ' + event.preview + ' ' + message.payload.type))`, textEvent("hi"),
			[]string{"markdown **hi** text"}, nil, false},
		{"mutate incoming payload", `
bot.hook('before_incoming_message', ({event}) => { event.payload.text = event.payload.text.toUpperCase() })
bot.on.message('*', ({event}) => console.log(event.payload.text + ' ' + event.preview))`, textEvent("hi"),
			[]string{"HI HI"}, nil, false},
		{"change outgoing payload", `
bot.hook('before_outgoing_message', ({event}) => { event.payload.text += '!' })
bot.hook('before_outgoing_message', async ({event}) => { await null; event.payload.text += '?' })
bot.on.message('*', async ({client}) => { const {message} = await client.createMessage({payload: {type: 'text', text: 'r'}}); console.log(message.payload.text) })`,
			textEvent("x"), []string{"r!?"}, []string{"r!?"}, false},
		{"drop outgoing", `
bot.hook('before_outgoing_message', ({event}) => { if (event.preview === 'secret') return { drop: true } })
bot.on.message('*', async ({client}) => {
  const a = await client.createMessage({payload: {type: 'text', text: 'secret'}})
  const b = await client.createMessage({payload: {type: 'text', text: 'public'}})
  console.log(JSON.stringify(a.message), b.message.payload.text) })`,
			textEvent("x"), []string{"null public"}, []string{"public"}, false},
		{"no createMessage in outgoing hook", `
bot.hook('before_outgoing_message', async ({client}) => { try { await client.createMessage({payload: {type: 'text', text: 'loop'}}) } catch (e) { console.log(e.message) } })
bot.on.message('*', async ({client}) => { await client.createMessage({payload: {type: 'text', text: 'r'}}) })`,
			textEvent("x"), []string{"client.createMessage cannot be called from a before_outgoing_message hook"}, []string{"r"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, h := run(t, e, tc.code, tc.ev)
			if res.Problem != nil {
				t.Fatalf("problem %+v", res.Problem)
			}
			if got := messages(res); !slices.Equal(got, tc.logs) {
				t.Errorf("logs %q, want %q", got, tc.logs)
			}
			var sent []string
			for _, m := range h.sent() {
				sent = append(sent, m["payload"].(map[string]any)["text"].(string))
			}
			if !slices.Equal(sent, tc.sent) {
				t.Errorf("sent %q, want %q", sent, tc.sent)
			}
			if res.Stopped != tc.stopped {
				t.Errorf("stopped %v", res.Stopped)
			}
		})
	}
}

func mustCustom() Event {
	ev, err := NewCustomEvent("chat", model.Event{BotID: "bot1", ID: "evt9", ConversationID: "conv1", UserID: "user1",
		Payload: json.RawMessage(`{"foo":"bar"}`), CreatedAt: created})
	if err != nil {
		panic(err)
	}
	return ev
}

func TestActionsAndClient(t *testing.T) {
	e := New(Options{})
	code := `
bot.action('add', async ({input, event}) => input.a + input.b + event.preview.length)
bot.on.message('*', async ({actions, client, event, message, user, conversation}) => {
  console.log(await actions.add({a: 1, b: 2}))
  console.log(message.metadata.foo, user.id, conversation.id)
  const {message: m} = await client.createMessage({conversationId: event.conversationId, payload: {type: 'text', text: 'one'}, metadata: {k: 1}})
  console.log((await client.getMessage({id: m.id})).message.metadata.k)
  console.log((await client.listMessages({})).messages.length)
  console.log((await client.getUser({id: 'u9'})).user.id, (await client.getConversation({id: 'c9'})).conversation.id)
  const {event: ev} = await client.createEvent({payload: {x: 1}})
  console.log(ev.payload.x)
  try { await client.getMessage({id: 'nope'}) } catch (e) { console.log(e.type, e.message) }
  try { await client.createMessage({payload: 'text'}) } catch (e) { console.log(e.name, e.message) }
  try { bot.action('late', () => 1) } catch (e) { console.log(e.message) }
})`
	res, h := run(t, e, code, textEvent("abcd"))
	want := []string{"7", "bar user1 conv1", "1", "1", "u9 c9", "1", "ResourceNotFound Message not found",
		"TypeError payload must be an object", "bot.action: handlers must be registered at the top level of the bot code"}
	if got := messages(res); !slices.Equal(got, want) || res.Problem != nil {
		t.Errorf("logs %q, want %q (problem %v)", got, want, res.Problem)
	}
	if len(h.events) != 1 || h.events[0]["conversationId"] != "conv1" {
		t.Errorf("events %v", h.events)
	}
}

func TestState(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', ({state, event}) => {
  if (event.preview === 'count') { state.user.n = (state.user.n || 0) + 1; state.bot = { last: 'count' } }
  if (event.preview === 'big') state.conversation.big = 'x'.repeat(70000)
  if (event.preview === 'array') state.user = [1]
  if (event.preview === 'read') console.log(JSON.stringify(event.state))
  if (event.preview === 'clear') { delete state.user.n; state.conversation = {} }
  if (event.preview === 'inherited') state.user = Object.create({ n: 5 })
})`
	in := States{User: json.RawMessage(`{"n": 1}`), Conversation: json.RawMessage(`{"a":true}`)}
	withStates := func(ti *TurnInput) { ti.States = in }
	res, _ := run(t, e, code, textEvent("count"), withStates)
	if string(res.States.User) != `{"n":2}` || res.States.Conversation != nil || string(res.States.Bot) != `{"last":"count"}` || res.Problem != nil {
		t.Errorf("states %s %s %s %v", res.States.User, res.States.Conversation, res.States.Bot, res.Problem)
	}
	res, _ = run(t, e, code, textEvent("read"), withStates)
	if got := messages(res); len(got) != 1 || got[0] != `{"user":{"n":1},"conversation":{"a":true},"bot":{}}` {
		t.Errorf("event.state %q", got)
	}
	if !reflect.DeepEqual(res.States, States{}) {
		t.Errorf("unchanged states reported: %+v", res.States)
	}
	// States left without a key (no JSON.stringify then, see finish in
	// prelude.js): each is {} whether it changed or not.
	res, _ = run(t, e, code, textEvent("clear"), withStates)
	if string(res.States.User) != `{}` || string(res.States.Conversation) != `{}` || res.States.Bot != nil || res.Problem != nil {
		t.Errorf("cleared states %s %s %s %v", res.States.User, res.States.Conversation, res.States.Bot, res.Problem)
	}
	res, _ = run(t, e, code, textEvent("clear"), func(ti *TurnInput) { ti.States = States{} })
	if !reflect.DeepEqual(res.States, States{}) {
		t.Errorf("no states, none kept: %+v", res.States)
	}
	res, _ = run(t, e, code, textEvent("inherited"), withStates)
	if string(res.States.User) != `{}` || res.States.Conversation != nil || res.Problem != nil {
		t.Errorf("inherited key: %s %s %v", res.States.User, res.States.Conversation, res.Problem)
	}
	res, _ = run(t, e, code, textEvent("big"), withStates)
	if problem(res) != ProblemStateTooLarge || !reflect.DeepEqual(res.States, States{}) {
		t.Errorf("big: %v %+v", res.Problem, res.States)
	}
	res, _ = run(t, e, code, textEvent("array"), withStates)
	if problem(res) != ProblemInvalidState {
		t.Errorf("array: %v", res.Problem)
	}
}

func TestLogs(t *testing.T) {
	e := New(Options{MaxLogLines: 5, MaxLogLineBytes: 64})
	code := `bot.on.message('*', ({logger, event}) => {
  if (event.preview === 'flood') { for (let i = 0; i < 20; i++) console.log(i); return }
  console.log('a', 1, {b: [2]}, null, undefined)
  console.warn('w'); console.error(new Error('boom')); console.debug('d'); logger.info('li')
})`
	res, _ := run(t, e, code, textEvent("x"))
	var got []string
	for _, l := range res.Logs {
		got = append(got, l.Level+" "+l.Message)
		if l.BotID != "bot1" || l.ConversationID != "conv1" || l.UserID != "user1" || l.EventID != "evt1" || l.Time.IsZero() {
			t.Errorf("log fields %+v", l)
		}
	}
	want := []string{`info a 1 {"b":[2]} null undefined`, "warn w", "error Error: boom\n\tat bot.js:4:", "debug d", "info li"}
	for i := range want {
		if i >= len(got) || !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("log %d: %q, want prefix %q", i, got, want[i])
			break
		}
	}
	res, _ = run(t, e, code, textEvent("flood"))
	if len(res.Logs) != 6 || res.Logs[5].Level != "warn" || !strings.HasPrefix(res.Logs[5].Message, "15 log lines dropped") {
		t.Errorf("flood: %q", messages(res))
	}
	long, _ := run(t, e, `bot.on.message('*', () => console.log('é'.repeat(100)))`, textEvent("x"))
	if m := long.Logs[0].Message; len(m) > 64+len("…") || !strings.HasSuffix(m, "…") {
		t.Errorf("long line %d bytes: %q", len(m), m)
	}
}

func TestFailures(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct {
		name, body, code string
		caught           string
	}{
		{"thrown error", `throw new Error('bad')`, ProblemUncaught, "Error: bad"},
		{"thrown string", `throw 'bad'`, ProblemUncaught, "bad"},
		{"rejected promise", `await Promise.reject(new Error('nope'))`, ProblemUncaught, "Error: nope"},
		{"floating rejection", `Promise.reject(new Error('lost'))`, ProblemRejection, "Error: lost"},
		{"never settles", `await new Promise(() => {})`, ProblemPending, ""},
		{"oversized message", `await client.createMessage({payload: {type: 'text', text: 'x'.repeat(1100000)}})`, ProblemOutputTooLarge, "limit is 1048576"},
		{"oversized caught anyway", `try { await client.createMessage({payload: {type: 'text', text: 'x'.repeat(1100000)}}) } catch (e) {}`, ProblemOutputTooLarge, ""},
		{"too many calls", `for (;;) await client.getUser({id: 'u'})`, ProblemOutputTooLarge, "client calls"},
		{"stack overflow", `function f() { return f() + 1 }; f()`, ProblemUncaught, "Maximum call stack size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, h := run(t, e, `bot.on.message('*', async ({client}) => { `+tc.body+` })`, textEvent("x"),
				func(ti *TurnInput) { ti.States.User = json.RawMessage(`{}`) })
			if problem(res) != tc.code || res.Err != nil {
				t.Fatalf("problem %+v err %v", res.Problem, res.Err)
			}
			if !strings.Contains(res.Problem.Description, tc.caught) {
				t.Errorf("description %q lacks %q", res.Problem.Description, tc.caught)
			}
			if last := res.Logs[len(res.Logs)-1]; last.Level != "error" || !strings.HasPrefix(last.Message, res.Problem.Title) {
				t.Errorf("problem not logged: %+v", res.Logs)
			}
			if len(h.sent()) != 0 {
				t.Errorf("sent %v", h.sent())
			}
			// The bot still works on the next turn.
			ok, _ := run(t, e, `bot.on.message('*', () => console.log('ok'))`, textEvent("x"))
			if ok.Problem != nil {
				t.Errorf("next turn: %v", ok.Problem)
			}
		})
	}
	t.Run("host failure is not the bot's", func(t *testing.T) {
		res, _ := run(t, e, `bot.on.message('*', async ({client}) => { try { await client.getUser({id: 'boom'}) } catch (e) { console.log('caught?') } })`, textEvent("x"))
		if res.Err == nil || res.Problem != nil || strings.Contains(strings.Join(messages(res), ""), "fire") {
			t.Errorf("err %v problem %v logs %q", res.Err, res.Problem, messages(res))
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		res := e.RunTurn(ctx, TurnInput{BotID: "bot1", VersionID: "vc", Code: `bot.on.message('*', () => { for (;;) {} })`, Event: textEvent("x"), Host: newFakeHost()})
		if res.Err != context.Canceled || res.Problem != nil {
			t.Errorf("err %v problem %v", res.Err, res.Problem)
		}
	})
}

func TestInfiniteLoopStoppedWithinBudget(t *testing.T) {
	e := New(Options{})
	const budget = 200 * time.Millisecond
	for _, body := range []string{`while (true) {}`, `for (;;) { JSON.stringify({a: [1, 2, 3]}) }`, `await (async function spin() { for (;;) await null })()`} {
		t.Run(body, func(t *testing.T) {
			start := time.Now()
			res, _ := run(t, e, `bot.on.message('*', async () => { `+body+` })`, textEvent("x"), func(ti *TurnInput) { ti.Timeout = budget })
			// The call returns about when its budget ends: the slack is for
			// compiling the code and for a machine loaded by the whole
			// suite under -race (300.4 ms once against a slack of 100 ms).
			// What tells the loop was stopped is the problem: interrupted,
			// not abandoned after stuckGrace (still spinning).
			took := time.Since(start)
			if took > budget+time.Second {
				t.Errorf("took %s, budget %s", took, budget)
			}
			if problem(res) != ProblemTimeout || !strings.Contains(res.Problem.Description, "200ms") ||
				strings.Contains(res.Problem.Description, "abandoned") || len(res.Logs) == 0 {
				t.Errorf("problem %+v logs %q", res.Problem, messages(res))
			}
		})
	}
	// The budget is capped at MaxTimeout.
	if got := New(Options{MaxTimeout: time.Second}).budget(2 * time.Minute); got != time.Second {
		t.Errorf("budget %s", got)
	}
}

func TestSandbox(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', () => {
  const names = ['require', 'process', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'XMLHttpRequest',
    'WebSocket', 'module', 'exports', '__dirname', 'Deno', 'Bun', 'Buffer', 'global', 'importScripts']
  console.log(names.filter(n => typeof globalThis[n] !== 'undefined').join(',') || 'none')
  console.log(Function('return typeof require + typeof process')())
  console.log(eval('typeof fetch'), bot.constructor.constructor('return typeof process')())
  console.log(Object.getOwnPropertyNames(globalThis).filter(n => !std.includes(n)).join(','))
  try { eval('import("fs")') } catch (e) { console.log('import:', e.name) }
})
const std = Object.getOwnPropertyNames(globalThis).filter(n => n !== 'bot' && n !== 'console')
`
	res, _ := run(t, e, code, textEvent("x"))
	want := []string{"none", "undefinedundefined", "undefined undefined", "bot,console", "import: SyntaxError"}
	if got := messages(res); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// Go values are never handed over by reference: a host result is a
	// plain JS object, with no Go methods.
	res, _ = run(t, e, `bot.on.message('*', async ({client}) => {
  const {user} = await client.getUser({id: 'u'})
  console.log(Object.getPrototypeOf(user) === Object.prototype, Object.keys(user).join(','))
})`, textEvent("x"))
	if got := messages(res); len(got) != 1 || got[0] != "true createdAt,id,updatedAt" {
		t.Errorf("host values: %q %v", got, res.Problem)
	}
}

func TestSizeGuards(t *testing.T) {
	e := New(Options{})
	// Sizes: the turn ends (memory_limit), whatever try says.
	for _, expr := range []string{`'x'.repeat(1e9)`, `'x'.padStart(1e9)`, `new Array(1e9)`, `Array(1e9)`, `Array.from({length: 1e9})`,
		`[].concat.call({length: 1e9})`, `Array.prototype.join.call({length: 1e9}, 'x')`, `new ArrayBuffer(1e10)`, `new Float64Array(1e8)`,
		`new Uint8Array({length: 1e9})`} {
		t.Run(expr, func(t *testing.T) {
			start := time.Now()
			res, _ := run(t, e, `bot.on.message('*', () => { try { `+expr+`; console.log('allowed') } catch (e) { console.log(e.name) } })`, textEvent("x"))
			if problem(res) != ProblemMemory || !strings.Contains(res.Problem.Description, "sandbox limit") || len(res.Logs) != 1 || time.Since(start) > time.Second {
				t.Errorf("got %q %v in %s", messages(res), res.Problem, time.Since(start))
			}
		})
	}
	// Argument counts and nesting: a RangeError, as JS engines throw.
	for _, expr := range []string{`Math.max.apply(null, {length: 1e9})`, `Reflect.apply(Math.max, null, {length: 1e9})`,
		`(() => { let o = {}; for (let i = 0; i < 5000; i++) o = {a: o}; return JSON.stringify(o) })()`} {
		t.Run(expr, func(t *testing.T) {
			start := time.Now()
			res, _ := run(t, e, `bot.on.message('*', () => { try { `+expr+`; console.log('allowed') } catch (e) { console.log(e.name) } })`, textEvent("x"))
			if got := messages(res); len(got) != 1 || got[0] != "RangeError" || time.Since(start) > time.Second {
				t.Errorf("got %q %v in %s", got, res.Problem, time.Since(start))
			}
		})
	}
	// Ordinary uses still work, instanceof included.
	res, _ := run(t, e, `bot.on.message('*', () => {
  class L extends Array {}
  const l = new L(); l.push(1)
  console.log([new Array(3) instanceof Array, [] instanceof Array, l instanceof L, l instanceof Array, [].constructor === Array,
    new Uint8Array(new ArrayBuffer(4)).length, Uint8Array.from([1, 2]).length, [3, 1, 2].sort().join(''), 'ab'.repeat(2),
    JSON.stringify({a: [1, {b: null}]}), Math.max.apply(null, [1, 5, 2])].join(' '))
})`, textEvent("x"))
	if got := messages(res); len(got) != 1 || got[0] != `true true true true true 4 2 123 abab {"a":[1,{"b":null}]} 5` {
		t.Errorf("got %q %v", got, res.Problem)
	}
}

func TestMemoryHungryCode(t *testing.T) {
	e := New(Options{MaxHeapBytes: 256 << 20})
	// Every push keeps a new 1 MB string alive.
	code := `bot.on.message('*', () => {
  let s = 'x'; while (s.length < (1 << 20)) s += s
  const hog = []; for (let i = 0; ; i++) hog.push(s + i)
})`
	start := time.Now()
	res, _ := run(t, e, code, textEvent("x"), func(ti *TurnInput) { ti.Timeout = 20 * time.Second })
	if problem(res) != ProblemMemory {
		t.Fatalf("problem %+v after %s", res.Problem, time.Since(start))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
	ok, _ := run(t, e, `bot.on.message('*', () => console.log('alive'))`, textEvent("x"))
	if got := messages(ok); len(got) != 1 {
		t.Errorf("after: %q %v", got, ok.Problem)
	}
}

func TestBotsDoNotShareGlobals(t *testing.T) {
	e := New(Options{})
	code := `var seen = globalThis.seen || 'none'; globalThis.seen = 'set';
bot.on.message('*', ({event}) => { console.log(String(globalThis.mark)); globalThis.mark = event.botId })`
	for _, bot := range []string{"a", "b"} {
		ev := textEvent("x")
		ev.BotID = bot
		res := e.RunTurn(context.Background(), TurnInput{BotID: bot, VersionID: "same", Code: code, Event: ev, Host: newFakeHost()})
		if got := messages(res); len(got) != 1 || got[0] != "undefined" {
			t.Errorf("bot %s sees %q", bot, got)
		}
	}
}

func TestConcurrentBots(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', async ({client, event, state}) => {
  state.conversation.n = (state.conversation.n || 0) + 1
  globalThis.who = event.botId
  await client.createMessage({payload: {type: 'text', text: event.botId + ':' + event.preview}})
  if (globalThis.who !== event.botId) throw new Error('globals leaked')
})`
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			bot := fmt.Sprintf("bot%d", g)
			h := newFakeHost()
			for i := 0; i < 40; i++ {
				ev := textEvent(fmt.Sprint(i))
				ev.BotID = bot
				res := e.RunTurn(context.Background(), TurnInput{BotID: bot, VersionID: "v" + fmt.Sprint(g%3), Code: code, Event: ev, Host: h})
				if res.Problem != nil || res.Err != nil || string(res.States.Conversation) != `{"n":1}` {
					t.Errorf("%s turn %d: %+v %v %s", bot, i, res.Problem, res.Err, res.States.Conversation)
					return
				}
			}
			for i, m := range h.sent() {
				if got := m["payload"].(map[string]any)["text"]; got != fmt.Sprintf("%s:%d", bot, i) {
					t.Errorf("%s message %d = %v", bot, i, got)
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{`{"type":"text","text":"Hello *you*"}`, "Hello *you*"},
		{`{"type":"markdown","markdown":"**bold**"}`, "**bold**"},
		{`{"type":"image","imageUrl":"https://x/i.png"}`, "[image] https://x/i.png"},
		{`{"type":"audio","audioUrl":"https://x/a.mp3"}`, "[audio] https://x/a.mp3"},
		{`{"type":"video","videoUrl":"https://x/v.mp4"}`, "[video] https://x/v.mp4"},
		{`{"type":"file","fileUrl":"https://x/f.pdf","title":"Report"}`, "[file] Report (https://x/f.pdf)"},
		{`{"type":"file","fileUrl":"https://x/f.pdf"}`, "[file] https://x/f.pdf"},
		{`{"type":"location","latitude":45.5,"longitude":-73.6,"title":"Office","address":"1 Main St"}`, "[location] Office, 1 Main St (45.5, -73.6)"},
		{`{"type":"location","latitude":1,"longitude":2}`, "[location] (1, 2)"},
		{`{"type":"card","title":"T","subtitle":"S","imageUrl":"https://x/i.png","actions":[{"action":"url","label":"Open","value":"u"},{"action":"say","label":"Hi","value":"hi"}]}`, "T\nS\n[Open] [Hi]"},
		{`{"type":"carousel","items":[{"type":"card","title":"A","actions":[]},{"type":"card","title":"B","actions":[{"action":"postback","label":"Go","value":"go"}]}]}`, "A\n\nB\n[Go]"},
		{`{"type":"choice","text":"Pick","options":[{"label":"Yes","value":"y"},{"label":"No","value":"n"}]}`, "Pick\n[Yes] [No]"},
		{`{"type":"dropdown","text":"Pick","options":[{"label":"A","value":"a"}]}`, "Pick\n[A]"},
		{`{"type":"bloc","items":[{"type":"text","text":"Hello"},{"type":"image","imageUrl":"https://x/i.png"},{"type":"image","payload":{"imageUrl":"https://x/j.png"}}]}`, "Hello\n[image] https://x/i.png\n[image] https://x/j.png"},
		{`{"foo":"bar"}`, `{"foo":"bar"}`},
	} {
		var p map[string]any
		_ = json.Unmarshal([]byte(tc.payload), &p)
		if got := Preview(p); got != tc.want {
			t.Errorf("Preview(%s) = %q, want %q", tc.payload, got, tc.want)
		}
	}
	big := map[string]any{"x": strings.Repeat("y", 5000)}
	if got := Preview(big); len(got) != maxFallbackPreview+len("…") {
		t.Errorf("fallback preview %d bytes", len(got))
	}
}

func TestNewEvents(t *testing.T) {
	if _, err := NewMessageEvent("chat", model.Message{Payload: json.RawMessage(`[1]`)}); model.TypeOf(err) != model.ErrInvalidPayload {
		t.Errorf("err %v", err)
	}
	ev, err := NewCustomEvent("chat", model.Event{BotID: "b", ConversationID: "c", UserID: "u", Type: "ping", Payload: json.RawMessage(`{}`), CreatedAt: created})
	if err != nil || ev.Type != "chat:ping" || ev.ID == "" || ev.MessageID != "" || ev.Direction != "incoming" {
		t.Errorf("%+v %v", ev, err)
	}
}

// BenchmarkTrivialTurn: event built from a stored message, one
// before_incoming hook, one handler replying through client.createMessage
// into a slice-backed fake Host.
func BenchmarkTrivialTurn(b *testing.B) {
	e := New(Options{})
	code := `
bot.hook('before_incoming_message', ({event}) => { if (event.preview === 'stop') return { stop: true } })
bot.on.message('text', async ({client, event}) => {
  await client.createMessage({conversationId: event.conversationId, payload: {type: 'text', text: 'You said: ' + event.preview}})
})`
	h := &sliceHost{}
	msg := model.Message{BotID: "bot1", ID: "msg1", ConversationID: "conv1", UserID: "user1",
		Payload: json.RawMessage(`{"type":"text","text":"hello"}`), CreatedAt: created}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ev, _ := NewMessageEvent("chat", msg)
		res := e.RunTurn(ctx, TurnInput{BotID: "bot1", VersionID: "v1", Code: code, Event: ev, Host: h})
		if res.Problem != nil || res.Err != nil {
			b.Fatal(res.Problem, res.Err)
		}
	}
	if len(h.msgs) == 0 {
		b.Fatal("no reply stored")
	}
}

// sliceHost stores replies into a slice, doing as little as possible.
type sliceHost struct {
	fakeHost
	msgs []map[string]any
}

func (h *sliceHost) CreateMessage(ctx context.Context, conv string, payload, metadata json.RawMessage, tags map[string]string) (func() map[string]any, error) {
	m := map[string]any{"id": "m", "createdAt": "2025-03-01T10:00:00.000Z", "payload": payload, "userId": "bot", "conversationId": conv}
	h.msgs = append(h.msgs, m)
	return func() map[string]any { return m }, nil
}

// TestTurnPaths covers the prelude's synchronous path (no thenable returned),
// its switch to the async continuation, and the state serialization paths.
func TestTurnPaths(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct {
		name, code string
		logs       []string
		problem    string
		desc       string
		stopped    bool
	}{
		{"sync throw in handler", `bot.on.message('*', () => { throw new Error('sync bad') })`, nil, ProblemUncaught, "Error: sync bad", false},
		{"sync throw in hook", `bot.hook('before_incoming_message', () => { throw new TypeError('hook bad') })
bot.on.message('*', () => console.log('handler'))`, nil, ProblemUncaught, "TypeError: hook bad", false},
		{"throw after an await", `bot.on.message('*', async () => { await null })
bot.hook('after_turn_end', () => { throw new Error('late') })`, nil, ProblemUncaught, "Error: late", false},
		{"sync handler returns a rejection", `bot.on.message('*', () => Promise.reject(new Error('rej')))`, nil, ProblemUncaught, "Error: rej", false},
		{"pending after sync start", `bot.on.message('*', () => console.log('a'))
bot.on.message('*', () => new Promise(() => {}))`, []string{"a"}, ProblemPending, "", false},
		{"mixed sync and async", `bot.hook('before_incoming_message', ({event}) => { event.payload.text += '1' })
bot.hook('before_incoming_message', async ({event}) => { await null; event.payload.text += '2' })
bot.on.message('*', ({event}) => console.log('h1 ' + event.preview))
bot.on.message('*', async () => { await null; console.log('h2') })
bot.on.message('*', () => console.log('h3'))
bot.hook('after_incoming_message', () => console.log('after'))
bot.hook('after_turn_end', async () => console.log('end'))`, []string{"h1 x12", "h2", "h3", "after", "end"}, "", "", false},
		{"sync stop", `bot.hook('before_incoming_message', () => ({stop: true}))
bot.on.message('*', () => console.log('handler'))
bot.hook('after_turn_end', () => console.log('end'))`, []string{"end"}, "", "", true},
		{"thenable stop", `bot.hook('before_incoming_message', () => ({then(r) { r({stop: true}) }}))
bot.on.message('*', () => console.log('handler'))`, nil, "", "", true},
		{"handler changes event.type", `bot.on.message('*', ({event}) => { event.type = 'other' })
bot.on.message('text', () => console.log('text'))
bot.on.message('other', () => console.log('other'))`, []string{"other"}, "", "", false},
		{"toJSON state", `bot.on.message('*', ({state}) => { state.user = {toJSON(k) { return {key: k} }} })`, nil, "", "", false},
		{"null state", `bot.on.message('*', ({state}) => { state.user = null; state.bot = undefined })`, nil, "", "", false},
		{"function state", `bot.on.message('*', ({state}) => { state.bot = () => 1 })`, nil, ProblemInvalidState, "state.bot", false},
		{"deep state", `bot.on.message('*', ({state}) => { let o = {}; state.bot = o; for (let i = 0; i < 1200; i++) o = o.x = {} })`, nil, ProblemUncaught, "nested deeper", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := run(t, e, tc.code, textEvent("x"), func(ti *TurnInput) {
				ti.States = States{User: json.RawMessage(`{"a":1}`), Bot: json.RawMessage(`{"b":2}`)}
			})
			if problem(res) != tc.problem || res.Err != nil {
				t.Fatalf("problem %+v err %v logs %q", res.Problem, res.Err, messages(res))
			}
			if tc.problem != "" {
				if !strings.Contains(res.Problem.Description, tc.desc) {
					t.Errorf("description %q lacks %q", res.Problem.Description, tc.desc)
				}
				return
			}
			if got := messages(res); !slices.Equal(got, tc.logs) {
				t.Errorf("logs %q, want %q", got, tc.logs)
			}
			if res.Stopped != tc.stopped {
				t.Errorf("stopped %v", res.Stopped)
			}
			switch tc.name {
			case "toJSON state":
				if string(res.States.User) != `{"key":""}` || res.States.Bot != nil {
					t.Errorf("states %+v", res.States)
				}
			case "null state":
				if string(res.States.User) != `{}` || string(res.States.Bot) != `{}` || res.States.Conversation != nil {
					t.Errorf("states %+v", res.States)
				}
			}
		})
	}
	t.Run("states with tricky strings", func(t *testing.T) {
		code := `bot.on.message('*', ({state}) => {
  state.user.s = '",[]{}\\"\u2028é'
  state.conversation = {a: [1, {b: '],['}], c: null}
  state.bot.n = -0.5 })`
		res, _ := run(t, e, code, textEvent("x"), func(ti *TurnInput) {
			ti.States = States{User: json.RawMessage(`not json`), Conversation: json.RawMessage(`[1]`), Bot: json.RawMessage(`{ "n" : 1 }`)}
		})
		want := States{User: json.RawMessage(`{"s":"\",[]{}\\\"` + "\u2028" + `é"}`),
			Conversation: json.RawMessage(`{"a":[1,{"b":"],["}],"c":null}`), Bot: json.RawMessage(`{"n":-0.5}`)}
		if res.Problem != nil || !reflect.DeepEqual(res.States, want) {
			t.Errorf("states %s %s %s, want %s %s %s (%v)", res.States.User, res.States.Conversation, res.States.Bot,
				want.User, want.Conversation, want.Bot, res.Problem)
		}
		// Stored JSON that is the same as the result, but not compact, is not rewritten.
		res, _ = run(t, e, `bot.on.message('*', () => {})`, textEvent("x"), func(ti *TurnInput) {
			ti.States = States{User: json.RawMessage(`{ "a" : [1, 2] }`), Conversation: json.RawMessage(`null`)}
		})
		if res.Problem != nil || !reflect.DeepEqual(res.States, States{}) {
			t.Errorf("unchanged states %+v %v", res.States, res.Problem)
		}
	})
}

func TestSplitArray3(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [3]string
		ok   bool
	}{
		{`[{},{},{}]`, [3]string{`{}`, `{}`, `{}`}, true},
		{`[{"a":"x,]\"y"},{"b":[1,2]},{"c":{"d":[]}}]`, [3]string{`{"a":"x,]\"y"}`, `{"b":[1,2]}`, `{"c":{"d":[]}}`}, true},
		{`[{"a":"\\"},{},{}]`, [3]string{`{"a":"\\"}`, `{}`, `{}`}, true},
		{`[{},{}]`, [3]string{}, false},
		{`[{},{},{},{}]`, [3]string{}, false},
		{`{}`, [3]string{}, false},
	} {
		got, ok := splitArray3(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("splitArray3(%s) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestStringifyDepthGuard checks the depth guard before JSON.stringify on
// both of its paths: the Go walk for small values, the JS walk otherwise.
func TestStringifyDepthGuard(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', () => {
  const nest = (n, leaf) => { let o = leaf; for (let i = 0; i < n; i++) o = {x: o}; return o }
  const tryIt = (name, v) => { try { JSON.stringify(v); console.log(name + ' ok') } catch (e) { console.log(name + ' ' + e.name) } }
  tryIt('flat', {a: 1, b: 'x', c: [1, 2, {d: null}], f: () => 1})
  tryIt('wide', Array.from({length: 2000}, (_, i) => ({i})))
  tryIt('deep', nest(1200, 1))
  tryIt('deep array', (() => { let a = []; for (let i = 0; i < 1200; i++) a = [a]; return a })())
  tryIt('deep under a date', {d: new Date(0), n: nest(1100, 1)})
  tryIt('deep under a proxy', new Proxy({n: nest(1100, 1)}, {}))
  tryIt('at the limit', nest(999, 1))
  const cyc = {a: 1}; cyc.self = cyc
  tryIt('cycle', cyc)
  let reads = 0
  const g = {get v() { reads++; return {w: 1} }}
  JSON.stringify(g)
  console.log('getter reads ' + reads)
})`
	res, _ := run(t, e, code, textEvent("x"))
	want := []string{"flat ok", "wide ok", "deep RangeError", "deep array RangeError", "deep under a date RangeError",
		"deep under a proxy RangeError", "at the limit ok", "cycle RangeError", "getter reads 2"}
	if got := messages(res); !slices.Equal(got, want) || res.Problem != nil {
		t.Errorf("logs %q, want %q (problem %v)", got, want, res.Problem)
	}
}

// TestClientRuntimeOperations: the Runtime API operations of
// ClientOperations go to Host.Call with their input; host errors reject.
func TestClientRuntimeOperations(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', async ({client}) => {
  const r = await client.setState({type: 'user', id: 'u1', name: 'n', payload: {a: 1}})
  console.log(r.op, r.input.name, r.input.payload.a)
  console.log((await client.updateConversation({id: 'c', tags: {k: 'v'}})).input.tags.k)
  try { await client.getState({type: 'user', id: 'u1', name: 'missing'}) } catch (e) { console.log(e.type) }
  console.log(typeof client.captureObservation, Object.isFrozen(client))
})`
	res, _ := run(t, e, code, textEvent("x"))
	want := []string{"setState n 1", "v", "ResourceNotFound", "undefined true"}
	if got := messages(res); !slices.Equal(got, want) || res.Problem != nil {
		t.Errorf("logs %q, want %q (problem %v)", got, want, res.Problem)
	}
}

// TestCreatedMessage: what client.createMessage resolves to shows its
// message as a plain property would, although the message is built only
// when read (instance.createdGetter): the same object on every read,
// enumerable (keys, JSON, spread), replaceable by assignment in strict
// code, built again for no one.
func TestCreatedMessage(t *testing.T) {
	e := New(Options{})
	code := `'use strict'
bot.on.message('*', async ({client}) => {
  const r = await client.createMessage({payload: {type: 'text', text: 'hi'}})
  console.log(Object.keys(r).join(','), typeof Object.getOwnPropertyDescriptor(r, 'message').get)
  const m = r.message
  console.log(m === r.message, m.id, m.payload.text, typeof Object.getOwnPropertyDescriptor(r, 'message').get)
  console.log(JSON.stringify({...r}) === JSON.stringify(r), JSON.stringify(r).includes('"text":"hi"'))
  const unread = await client.createMessage({payload: {type: 'text', text: 'again'}})
  unread.message = 'mine'
  console.log(unread.message, JSON.stringify(unread))
  const ignored = await client.createMessage({payload: {type: 'text', text: 'ignored'}})
})`
	res, h := run(t, e, code, textEvent("x"))
	if res.Problem != nil || res.Err != nil {
		t.Fatalf("problem %v err %v", res.Problem, res.Err)
	}
	want := []string{"message function", "true msg_1 hi undefined", "true true", `mine {"message":"mine"}`}
	if got := messages(res); !reflect.DeepEqual(got, want) {
		t.Errorf("logs %q, want %q", got, want)
	}
	if n := len(h.sent()); n != 3 {
		t.Errorf("%d messages stored, want 3", n)
	}
}

// TestCreateMessageJSON: client.createMessage hands the host its payload
// and metadata as JSON.stringify wrote them (keys in the bot's order,
// numbers as JavaScript writes them, an object's toJSON applied), and
// refuses, with a TypeError the bot can catch, what is not a JSON object.
func TestCreateMessageJSON(t *testing.T) {
	e := New(Options{})
	code := `bot.on.message('*', async ({client}) => {
  await client.createMessage({payload: {type: 'text', text: 'a<b', z: 1, n: 1e21}, metadata: {b: 2, a: [1.5, 'x']}})
  await client.createMessage({payload: {toJSON() { return {type: 'text', text: 'from toJSON'} }}})
  for (const [p, m] of [[{toJSON() { return 'text' }}, undefined], [{type: 'text', text: 'x'}, {toJSON() {}}], [new Date(0), undefined]]) {
    try { await client.createMessage({payload: p, metadata: m}) } catch (e) { console.log(e.name, e.message) }
  }
})`
	h := &rawHost{fakeHost: newFakeHost()}
	res, _ := run(t, e, code, textEvent("x"), func(in *TurnInput) { in.Host = h })
	if res.Problem != nil || res.Err != nil {
		t.Fatalf("problem %v err %v", res.Problem, res.Err)
	}
	want := []string{"TypeError payload must be a JSON object", "TypeError metadata must be a JSON object", "TypeError payload must be a JSON object"}
	if got := messages(res); !slices.Equal(got, want) {
		t.Errorf("logs %q, want %q", got, want)
	}
	wantPayloads := []string{`{"type":"text","text":"a<b","z":1,"n":1e+21}`, `{"type":"text","text":"from toJSON"}`}
	wantMetadata := []string{`{"b":2,"a":[1.5,"x"]}`, ``}
	if !slices.Equal(h.payloads, wantPayloads) || !slices.Equal(h.metadata, wantMetadata) {
		t.Errorf("the host got payloads %q and metadata %q, want %q and %q", h.payloads, h.metadata, wantPayloads, wantMetadata)
	}
}

// rawHost records the JSON CreateMessage is given.
type rawHost struct {
	*fakeHost
	payloads, metadata []string
}

func (h *rawHost) CreateMessage(ctx context.Context, conv string, payload, metadata json.RawMessage, tags map[string]string) (func() map[string]any, error) {
	h.payloads, h.metadata = append(h.payloads, string(payload)), append(h.metadata, string(metadata))
	return h.fakeHost.CreateMessage(ctx, conv, payload, metadata, tags)
}
