package runtime

import (
	"strings"
	"testing"
)

// TestIssueStacksShowOnlyBotFrames runs real bot code that fails and checks
// the stack its issue (and log line) shows: the frames of the bot's code,
// with line:column, and none of the prelude's or goja's native frames.
func TestIssueStacksShowOnlyBotFrames(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct {
		name   string
		code   string
		log    bool     // the stack is in a console.error line, not an issue
		head   string   // the first line
		frames []string // the frames kept, innermost first
	}{
		{"nested function calls", `function inner() { throw new Error('bad') }
function outer() { inner() }
bot.on.message('*', () => { outer() })`,
			false, "Error: bad", []string{"at inner (bot.js:1:26)", "at outer (bot.js:2:25)", "at bot.js:3:34"}},
		{"async handler, through a built-in's callback", `bot.on.message('*', async ({client}) => {
  await client.getUser({id: 'u'})
  ;[1].map(x => { throw new TypeError('t') })
})`,
			false, "TypeError: t", []string{"at bot.js:3:25", "at bot.js:3:11"}},
		{"runtime TypeError", `const read = (o) => o.x
bot.on.message('*', async () => read(null))`,
			false, "TypeError: Cannot read property 'x' of undefined", []string{"at read (bot.js:1:23)", "at bot.js:2:37"}},
		{"thrown non-Error", `function reject() { throw 'no way' }
bot.on.message('*', () => { reject() })`,
			false, "no way", []string{"at reject (bot.js:1:21)", "at bot.js:2:35"}},
		{"logged error", `function check() { return new Error('logged') }
bot.on.message('*', () => { console.error(check()) })`,
			true, "Error: logged", []string{"at check (bot.js:1:27)", "at bot.js:2:48"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := run(t, e, tc.code, textEvent("x"))
			var stack string
			if tc.log {
				if res.Problem != nil || len(res.Logs) != 1 {
					t.Fatalf("problem %+v logs %q", res.Problem, messages(res))
				}
				stack = res.Logs[0].Message
			} else {
				if problem(res) != ProblemUncaught {
					t.Fatalf("problem %+v", res.Problem)
				}
				stack = res.Problem.Description
				if logged := res.Logs[len(res.Logs)-1].Message; logged != res.Problem.Title+": "+stack {
					t.Errorf("logged %q, issue %q", logged, stack)
				}
			}
			for _, dropped := range []string{"prelude.js", "native", "dispatchTurn"} {
				if strings.Contains(stack, dropped) {
					t.Errorf("stack shows %q:\n%s", dropped, stack)
				}
			}
			lines := strings.Split(stack, "\n")
			var frames []string
			for _, l := range lines[1:] {
				frames = append(frames, strings.TrimPrefix(l, "\t"))
			}
			if lines[0] != tc.head || strings.Join(frames, "|") != strings.Join(tc.frames, "|") {
				t.Errorf("stack:\n%s\nwant %q then %q", stack, tc.head, tc.frames)
			}
		})
	}
}

func TestCleanStack(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Error: x\n\tat a (bot.js:1:2(3))\n\tat apply (native)\n\tat g (prelude.js:356:20(14))\n\tat bot.js:4:5(6)\n", "Error: x\n\tat a (bot.js:1:2)\n\tat bot.js:4:5"},
		{"Error: two\nlines\n\tat dispatchTurn (prelude.js:302:18(112))\n", "Error: two\nlines"},
		{"Error: no frames", "Error: no frames"},
		{"Error: x\n\tat f (native)\n\tat b (notbot.js:1:2(3))", "Error: x"},
	} {
		if got := cleanStack(tc.in); got != tc.want {
			t.Errorf("cleanStack(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
