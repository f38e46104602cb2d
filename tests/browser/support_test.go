package browser

import (
	"testing"
)

// handoffBotCode echoes, asks for a person on "human", counts its echoes
// with trackAnalytics, and fails in nested functions on "crash" (an issue).
const handoffBotCode = `
function parseOrder(text) { throw new Error('no order number in ' + text) }
function handleCrash(text) { return parseOrder(text) }
bot.on.message('*', async ({ event, client }) => {
  const text = event.payload.text
  if (text === 'crash') {
    await client.getUser({ id: event.userId })
    handleCrash(text)
  }
  if (text === 'human') {
    await client.requestHandoff({ reason: 'asked for a human' })
    await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text', text: 'A person will answer you.' } })
    return
  }
  await client.trackAnalytics({ name: 'echoed', count: 1 })
  await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text', text: 'echo: ' + text } })
})`

// TestDashboardSupport (tests/browser/support.mjs): an operator takes a
// conversation over from the Waiting list, replies (seen on the hosted
// chat page) and hands it back; the analytics page draws charts of that
// traffic; a user's messages are labelled by the user, not "User"; a bot
// failure's issue shows only the frames of the bot's code; the code editor marks a compile error's line and warns about
// unsaved changes; a workflow bot's generated code is read-only.
func TestDashboardSupport(t *testing.T) {
	chromium(t)
	a := server(t, nil)
	requireRuntime(t, a)
	ws := workspaceID(t, a)
	var bot struct {
		Bot struct {
			ID           string `json:"id"`
			Integrations map[string]struct {
				WebhookID string `json:"webhookId"`
			} `json:"integrations"`
		} `json:"bot"`
	}
	adminCall(t, a, "POST", "/bots", ws, map[string]any{"name": "Support bot", "code": handoffBotCode}, &bot)
	var wf struct {
		Bot struct {
			ID string `json:"id"`
		} `json:"bot"`
	}
	adminCall(t, a, "POST", "/bots", ws, map[string]any{"name": "Workflow bot"}, &wf)
	doc := map[string]any{"workflows": map[string]any{"main": map[string]any{"nodes": map[string]any{
		"start": map[string]any{"type": "start", "cards": []any{
			map[string]any{"type": "message", "payload": "Hello {{event.payload.text}}"},
			map[string]any{"type": "handoff", "reason": "the workflow asks for a person"},
		}},
	}}}}
	adminCall(t, a, "POST", "/bots/"+wf.Bot.ID+"/publish-from-bot-json", ws, map[string]any{"botJson": doc}, nil)
	runScript(t, "support.mjs", map[string]string{
		"BASE_URL": a.URL, "TOKEN": a.AdminToken, "BOT_ID": bot.Bot.ID, "WORKFLOW_BOT_ID": wf.Bot.ID,
		"CHAT_URL": a.URL + "/w/" + bot.Bot.Integrations["webchat"].WebhookID,
	})
}
