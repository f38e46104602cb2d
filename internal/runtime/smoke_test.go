package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	e := New(Options{})
	h := newFakeHost()
	code := `
bot.hook('before_incoming_message', async ({event}) => { console.log('hook', event.type) })
bot.on.message('*', async ({event, client, state, message}) => {
  state.user.n = (state.user.n||0)+1
  console.log('ev', JSON.stringify(event), event.createdOn instanceof Date, Object.keys(event).join(','))
  const r = await client.createMessage({conversationId: event.conversationId, payload: {type:'text', text:'hi'}})
  console.log('reply', JSON.stringify(r))
})`
	ev := Event{BotID: "b1", ConversationID: "c1", CreatedOn: time.Now(), ID: "e1", Integration: "chat", MessageID: "m1",
		Payload: map[string]any{"type": "text", "text": "hello"}, Preview: "hello", Tags: NewTags(nil, nil, nil), Type: "text", UserID: "u1"}
	res := e.RunTurn(context.Background(), TurnInput{BotID: "b1", VersionID: "v1", Code: code, Event: ev, Host: h})
	b, _ := json.MarshalIndent(res, "", " ")
	fmt.Println(string(b), res.Err)
	fmt.Println(string(res.States.User))
}
