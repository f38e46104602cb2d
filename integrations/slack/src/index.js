// Parley's Slack integration, written with the unchanged @botpress/sdk 5.4.3
// (its Integration class serves the operations Parley calls with the SDK's
// headers). What it does:
//
// - register: auth.test checks the bot token; Slack's request URLs are set
//   in the Slack app (its manifest), so register logs the URL to paste there.
// - webhook_received: every request must carry Slack's signature
//   (X-Slack-Signature, v0 HMAC-SHA256 with the signing secret, of
//   "v0:{X-Slack-Request-Timestamp}:{body}", the timestamp within 5 minutes);
//   otherwise 401. url_verification is answered with its challenge; an
//   event_callback's `message` event (users' messages only: no bots, no
//   subtypes) becomes the Slack user and channel or thread
//   (getOrCreateUser, getOrCreateConversation, tags userId, channelId and
//   thread) and an incoming message (getOrCreateMessage keyed by Slack's ts,
//   so Slack's retries are stored once); a block_actions interaction (a
//   button click) becomes a text message whose text is the button's value.
// - message_created on channel `channel`: text, image (image block), choice
//   and dropdown (section + actions block of buttons), card (image, title,
//   buttons) become chat.postMessage; the sent message's ts is acknowledged
//   as its tags.
// - actions: getBotInfo (auth.test).
'use strict'
const sdk = require('@botpress/sdk')
const { api, verify } = require('./slack')
const { definition } = require('./definition')

const MAIN = 'main' // the thread tag of a channel's own conversation
const BUTTON_VALUE_MAX = 2000 // characters, Slack's limit on a button's value
const BUTTONS_MAX = 25 // elements of an actions block
const LABEL_MAX = 75 // characters of a button's text

// tag reads one of the integration's own tags. Integrations see their tags
// without the integration's prefix (Botpress's contract); the prefixed form
// is accepted too.
function tag(entity, name) {
  const tags = (entity && entity.tags) || {}
  return tags[name] ?? tags[`slack:${name}`]
}

// header reads a header of the forwarded request whatever its case.
function header(req, name) {
  const headers = req.headers || {}
  if (headers[name] !== undefined) return headers[name]
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name)
  return key === undefined ? undefined : headers[key]
}

const reply = (status, body) => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
})

// ---- incoming: Slack → Parley ----

async function webhook({ req, client, ctx, logger }) {
  const body = typeof req.body === 'string' ? req.body : ''
  const refused = verify(ctx.configuration.signingSecret, {
    timestamp: header(req, 'x-slack-request-timestamp'),
    signature: header(req, 'x-slack-signature'),
    body,
  })
  if (refused) {
    logger.forBot().warn(`Slack webhook: a request was refused: ${refused}`)
    return reply(401, { error: refused })
  }
  const retry = header(req, 'x-slack-retry-num')
  if (retry !== undefined) {
    // Slack resends an event it got no timely 200 for; the message is keyed
    // by its ts, so a resent one is not stored twice.
    logger.forBot().info(`Slack retry ${retry} (${header(req, 'x-slack-retry-reason') || 'no reason'})`)
  }

  const contentType = String(header(req, 'content-type') || '')
  if (contentType.startsWith('application/x-www-form-urlencoded')) {
    let payload
    try {
      payload = JSON.parse(new URLSearchParams(body).get('payload') || '')
    } catch {
      return reply(400, { error: 'the form has no JSON payload' })
    }
    if (payload.type !== 'block_actions') {
      logger.forBot().debug(`Slack interaction ${payload.type} ignored`)
      return
    }
    await onBlockActions({ payload, client, logger })
    return
  }

  let envelope
  try {
    envelope = JSON.parse(body)
  } catch {
    return reply(400, { error: 'the body is not a Slack event (JSON)' })
  }
  if (envelope.type === 'url_verification') {
    return reply(200, { challenge: envelope.challenge })
  }
  if (envelope.type !== 'event_callback' || !envelope.event) {
    logger.forBot().debug(`Slack request of type ${envelope.type} ignored`)
    return
  }
  const event = envelope.event
  if (event.type !== 'message' || event.subtype || event.bot_id || !event.user || !event.channel || !event.ts) {
    logger.forBot().debug(`Slack event ${event.type}${event.subtype ? `/${event.subtype}` : ''} ignored: not a user's new message`)
    return
  }
  if (typeof event.text !== 'string' || !event.text) {
    return
  }
  const { user, conversation } = await participants(client, {
    channelId: event.channel,
    thread: event.thread_ts || MAIN,
    userId: event.user,
  })
  await client.getOrCreateMessage({
    type: 'text',
    payload: { text: event.text },
    tags: { ts: event.ts, channelId: event.channel },
    userId: user.id,
    conversationId: conversation.id,
    discriminateByTags: ['ts', 'channelId'],
  })
}

async function participants(client, { channelId, thread, userId, name }) {
  const { conversation } = await client.getOrCreateConversation({
    channel: 'channel',
    tags: { channelId, thread },
    discriminateByTags: ['channelId', 'thread'],
  })
  const { user } = await client.getOrCreateUser({
    tags: { userId },
    ...(name && { name }),
    discriminateByTags: ['userId'],
  })
  return { user, conversation }
}

// A click on a button (a choice's option, a card's postback) reaches the
// bot as a text message whose text is the button's value, the way choice
// answers are matched. Link buttons carry no value: nothing to store.
async function onBlockActions({ payload, client, logger }) {
  const channelId = payload.channel?.id || payload.container?.channel_id
  const userId = payload.user?.id
  if (!channelId || !userId) {
    logger.forBot().debug('Slack block_actions ignored: no channel or user')
    return
  }
  const thread = payload.message?.thread_ts || payload.container?.thread_ts || MAIN
  for (const action of payload.actions || []) {
    if (action.type !== 'button' || typeof action.value !== 'string' || !action.value) continue
    const name = payload.user.name || payload.user.username
    const { user, conversation } = await participants(client, { channelId, thread, userId, name })
    await client.getOrCreateMessage({
      type: 'text',
      payload: { text: action.value },
      tags: { ts: `action:${action.action_ts}`, channelId },
      userId: user.id,
      conversationId: conversation.id,
      discriminateByTags: ['ts', 'channelId'],
    })
  }
}

// ---- outgoing: Parley → Slack ----

const plain = (text) => ({ type: 'plain_text', text: String(text).slice(0, LABEL_MAX) || ' ' })

function button(label, value, i) {
  if (value.length > BUTTON_VALUE_MAX) {
    throw new sdk.RuntimeError(`button "${label}": its value is longer than Slack's ${BUTTON_VALUE_MAX} characters`)
  }
  return { type: 'button', text: plain(label), value, action_id: `button:${i}` }
}

function actionsBlock(elements) {
  if (elements.length > BUTTONS_MAX) {
    throw new sdk.RuntimeError(`${elements.length} buttons: Slack shows at most ${BUTTONS_MAX} in a message`)
  }
  return elements.length ? [{ type: 'actions', elements }] : []
}

async function send({ ctx, conversation, ack }, params) {
  const channelId = tag(conversation, 'channelId')
  if (!channelId) {
    throw new sdk.RuntimeError(`conversation ${conversation.id} has no channelId tag: it is not a Slack channel`)
  }
  const thread = tag(conversation, 'thread')
  const sent = await api(ctx.configuration)('chat.postMessage', {
    channel: channelId,
    ...(thread && thread !== MAIN && { thread_ts: thread }),
    ...params,
  })
  await ack({ tags: { ts: String(sent.ts), channelId: String(sent.channel || channelId) } })
}

const choice = async (props) => {
  const { text, options } = props.payload
  return send(props, {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text } },
      ...actionsBlock(options.map((o, i) => button(o.label, o.value, i))),
    ],
  })
}

// A card is its image, its title (bold) and subtitle, and its actions as
// buttons: postback/say come back as their value, url opens the link.
function card(c) {
  const heading = [c.title && `*${c.title}*`, c.subtitle].filter(Boolean).join('\n')
  const blocks = []
  if (c.imageUrl) blocks.push({ type: 'image', image_url: c.imageUrl, alt_text: c.title || 'image' })
  if (heading) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: heading } })
  blocks.push(
    ...actionsBlock(
      (c.actions || []).map((a, i) =>
        a.action === 'url' ? { type: 'button', text: plain(a.label), url: a.value, action_id: `link:${i}` } : button(a.label, a.value, i),
      ),
    ),
  )
  return { text: [c.title, c.subtitle].filter(Boolean).join('\n') || 'card', blocks }
}

const channels = {
  channel: {
    messages: {
      text: async (props) => send(props, { text: props.payload.text }),
      image: async (props) => {
        const { imageUrl, title } = props.payload
        return send(props, {
          text: title || imageUrl,
          blocks: [{ type: 'image', image_url: imageUrl, alt_text: title || 'image', ...(title && { title: plain(title) }) }],
        })
      },
      choice,
      dropdown: choice,
      card: async (props) => send(props, card(props.payload)),
    },
  },
}

// ---- actions ----

const actions = {
  getBotInfo: async ({ ctx }) => {
    const me = await api(ctx.configuration)('auth.test', {})
    return {
      userId: me.user_id || '',
      botId: me.bot_id || '',
      user: me.user || '',
      teamId: me.team_id || '',
      team: me.team || '',
      url: me.url || '',
    }
  },
}

// ---- lifecycle ----

const integration = new sdk.Integration({
  register: async ({ ctx, webhookUrl, logger }) => {
    const me = await api(ctx.configuration)('auth.test', {})
    logger
      .forBot()
      .info(
        `Slack token of ${me.user || me.user_id} in ${me.team || me.team_id} accepted; in the Slack app, set the Event Subscriptions and Interactivity request URLs to ${webhookUrl}`,
      )
  },
  unregister: async ({ logger }) => {
    logger.forBot().info('Slack integration removed; remove the request URLs from the Slack app to stop its requests')
  },
  handler: webhook,
  actions,
  channels,
})

// definition: for build.mjs, which writes dist/definition.json from it.
module.exports = { default: integration, handler: integration.handler, definition }
