// An integration written with the unchanged @botpress/sdk 5.4.3, the way a
// channel integration (Telegram, WhatsApp, ...) is: a fake chat service
// ("fakechat") whose API the test runs on loopback stands for the channel's
// servers. register sets the channel's webhook to Parley's webhook URL;
// the webhook handler turns an update into a user message with
// getOrCreateUser/Conversation (tags + discriminateByTags) and
// createMessage; the channel's text handler posts the bot's reply to the
// fake API and acks it with the channel's message id; an action doubles a
// number; createUser and createConversation let the bot start a chat.
// Parley runs it deployed as a bundle (build.mjs).
'use strict'
const sdk = require('@botpress/sdk')

async function api(ctx, method, body) {
  const res = await fetch(`${ctx.configuration.apiUrl}/bot${ctx.configuration.token}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (!res.ok) throw new sdk.RuntimeError(`fakechat ${method}: ${res.status}`)
  return res.json()
}

const integration = new sdk.Integration({
  register: async ({ ctx, webhookUrl }) => {
    await api(ctx, 'setWebhook', { url: webhookUrl, botId: ctx.botId })
  },
  unregister: async ({ ctx, webhookUrl }) => {
    await api(ctx, 'deleteWebhook', { url: webhookUrl })
  },
  createUser: async ({ client, tags }) => {
    const { user } = await client.getOrCreateUser({ tags: { id: tags.id }, discriminateByTags: ['id'] })
    return { body: JSON.stringify({ user: { id: user.id } }) }
  },
  createConversation: async ({ client, channel, tags }) => {
    const { conversation } = await client.getOrCreateConversation({ channel, tags: { chatId: tags.chatId }, discriminateByTags: ['chatId'] })
    return { body: JSON.stringify({ conversation: { id: conversation.id } }) }
  },
  actions: {
    double: async ({ input }) => ({ value: input.value * 2 }),
  },
  channels: {
    chat: {
      messages: {
        text: async ({ ctx, conversation, message, payload, ack }) => {
          if (message.tags.id) return // delivered again, but already sent and acked
          const sent = await api(ctx, 'sendMessage', { chat_id: conversation.tags.chatId, text: payload.text })
          await ack({ tags: { id: String(sent.message_id) } })
        },
        choice: async ({ ctx, conversation, payload, ack }) => {
          const sent = await api(ctx, 'sendMessage', {
            chat_id: conversation.tags.chatId,
            text: payload.text,
            buttons: payload.options.map((o) => o.value),
          })
          await ack({ tags: { id: String(sent.message_id) } })
        },
      },
    },
  },
  handler: async ({ req, client, ctx, logger }) => {
    if (req.path === '/echo') {
      return { status: 202, headers: { 'x-fakechat': 'echo' },
        body: JSON.stringify({ method: req.method, query: req.query, size: (req.body || '').length, secret: process.env.SECRET_GREETING,
          pid: process.pid }) }
    }
    const update = JSON.parse(req.body)
    logger.forBot().info(`update ${update.update_id} received`)
    if (update.event) {
      const { conversation } = await client.getOrCreateConversation({ channel: 'chat', tags: { chatId: String(update.chat) },
        discriminateByTags: ['chatId'] })
      await client.createEvent({ type: 'reaction', conversationId: conversation.id, payload: { emoji: update.event } })
      return { status: 200, body: '{}' }
    }
    const { user } = await client.getOrCreateUser({ tags: { id: String(update.from) }, discriminateByTags: ['id'] })
    const { conversation } = await client.getOrCreateConversation({
      channel: 'chat',
      tags: { chatId: String(update.chat) },
      discriminateByTags: ['chatId'],
    })
    if (conversation.tags.chatId !== String(update.chat)) throw new Error('conversation tags are not the integration\'s own')
    await client.setState({ type: 'conversation', id: conversation.id, name: 'lastUpdate', payload: { id: update.update_id } })
    // An update delivered again (the channel retries after a failure) is
    // the same message: no second turn for the bot.
    await client.getOrCreateMessage({
      conversationId: conversation.id,
      userId: user.id,
      type: 'text',
      payload: { text: update.text },
      tags: { id: String(update.update_id) },
      discriminateByTags: ['id'],
    })
    return { status: 200, body: JSON.stringify({ ok: true }) }
  },
})

module.exports = { default: integration, handler: integration.handler }
