// A bot written with the unchanged @botpress/sdk 5.4.3, as a team moving
// off Botpress Cloud has it. Parley runs it in two forms (docs/sdk-bots.md):
// as a development bot (dev.cjs starts its server) and deployed as a
// bundle built with esbuild (build.mjs). It has a message handler that
// replies, a state counting messages per user, a tag on the conversation,
// an action and a before_outgoing_message hook.
'use strict'
const fs = require('node:fs')
const sdk = require('@botpress/sdk')

const bot = new sdk.Bot({
  actions: {
    double: async ({ input }) => ({ value: input.value * 2 }),
  },
  plugins: {},
})

// Every text the bot sends is signed.
bot.on.beforeOutgoingMessage('*', async ({ data }) => {
  if (data.type !== 'text') return
  return { data: { ...data, payload: { ...data.payload, text: data.payload.text + ' ✓' } } }
})

bot.on.message('*', async ({ message, client, ctx }) => {
  const text = message.payload.text
  if (text === 'throw') throw new Error('the bot failed on purpose')
  if (text.startsWith('load ')) {
    // The load test: one reply per message, nothing else.
    await client.createMessage({ conversationId: message.conversationId, userId: ctx.botId, type: 'text', payload: { text: 'echo ' + text }, tags: {} })
    maybeDie(ctx, text)
    return
  }
  const { state } = await client.getOrSetState({ type: 'user', id: message.userId, name: 'counter', payload: { count: 0 } })
  const count = state.payload.count + 1
  await client.setState({ type: 'user', id: message.userId, name: 'counter', payload: { count } })
  await client.updateConversation({ id: message.conversationId, tags: { topic: text } })
  const { output } = await client.callAction({ type: 'double', input: { value: count } })
  await client.createMessage({ conversationId: message.conversationId, userId: ctx.botId, type: 'text',
    payload: { text: `#${count} ${text} (x2=${output.value})` }, tags: {} })
})

// A message ending in "die" kills the process after its reply is stored
// and before the bot answers Parley: the turn is delivered again, and its
// reply must not be sent twice. The marker file (from the bot's
// configuration) makes it die only once.
function maybeDie(ctx, text) {
  const marker = ctx.configuration && ctx.configuration.dieMarker
  if (!text.endsWith(' die') || !marker || fs.existsSync(marker)) return
  fs.writeFileSync(marker, 'died')
  process.kill(process.pid, 'SIGKILL')
}

module.exports = { default: bot, handler: bot.handler }
