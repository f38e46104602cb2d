// An SDK bot (unchanged @botpress/sdk 5.4.3) for the Telegram integration
// (internal/app TestTelegramEndToEnd): "menu" gets a choice (buttons),
// "me" calls the integration's getMe action and replies with its output,
// anything else is echoed with the integration's name.
'use strict'
const sdk = require('@botpress/sdk')

const bot = new sdk.Bot({ actions: {}, plugins: {} })

bot.on.message('*', async ({ message, client, ctx, event }) => {
  const text = message.payload.text
  const reply = (type, payload) =>
    client.createMessage({ conversationId: message.conversationId, userId: ctx.botId, type, payload, tags: {} })
  if (text === 'menu') {
    await reply('choice', { text: 'Pick one', options: [{ label: 'Red', value: 'red' }, { label: 'Blue', value: 'blue' }] })
    return
  }
  if (text === 'me') {
    const { output } = await client.callAction({ type: 'telegram:getMe', input: {} })
    await reply('text', { text: `me: ${output.username}` })
    return
  }
  await reply('text', { text: `sdk[${event.payload.conversation.integration}]: ${text}` })
})

module.exports = { default: bot, handler: bot.handler }
