package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/app"
	"github.com/parley-bots/parley/internal/testutil/testapp"
)

// TestCodeBotAnswersWithTheMessage: on SQLite a JavaScript bot's answer is
// stored with the user's message (turns.Dispatcher.Fold), so it is there
// when createMessage returns; a bot that reads the store through its
// client finds the message it answers; state set in one turn is seen by
// the next. On PostgreSQL a message folds only while this node holds the
// conversation's lease parked by its last run (300 ms): the same
// conversation answers the same, folded or not (turns' TestFoldWithLease*
// check the fold there).
func TestCodeBotAnswersWithTheMessage(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a, c := foldingApp(t, cfg)
		_, url, _ := codeBot(t, a, `bot.on.message('text', async ({ message, client, state }) => {
  let text = 'echo ' + message.payload.text
  if (message.payload.text === 'look') {
    const { message: m } = await client.getMessage({ id: message.id })
    text = 'found ' + m.payload.text
  }
  state.conversation.n = (state.conversation.n || 0) + 1
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: text + ' #' + state.conversation.n } })
})`)
		chat, conv, user := chatSession(t, url)
		folds := c.DatabaseURL == ""
		for i, text := range []string{"a", "b", "look", "c"} {
			chat.say(t, conv, text)
			if folds && text != "look" {
				// No wait: the answer committed with the message.
				got := chat.call(t, "GET", "/conversations/"+conv+"/messages", nil)["messages"].([]any)
				if len(got) != 2*(i+1) {
					t.Fatalf("after %q: %d messages stored when createMessage returned, want %d", text, len(got), 2*(i+1))
				}
			} else {
				chat.botTexts(t, conv, user, i+1)
			}
		}
		want := []string{"echo a #1", "echo b #2", "found look #3", "echo c #4"}
		if got := chat.botTexts(t, conv, user, 4); !slices.Equal(got, want) {
			t.Fatalf("bot messages = %q, want %q", got, want)
		}
	})
}

// TestCodeBotSeesChangesBetweenMessages: a JavaScript bot that changes
// nothing of what its turn starts with leaves that start to the next
// message (turns' keptStarts); a change made between two messages through
// the Runtime API (the conversation's tags) is what the next turn sees.
func TestCodeBotSeesChangesBetweenMessages(t *testing.T) {
	engines(t, func(t *testing.T, cfg func() app.Config) {
		a, _ := foldingApp(t, cfg)
		bot, url, _ := codeBot(t, a, `bot.on.message('text', async ({ message, event, client }) => {
  const topic = event.tags.conversation.topic || '-'
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo ' + message.payload.text + ' ' + topic } })
})`)
		chat, conv, user := chatSession(t, url)
		token, err := a.RuntimeAPI().Credentials.MintBotToken(context.Background(), bot.ID)
		if err != nil {
			t.Fatal(err)
		}
		chat.say(t, conv, "a")
		chat.botTexts(t, conv, user, 1)
		chat.say(t, conv, "b")
		chat.botTexts(t, conv, user, 2)
		botCaller(t, a, token, bot.ID)("PUT", "/v1/chat/conversations/"+conv, `{"tags":{"topic":"news"}}`, nil)
		chat.say(t, conv, "c")
		chat.say(t, conv, "d")
		want := []string{"echo a -", "echo b -", "echo c news", "echo d news"}
		if got := chat.botTexts(t, conv, user, 4); !slices.Equal(got, want) {
			t.Fatalf("bot messages = %q, want %q", got, want)
		}
	})
}

// foldingApp starts an app whose folds wait long enough for a bot's first
// turn, which compiles it, and returns it with its config.
func foldingApp(t *testing.T, cfg func() app.Config) (*app.App, app.Config) {
	c := cfg()
	c.FoldWithin = 10 * time.Second
	return testapp.Start(t, c), c
}
