// Parley's Telegram integration, written with the unchanged @botpress/sdk
// 5.4.3 (its Integration class serves the operations Parley calls with the
// SDK's headers). What it does:
//
// - register / unregister: setWebhook (the integration's webhookUrl, with a
//   secret token) / deleteWebhook on the Telegram Bot API.
// - webhook_received: a Telegram update (a text or photo message, or a button
//   click) becomes the Telegram user and chat (getOrCreateUser,
//   getOrCreateConversation, tags userId and chatId) and an incoming message
//   (getOrCreateMessage with the Telegram message id as tag `id`, so an update
//   Telegram delivers twice is stored once).
// - message_created on channel `channel`: text, image, choice and dropdown
//   (inline keyboard buttons), card (photo, caption, buttons) and carousel
//   (a message per card) become sendMessage / sendPhoto; the sent message's
//   id is acknowledged as its tags.
// - actions: sendTyping, getMe.
'use strict'
const crypto = require('node:crypto')
const sdk = require('@botpress/sdk')
const { api, fileUrl, secretToken } = require('./telegram')
const { definition } = require('./definition')

const SECRET_HEADER = 'x-telegram-bot-api-secret-token'
const CALLBACK_DATA_MAX = 64 // bytes, Telegram's limit on a button's callback_data

// tag reads one of the integration's own tags. Integrations see their tags
// without the integration's prefix (Botpress's contract); the prefixed form
// is accepted too.
function tag(entity, name) {
  const tags = (entity && entity.tags) || {}
  return tags[name] ?? tags[`telegram:${name}`]
}

// header reads a header of the forwarded request whatever its case (the
// SDK's server lowercases names; a forwarder may not).
function header(req, name) {
  const headers = req.headers || {}
  if (headers[name] !== undefined) return headers[name]
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  return key === undefined ? undefined : headers[key]
}

function equalSecrets(a, b) {
  const x = Buffer.from(String(a))
  const y = Buffer.from(String(b))
  return x.length === y.length && crypto.timingSafeEqual(x, y)
}

function userName(from) {
  const full = [from.first_name, from.last_name].filter(Boolean).join(' ')
  return full || from.username || undefined
}

// ---- incoming: Telegram → Parley ----

async function webhook({ req, client, ctx, logger }) {
  const given = header(req, SECRET_HEADER)
  if (!given || !equalSecrets(given, secretToken(ctx.configuration, ctx.webhookId))) {
    logger.forBot().warn('Telegram webhook: a request without the secret token set at registration was refused')
    return { status: 401, body: JSON.stringify({ error: 'invalid or missing X-Telegram-Bot-Api-Secret-Token' }) }
  }
  let update
  try {
    update = JSON.parse(req.body || '')
  } catch {
    return { status: 400, body: JSON.stringify({ error: 'the body is not a Telegram update (JSON)' }) }
  }
  if (update.callback_query) {
    await onButton({ update, client, ctx, logger })
    return
  }
  const message = update.message
  if (!message || !message.chat || !message.from) {
    logger.forBot().debug(`Telegram update ${update.update_id} ignored: not a new message`)
    return
  }
  if (message.from.is_bot) {
    return
  }
  const incoming = await toParley(message, ctx)
  if (!incoming) {
    logger.forBot().info(`Telegram message ${message.message_id} ignored: only text and photos are supported`)
    return
  }
  const { user, conversation } = await participants(client, message.chat, message.from)
  await client.getOrCreateMessage({
    type: incoming.type,
    payload: incoming.payload,
    tags: { id: String(message.message_id), chatId: String(message.chat.id) },
    userId: user.id,
    conversationId: conversation.id,
    discriminateByTags: ['id'],
  })
}

async function participants(client, chat, from) {
  const { conversation } = await client.getOrCreateConversation({
    channel: 'channel',
    tags: { chatId: String(chat.id) },
    discriminateByTags: ['chatId'],
  })
  const name = userName(from)
  const { user } = await client.getOrCreateUser({
    tags: { userId: String(from.id) },
    ...(name && { name }),
    discriminateByTags: ['userId'],
  })
  return { user, conversation }
}

async function toParley(message, ctx) {
  if (typeof message.text === 'string' && message.text.length > 0) {
    return { type: 'text', payload: { text: message.text } }
  }
  if (Array.isArray(message.photo) && message.photo.length > 0) {
    const largest = message.photo[message.photo.length - 1]
    const file = await api(ctx.configuration)('getFile', { file_id: largest.file_id })
    const payload = { imageUrl: fileUrl(ctx.configuration, file.file_path) }
    if (message.caption) payload.title = message.caption
    return { type: 'image', payload }
  }
  return null
}

// A click on an inline keyboard button (a choice's option, a card's
// postback) reaches the bot as a text message whose text is the button's
// value, the way choice answers are matched.
async function onButton({ update, client, ctx, logger }) {
  const q = update.callback_query
  const call = api(ctx.configuration)
  // Stop the button's spinner whatever happens next.
  await call('answerCallbackQuery', { callback_query_id: q.id }).catch((err) =>
    logger.forBot().warn(`answerCallbackQuery: ${err.message}`),
  )
  if (!q.message || !q.message.chat || !q.from || q.from.is_bot || !q.data) {
    return
  }
  const { user, conversation } = await participants(client, q.message.chat, q.from)
  await client.getOrCreateMessage({
    type: 'text',
    payload: { text: q.data },
    tags: { id: `callback:${q.id}`, chatId: String(q.message.chat.id) },
    userId: user.id,
    conversationId: conversation.id,
    discriminateByTags: ['id'],
  })
}

// ---- outgoing: Parley → Telegram ----

function button(label, value) {
  if (Buffer.byteLength(value) > CALLBACK_DATA_MAX) {
    throw new sdk.RuntimeError(`button "${label}": its value is longer than Telegram's ${CALLBACK_DATA_MAX} bytes`)
  }
  return { text: label, callback_data: value }
}

function keyboard(rows) {
  return rows.length ? { reply_markup: { inline_keyboard: rows } } : {}
}

async function send({ ctx, conversation, ack }, method, params) {
  const chatId = tag(conversation, 'chatId')
  if (!chatId) {
    throw new sdk.RuntimeError(`conversation ${conversation.id} has no chatId tag: it is not a Telegram chat`)
  }
  const sent = await api(ctx.configuration)(method, { chat_id: chatId, ...params })
  await ack({ tags: { id: String(sent.message_id), chatId: String(chatId) } })
}

// A card is a photo (or a text without an image) with its title and
// subtitle as caption and its actions as buttons.
function cardMessage(card) {
  const caption = [card.title, card.subtitle].filter(Boolean).join('\n')
  const rows = (card.actions || []).map((a) => [a.action === 'url' ? { text: a.label, url: a.value } : button(a.label, a.value)])
  return card.imageUrl
    ? ['sendPhoto', { photo: card.imageUrl, caption, ...keyboard(rows) }]
    : ['sendMessage', { text: caption, ...keyboard(rows) }]
}

const choice = async (props) =>
  send(props, 'sendMessage', {
    text: props.payload.text,
    ...keyboard(props.payload.options.map((o) => [button(o.label, o.value)])),
  })

const channels = {
  channel: {
    messages: {
      text: async (props) => send(props, 'sendMessage', { text: props.payload.text }),
      image: async (props) =>
        send(props, 'sendPhoto', { photo: props.payload.imageUrl, ...(props.payload.title && { caption: props.payload.title }) }),
      choice,
      dropdown: choice,
      card: async (props) => send(props, ...cardMessage(props.payload)),
      // One Telegram message per card; the Parley message is acknowledged
      // with the first one's id.
      carousel: async (props) => {
        const cards = props.payload.items || []
        if (!cards.length) {
          throw new sdk.RuntimeError('a carousel needs at least one card')
        }
        const acks = []
        for (const card of cards) {
          await send({ ...props, ack: async (a) => void acks.push(a) }, ...cardMessage(card))
        }
        await props.ack(acks[0])
      },
    },
  },
}

// ---- actions ----

const actions = {
  sendTyping: async ({ input, ctx, client }) => {
    const { conversation } = await client.getConversation({ id: input.conversationId })
    const chatId = tag(conversation, 'chatId')
    if (!chatId) {
      throw new sdk.RuntimeError(`conversation ${input.conversationId} is not a Telegram chat`)
    }
    await api(ctx.configuration)('sendChatAction', { chat_id: chatId, action: 'typing' })
    return { chatId: String(chatId) }
  },
  getMe: async ({ ctx }) => {
    const me = await api(ctx.configuration)('getMe', {})
    return { id: String(me.id), username: me.username || '', firstName: me.first_name || '' }
  },
}

// ---- lifecycle ----

const integration = new sdk.Integration({
  register: async ({ ctx, webhookUrl, logger }) => {
    await api(ctx.configuration)('setWebhook', {
      url: webhookUrl,
      secret_token: secretToken(ctx.configuration, ctx.webhookId),
      allowed_updates: ['message', 'callback_query'],
    })
    logger.forBot().info(`Telegram webhook set to ${webhookUrl}`)
  },
  unregister: async ({ ctx, logger }) => {
    await api(ctx.configuration)('deleteWebhook', {})
    logger.forBot().info('Telegram webhook deleted')
  },
  handler: webhook,
  actions,
  channels,
})

// definition: for build.mjs, which writes dist/definition.json from it.
module.exports = { default: integration, handler: integration.handler, definition }
