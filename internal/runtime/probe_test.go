package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	e := New(Options{})
	for i, body := range []string{
		`Array.from({length: 1e9})`,
		`new Array(1e9)[5]=1`,
		`const a = new Array(1e8); a.length = 2**32-1; a.reverse()`,
		`new Uint8Array({length: 2e8})`,
		`[].concat(new Array(1e9))`, `new Array(1e8).sort()`, `Object.keys(new Array(1e8))`,
		`const s = 'x'.repeat(1<<23); let t = s; for(;;) t = t + s`,
		`await client.getUser({id:'boom'})`,
		`try { await client.createMessage({payload:{}}) } catch(e) { console.log('caught', e.message, e.type) }`,
	} {
		code := `bot.on.message('*', async ({client, event}) => {` + body + `})`
		st := time.Now()
		res := e.RunTurn(context.Background(), TurnInput{BotID: "b", VersionID: fmt.Sprint("v", i), Code: code, Timeout: 300 * time.Millisecond,
			Event: Event{BotID: "b", ConversationID: "c", ID: "e", MessageID: "m", Payload: map[string]any{"type": "text", "text": "x"}, Type: "text"}, Host: newFakeHost()})
		var logs []string
		for _, l := range res.Logs {
			logs = append(logs, l.Level+": "+trunc(l.Message))
		}
		fmt.Printf("%2d %-40.40s %8s problem=%v err=%v logs=%q\n", i, body, time.Since(st).Round(time.Millisecond), res.Problem != nil && true, res.Err, logs)
	}
}

func trunc(s string) string {
	if len(s) > 150 {
		return s[:150]
	}
	return s
}
