// An SDK bot (unchanged @botpress/sdk 5.4.3) that answers the messages of
// the fakechat integration: it calls the integration's action and replies
// with a text, or with a choice for "menu".
'use strict'
const sdk = require('@botpress/sdk')

const bot = new sdk.Bot({ actions: {}, plugins: {} })

bot.on.message('*', async ({ message, client, ctx, event }) => {
  const text = message.payload.text
  const conv = event.payload.conversation
  if (text === 'menu') {
    await client.createMessage({ conversationId: message.conversationId, userId: ctx.botId, type: 'choice',
      payload: { text: 'Pick one', options: [{ label: 'Red', value: 'red' }, { label: 'Blue', value: 'blue' }] }, tags: {} })
    return
  }
  const { output } = await client.callAction({ type: 'fakechat:double', input: { value: text.length } })
  await client.createMessage({ conversationId: message.conversationId, userId: ctx.botId, type: 'text',
    payload: { text: `sdk[${conv.integration}/${conv.tags['fakechat:chatId']}]: ${text} (${output.value})` }, tags: {} })
})

module.exports = { default: bot, handler: bot.handler }
