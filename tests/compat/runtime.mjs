// Bot runtime end to end: the bot-side event object, hooks and the sandbox,
// seen through the real @botpress/chat 0.5.5 client (and @botpress/client
// for issues and logs).
// Env: INSPECT_URL, HOOKS_URL, SANDBOX_URL (chat base URLs of three bots),
// INSPECT_BOT_ID, SANDBOX_BOT_ID, ADMIN_URL, TOKEN, WORKSPACE_ID.
import * as chat from '@botpress/chat'
import { Client } from '@botpress/client'
import { scenario, finish, env, assert } from './lib.mjs'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const EVENT_KEYS_MESSAGE = ['botId', 'conversationId', 'createdOn', 'direction', 'id', 'integration', 'messageId', 'payload', 'preview', 'state', 'tags', 'type', 'userId']
const EVENT_KEYS_CUSTOM = EVENT_KEYS_MESSAGE.filter((k) => k !== 'messageId')
const EVENT_KEYS_OUTGOING = EVENT_KEYS_CUSTOM

async function session(url) {
  const client = await chat.Client.connect({ apiUrl: url })
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  const replies = []
  const waiters = []
  listener.on('message_created', (m) => {
    if (m.userId === client.user.id) return
    replies.push(m)
    waiters.splice(0).forEach((w) => w())
  })
  const nextReply = async (n = replies.length + 1, ms = 10000) => {
    const deadline = Date.now() + ms
    while (replies.length < n) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for reply #${n}; got ${replies.length}`)
      await new Promise((r) => { waiters.push(r); setTimeout(r, 200) })
    }
    return replies[n - 1]
  }
  const say = async (payload) => {
    const n = replies.length + 1
    const { message } = await client.createMessage({ conversationId: conversation.id, payload })
    return { message, reply: await nextReply(n) }
  }
  return { client, conversation, listener, replies, nextReply, say }
}

const report = (reply) => JSON.parse(reply.payload.text)

function checkCommon(ev, s, botId) {
  assert.equal(ev.botId, botId)
  assert.equal(ev.conversationId, s.conversation.id)
  // For an outgoing message the associated user is its recipient.
  assert.equal(ev.userId, s.client.user.id)
  assert.match(ev.createdOn, ISO, 'createdOn is an ISO string in JSON')
  assert.ok(typeof ev.id === 'string' && ev.id.length > 0)
  assert.equal(ev.integration, 'chat')
  assert.deepEqual(Object.keys(ev.tags).sort(), ['conversation', 'message', 'user'])
  assert.deepEqual(Object.keys(ev.state).sort(), ['bot', 'conversation', 'user'])
  assert.ok(!Object.keys(ev).some((k) => k.startsWith('_')), 'no internal fields')
}

const inspectUrl = env('INSPECT_URL')
const botId = env('INSPECT_BOT_ID')

await scenario('event object: text message', async () => {
  const s = await session(inspectUrl)
  const { message, reply } = await s.say({ type: 'text', text: 'Hello event' })
  const r = report(reply)
  assert.deepEqual(r.keys, EVENT_KEYS_MESSAGE)
  assert.equal(r.createdOnIsDate, true, 'createdOn is a Date in code')
  const ev = r.event
  checkCommon(ev, s, botId)
  assert.equal(ev.direction, 'incoming')
  assert.equal(ev.type, 'text')
  assert.equal(ev.preview, 'Hello event')
  assert.equal(ev.messageId, message.id)
  assert.deepEqual(ev.payload, { type: 'text', text: 'Hello event' })
  assert.equal(new Date(ev.createdOn).getTime(), new Date(message.createdAt).getTime())
  assert.deepEqual(r.message, message, 'handler message is the stored message')
  s.listener.disconnect()
})

await scenario('event object: image message', async () => {
  const s = await session(inspectUrl)
  const { message, reply } = await s.say({ type: 'image', imageUrl: 'https://example.com/cat.png' })
  const r = report(reply)
  assert.deepEqual(r.keys, EVENT_KEYS_MESSAGE)
  const ev = r.event
  checkCommon(ev, s, botId)
  assert.equal(ev.type, 'image')
  assert.equal(ev.preview, '[image] https://example.com/cat.png')
  assert.equal(ev.messageId, message.id)
  s.listener.disconnect()
})

await scenario('event object: custom event', async () => {
  const s = await session(inspectUrl)
  const n = s.replies.length + 1
  const { event } = await s.client.createEvent({ conversationId: s.conversation.id, payload: { kind: 'ping', n: 3 } })
  const r = report(await s.nextReply(n))
  assert.deepEqual(r.keys, EVENT_KEYS_CUSTOM)
  const ev = r.event
  checkCommon(ev, s, botId)
  assert.equal(ev.type, 'chat:custom')
  assert.equal(ev.direction, 'incoming')
  assert.equal(ev.id, event.id)
  assert.deepEqual(ev.payload, { kind: 'ping', n: 3 })
  assert.equal(typeof ev.preview, 'string')
  assert.equal(ev.messageId, undefined)
  s.listener.disconnect()
})

await scenario('event object: outgoing message (before_outgoing_message)', async () => {
  const s = await session(inspectUrl)
  const { reply } = await s.say({ type: 'text', text: 'outgoing' })
  const r = report(reply)
  assert.deepEqual(r.keys, EVENT_KEYS_OUTGOING)
  const ev = r.event
  checkCommon(ev, s, botId)
  assert.equal(ev.direction, 'outgoing')
  assert.equal(ev.type, 'text')
  assert.equal(ev.preview, 'report-outgoing')
  assert.deepEqual(ev.payload, { type: 'text', text: 'report-outgoing' })
  s.listener.disconnect()
})

await scenario('hooks: change, drop, stop, order', async () => {
  const s = await session(env('HOOKS_URL'))
  assert.equal((await s.say({ type: 'text', text: 'hi' })).reply.payload.text, 'echo: hi (checked)')
  assert.equal((await s.say({ type: 'text', text: 'shout' })).reply.payload.text, 'echo: SHOUT (checked)', 'before_incoming changed the payload')
  // 'secret' is dropped by before_outgoing and 'stop' stops the turn: no reply
  // for either; the next message's reply proves the turns ran in between.
  await s.client.createMessage({ conversationId: s.conversation.id, payload: { type: 'text', text: 'secret' } })
  await s.client.createMessage({ conversationId: s.conversation.id, payload: { type: 'text', text: 'stop' } })
  const { reply } = await s.say({ type: 'text', text: 'order?' })
  const order = JSON.parse(reply.payload.text)
  assert.deepEqual(order, [
    'before_incoming:hi', 'handler:hi', 'before_outgoing:echo: hi', 'after_incoming', 'after_turn_end',
    'before_incoming:shout', 'handler:SHOUT', 'before_outgoing:echo: SHOUT', 'after_incoming', 'after_turn_end',
    'before_incoming:secret', 'handler:secret', 'before_outgoing:echo: secret', 'after_incoming', 'after_turn_end',
    'before_incoming:stop', 'after_turn_end',
    'before_incoming:order?', 'handler:order?',
  ])
  const { messages } = await s.client.listMessages({ conversationId: s.conversation.id })
  const botTexts = messages.filter((m) => m.userId !== s.client.user.id).map((m) => m.payload.text)
  assert.equal(botTexts.length, 3, 'no reply for the dropped and the stopped message')
  s.listener.disconnect()
})

await scenario('sandbox: loop, throw and reject end the turn with the fallback message; issues and logs; no escape', async () => {
  const admin = new Client({ apiUrl: env('ADMIN_URL'), token: env('TOKEN'), workspaceId: env('WORKSPACE_ID') })
  const id = env('SANDBOX_BOT_ID')
  const fallback = 'Oops, the sandbox bot failed.'
  await admin.updateBot({ id, integrations: { chat: { enabled: true, configuration: { fallbackMessage: fallback } } } })
  const s = await session(env('SANDBOX_URL'))
  const started = Date.now()
  await s.client.createMessage({ conversationId: s.conversation.id, payload: { type: 'text', text: 'loop' } })
  assert.equal((await s.nextReply()).payload.text, fallback, 'the failed turn is answered with the fallback message')
  const { reply } = await s.say({ type: 'text', text: 'after the loop' })
  assert.equal(reply.payload.text, 'ok: after the loop')
  const elapsed = Date.now() - started
  assert.ok(elapsed < 1000 + 2000, `the loop was stopped within its 1 s budget (took ${elapsed} ms end to end)`)
  const twoMore = s.replies.length + 2
  await s.client.createMessage({ conversationId: s.conversation.id, payload: { type: 'text', text: 'throw' } })
  await s.client.createMessage({ conversationId: s.conversation.id, payload: { type: 'text', text: 'reject' } })
  await s.nextReply(twoMore)
  assert.deepEqual(s.replies.slice(-2).map((m) => m.payload.text), [fallback, fallback], 'throw and reject get the fallback')
  assert.equal((await s.say({ type: 'text', text: 'count' })).reply.payload.text, 'count=1')
  assert.equal((await s.say({ type: 'text', text: 'count' })).reply.payload.text, 'count=2', 'state persisted between turns')
  const escape = (await s.say({ type: 'text', text: 'escape' })).reply.payload.text
  assert.equal(escape, 'require:undefined process:undefined fetch:undefined setTimeout:undefined XMLHttpRequest:undefined module:undefined Buffer:undefined')

  const issues = await admin.list.botIssues({ id }).collect()
  const timeout = issues.find((i) => i.code === 'timeout')
  assert.ok(timeout, `a timeout issue (issues: ${issues.map((i) => i.code)})`)
  assert.equal(timeout.eventsCount, 1)
  assert.equal(timeout.category, 'limits')
  const { issueEvents } = await admin.listBotIssueEvents({ id, issueId: timeout.id })
  assert.equal(issueEvents.length, 1)
  assert.equal(issueEvents[0].data.conversationId.raw, s.conversation.id)
  const failures = issues.filter((i) => i.code !== 'timeout').reduce((n, i) => n + i.eventsCount, 0)
  assert.equal(failures, 2, 'the throw and the rejection are issues too')
  assert.deepEqual((await admin.getBotIssue({ id, issueId: timeout.id })).issue.id, timeout.id)
  const { logs } = await admin.getBotLogs({ id, timeStart: new Date(Date.now() - 600e3).toISOString() })
  assert.ok(logs.some((l) => l.level === 'info' && l.message.includes('count is now 2') && l.conversationId === s.conversation.id), 'logger.info reached the logs')
  assert.ok(logs.some((l) => l.level === 'error'), 'failures are logged')
  s.listener.disconnect()
})

finish()
