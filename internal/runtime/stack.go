package runtime

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// botSource is the file name the bot's code is compiled under; the
// prelude is prelude.js and goja's built-ins are "native" frames.
const botSource = "bot.js"

// botFrame matches a stack line of the bot's own code as goja writes it,
// "\tat name (bot.js:L:C(pc))" or "\tat bot.js:L:C(pc)".
var botFrame = regexp.MustCompile(`^\tat (?:(.+) \()?(` + regexp.QuoteMeta(botSource) + `:\d+:\d+)(?:\(\d+\))?\)?$`)

// cleanStack keeps an Error's stack to what the bot's author can act on:
// the message lines, then only the frames of the bot's code, with goja's
// program counter dropped. Frames of the prelude (prelude.js) and goja's
// native functions are runtime internals and are left out.
func cleanStack(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	out := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(l, "\tat ") {
			out = append(out, l)
			continue
		}
		m := botFrame.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if m[1] != "" {
			out = append(out, "\tat "+m[1]+" ("+m[2]+")")
		} else {
			out = append(out, "\tat "+m[2])
		}
	}
	return strings.Join(out, "\n")
}

// botFrames renders the frames of the bot's code in stack, in the form
// cleanStack keeps, for a thrown value that is not an Error (it has no
// stack of its own).
func botFrames(stack []goja.StackFrame) string {
	var b strings.Builder
	for _, f := range stack {
		if f.SrcName() != botSource {
			continue
		}
		p := f.Position()
		loc := botSource + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
		if n := f.FuncName(); n != "<anonymous>" {
			b.WriteString("\n\tat " + n + " (" + loc + ")")
		} else {
			b.WriteString("\n\tat " + loc)
		}
	}
	return b.String()
}
