package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTurnEndNotMistakenForTimeout pauses each turn's goroutine at the very
// end of the turn, after the bot code finished, for longer than
// stuckGrace, as a loaded scheduler (the race detector, two shared cores,
// a burst of turns after a restart) can. The turns finished well within
// their budget: none may be reported as "Execution time limit exceeded",
// whether it runs on a fresh runtime or on one reused from the pool, and a
// turn that really passes its budget still is.
func TestTurnEndNotMistakenForTimeout(t *testing.T) {
	pause := func() { time.Sleep(4 * stuckGrace) }
	testHookTurnEnd.Store(&pause)
	t.Cleanup(func() { testHookTurnEnd.Store(nil) })
	e := New(Options{})
	defer e.Close()
	for _, tc := range []struct {
		name    string
		code    string
		budget  time.Duration
		turns   int    // on one engine: the first creates the runtime, the next reuse it
		replies int    // messages each turn sends
		problem string // expected of every turn
	}{
		// n counts the turns a runtime ran: state.bot.n = i+1 shows turn i
		// reused the runtime of the turns before it.
		{"sync handler", `let n = 0
bot.on.message('*', ({ state }) => { state.bot.n = ++n })`, 60 * time.Second, 3, 0, ""},
		{"async echo bot", `let n = 0
bot.on.message('text', async ({ message, client, state }) => {
  state.bot.n = ++n
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'ack: ' + message.payload.text } })
})`, 60 * time.Second, 3, 1, ""},
		{"default budget", `bot.on.message('*', async ({ client }) => { await client.createMessage({ conversationId: 'conv1', payload: { type: 'text', text: 'hi' } }) })`, 0, 2, 1, ""},
		{"real timeout", `bot.on.message('*', () => { for (;;) {} })`, 100 * time.Millisecond, 2, 0, ProblemTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.turns {
				res, h := run(t, e, tc.code, textEvent("x"), func(ti *TurnInput) { ti.Timeout = tc.budget })
				if res.Err != nil || problem(res) != tc.problem {
					t.Fatalf("turn %d: err %v problem %+v logs %q", i, res.Err, res.Problem, messages(res))
				}
				if len(h.messages) != tc.replies {
					t.Errorf("turn %d: %d replies, want %d", i, len(h.messages), tc.replies)
				}
				if tc.problem != "" {
					if !strings.Contains(res.Problem.Description, "budget of 100ms and was stopped") {
						t.Errorf("turn %d: description %q", i, res.Problem.Description)
					}
					continue
				}
				if tc.name != "default budget" && string(res.States.Bot) != fmt.Sprintf(`{"n":%d}`, i+1) {
					t.Errorf("turn %d: bot state %s: the runtime was not reused", i, res.States.Bot)
				}
			}
		})
	}
}
