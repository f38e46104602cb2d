// Drives every Runtime operation of @botpress/client 1.45.0 (and the tasks
// of 1.35.0, over plain HTTP as that client sends them) against Parley.
// Each operation is asserted on its result, then refused with the client's
// error class for: another bot's credential, no credential, an unknown id,
// a malformed body and an oversized body (> 1 MB); after each refusal
// nothing is stored. A viewer's personal access token may read, not write.
// The hosted-only operations answer 405 MethodNotFound.
// Env: API_URL, BOT_ID, OTHER_BOT_ID, BOT_KEY, OTHER_BOT_KEY, BOT_TOKEN,
// OWNER_TOKEN, VIEWER_TOKEN.
import * as bp from '@botpress/client'
import { scenario, rejects, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const botId = env('BOT_ID')
const otherBotId = env('OTHER_BOT_ID')
const mk = (token, id = botId) => new bp.Client({ apiUrl, botId: id, token })
const bot = mk(env('BOT_KEY'))
const viaToken = mk(env('BOT_TOKEN'))
const owner = mk(env('OWNER_TOKEN'))
const viewer = mk(env('VIEWER_TOKEN'))
const otherKey = mk(env('OTHER_BOT_KEY')) // bot B's key, acting on bot A
const otherBot = mk(env('OTHER_BOT_KEY'), otherBotId)
const anon = mk(undefined)

const big = 'x'.repeat(1100 * 1024)
const missing = 'does-not-exist'

// ---- fixtures
const u1 = (await bot.createUser({ tags: { ext: 'u-1' }, name: 'Ada' })).user
const u2 = (await bot.createUser({ tags: { ext: 'u-2' }, name: 'Bob' })).user
const c1 = (await bot.createConversation({ channel: 'dm', tags: { thread: 't-1' } })).conversation
await bot.addParticipant({ id: c1.id, userId: u1.id })
const m1 = (await bot.createMessage({ conversationId: c1.id, userId: botId, type: 'text', payload: { text: 'hello' }, tags: { k: 'v1' } })).message
const e1 = (await bot.createEvent({ type: 'custom', payload: { n: 1 }, conversationId: c1.id })).event
await bot.setState({ type: 'conversation', id: c1.id, name: 'memo', payload: { a: 1 } })
const wf1 = (await bot.createWorkflow({ name: 'flow', status: 'pending', tags: { k: 'w1' } })).workflow

// snapshot is everything a refused call could have stored.
async function snapshot() {
  const all = async (fn, key) => {
    const out = []
    let nextToken
    do {
      const r = await fn(nextToken)
      out.push(...r[key].map((x) => JSON.stringify(x)))
      nextToken = r.meta.nextToken
    } while (nextToken)
    return out.sort()
  }
  const [users, conversations, messages, events, workflows] = await Promise.all([
    all((nextToken) => bot.listUsers({ nextToken }), 'users'),
    all((nextToken) => bot.listConversations({ nextToken }), 'conversations'),
    all((nextToken) => bot.listMessages({ nextToken }), 'messages'),
    all((nextToken) => bot.listEvents({ nextToken }), 'events'),
    all((nextToken) => bot.listWorkflows({ nextToken }), 'workflows'),
  ])
  const states = []
  for (const name of ['memo', 'fresh', 'x']) {
    try {
      states.push(JSON.stringify((await bot.getState({ type: 'conversation', id: c1.id, name })).state))
    } catch (err) {
      states.push(err.type)
    }
  }
  const tasks = (await raw('GET', '/v1/chat/tasks')).body
  const participants = (await bot.listParticipants({ id: c1.id })).participants.map((p) => p.id).sort()
  return JSON.stringify({ users, conversations, messages, events, workflows, states, tasks, participants })
}

// raw calls the API as client 1.35.0 does (for its tasks operations).
async function raw(method, path, body, token = env('BOT_KEY'), id = botId) {
  const headers = { 'content-type': 'application/json', 'x-bot-id': id }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(apiUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

// Every operation: how to call it right (and check the result), and the
// arguments of each refusal (null: not applicable to this operation).
const read = true
const ops = [
  // users
  { op: 'createUser', args: () => ({ tags: { ext: 'u-new' }, name: 'Cy' }),
    check: (r) => { assert.equal(r.user.name, 'Cy'); assert.deepEqual(r.user.tags, { ext: 'u-new' }) },
    unknown: null, malformed: { tags: 'nope' }, oversized: { tags: {}, name: big } },
  { op: 'getUser', read, args: () => ({ id: u1.id }), check: (r) => assert.deepEqual(r.user.tags, { ext: 'u-1' }),
    unknown: { id: missing } },
  { op: 'listUsers', read, args: () => ({ tags: { ext: 'u-2' } }), check: (r) => assert.deepEqual(r.users.map((u) => u.id), [u2.id]) },
  { op: 'getOrCreateUser', args: () => ({ tags: { ext: 'u-1', extra: 'e' }, discriminateByTags: ['ext'] }),
    check: (r) => { assert.equal(r.user.id, u1.id); assert.equal(r.meta.created, false) },
    unknown: null, malformed: { tags: { ext: 5 } }, oversized: { tags: { ext: big } } },
  { op: 'updateUser', args: () => ({ id: u2.id, tags: { vip: 'yes' }, name: 'Bobby' }),
    check: (r) => { assert.equal(r.user.name, 'Bobby'); assert.deepEqual(r.user.tags, { ext: 'u-2', vip: 'yes' }) },
    unknown: { id: missing, name: 'x' }, malformed: { id: u2.id, name: 7 }, oversized: { id: u2.id, name: big } },
  // conversations
  { op: 'createConversation', args: () => ({ channel: 'dm', tags: { thread: 't-new' } }),
    check: (r) => { assert.equal(r.conversation.channel, 'dm'); assert.equal(r.conversation.integration, 'chat'); assert.equal(r.conversation.messageCount, 0) },
    unknown: null, malformed: { channel: 'dm', tags: [] }, oversized: { channel: big, tags: {} } },
  { op: 'getConversation', read, args: () => ({ id: c1.id }),
    check: (r) => { assert.deepEqual(r.conversation.tags, { thread: 't-1' }); assert.equal(r.conversation.messageCount >= 1, true) },
    unknown: { id: missing } },
  { op: 'listConversations', read, args: () => ({ tags: { thread: 't-1' }, participantIds: [u1.id] }),
    check: (r) => assert.deepEqual(r.conversations.map((c) => c.id), [c1.id]) },
  { op: 'getOrCreateConversation', args: () => ({ channel: 'dm', tags: { thread: 't-1' }, discriminateByTags: ['thread'] }),
    check: (r) => { assert.equal(r.conversation.id, c1.id); assert.equal(r.meta.created, false) },
    unknown: null, malformed: { channel: 3, tags: {} }, oversized: { channel: 'dm', tags: { thread: big } } },
  { op: 'updateConversation', args: () => ({ id: c1.id, tags: { topic: 'billing' } }),
    check: (r) => assert.deepEqual(r.conversation.tags, { thread: 't-1', topic: 'billing' }),
    unknown: { id: missing, tags: {} }, malformed: { id: c1.id, tags: 'x' }, oversized: { id: c1.id, tags: { topic: big } } },
  // participants
  { op: 'addParticipant', args: () => ({ id: c1.id, userId: u2.id }), check: (r) => assert.equal(r.participant.id, u2.id),
    unknown: { id: missing, userId: u2.id }, malformed: { id: c1.id, userId: 12 }, oversized: { id: c1.id, userId: big } },
  { op: 'getParticipant', read, args: () => ({ id: c1.id, userId: u1.id }), check: (r) => assert.equal(r.participant.id, u1.id),
    unknown: { id: c1.id, userId: missing } },
  { op: 'listParticipants', read, args: () => ({ id: c1.id }), check: (r) => assert.ok(r.participants.some((p) => p.id === u1.id)),
    unknown: { id: missing } },
  { op: 'removeParticipant', args: () => ({ id: c1.id, userId: u2.id }), check: (r) => assert.deepEqual(r, {}),
    unknown: { id: c1.id, userId: missing } },
  // messages
  { op: 'createMessage', args: () => ({ conversationId: c1.id, userId: botId, type: 'text', payload: { text: 'reply' }, tags: { k: 'v2' } }),
    check: (r) => { assert.equal(r.message.direction, 'outgoing'); assert.deepEqual(r.message.payload, { text: 'reply' }); assert.equal(r.message.type, 'text') },
    unknown: { conversationId: missing, userId: botId, type: 'text', payload: { text: 'x' }, tags: {} },
    malformed: { conversationId: c1.id, userId: botId, type: 'text', payload: 'text', tags: {} },
    oversized: { conversationId: c1.id, userId: botId, type: 'text', payload: { text: big }, tags: {} } },
  { op: 'getMessage', read, args: () => ({ id: m1.id }), check: (r) => { assert.equal(r.message.id, m1.id); assert.deepEqual(r.message.tags, { k: 'v1' }) },
    unknown: { id: missing } },
  { op: 'listMessages', read, args: () => ({ conversationId: c1.id, tags: { k: 'v1' } }),
    check: (r) => assert.deepEqual(r.messages.map((m) => m.id), [m1.id]) },
  { op: 'getOrCreateMessage', args: () => ({ conversationId: c1.id, userId: botId, type: 'text', payload: { text: 'hello' }, tags: { k: 'v1' }, discriminateByTags: ['k'] }),
    check: (r) => { assert.equal(r.message.id, m1.id); assert.equal(r.meta.created, false) },
    unknown: { conversationId: missing, userId: botId, type: 'text', payload: { text: 'x' }, tags: {} },
    malformed: { conversationId: c1.id, userId: botId, type: 'text', payload: { text: 'x' }, tags: { k: 1 } },
    oversized: { conversationId: c1.id, userId: botId, type: 'text', payload: { text: big }, tags: {} } },
  { op: 'updateMessage', args: () => ({ id: m1.id, tags: { acked: 'yes' } }),
    check: (r) => assert.deepEqual(r.message.tags, { k: 'v1', acked: 'yes' }),
    unknown: { id: missing, tags: {} }, malformed: { id: m1.id, tags: 'x' }, oversized: { id: m1.id, tags: { acked: big } } },
  { op: 'importMessages', args: () => ({ messages: [{ conversationId: c1.id, userId: u1.id, type: 'text', payload: { text: 'old' }, tags: {}, createdAt: '2020-01-01T00:00:00.000Z', discriminateByTags: [] }] }),
    check: (r) => { assert.equal(r.messages.length, 1); assert.equal(r.messages[0].createdAt, '2020-01-01T00:00:00.000Z'); assert.equal(r.messages[0].direction, 'incoming') },
    unknown: { messages: [{ conversationId: missing, userId: u1.id, type: 'text', payload: { text: 'x' }, tags: {}, createdAt: '2020-01-01T00:00:00.000Z', discriminateByTags: [] }] },
    malformed: { messages: 'nope' },
    oversized: { messages: [{ conversationId: c1.id, userId: u1.id, type: 'text', payload: { text: big }, tags: {}, createdAt: '2020-01-01T00:00:00.000Z', discriminateByTags: [] }] } },
  { op: 'initializeIncomingMessage', args: () => ({ user: { tags: { ext: 'u-1' }, discriminateByTags: ['ext'] }, conversation: { channel: 'dm', tags: { thread: 't-1' }, discriminateByTags: ['thread'] }, message: { type: 'text', payload: { text: 'incoming' }, tags: { ext: 'in-1' }, discriminateByTags: ['ext'] } }),
    check: (r) => { assert.equal(r.user.id, u1.id); assert.equal(r.conversation.id, c1.id); assert.equal(r.message.direction, 'incoming'); assert.equal(r.message.userId, u1.id) },
    unknown: { userId: missing, conversationId: c1.id },
    malformed: { userId: 5 },
    oversized: { userId: u1.id, conversationId: c1.id, message: { type: 'text', payload: { text: big }, tags: {}, discriminateByTags: [] } } },
  // events
  { op: 'createEvent', args: () => ({ type: 'custom', payload: { n: 2 }, conversationId: c1.id, userId: u1.id }),
    check: (r) => { assert.equal(r.event.type, 'custom'); assert.deepEqual(r.event.payload, { n: 2 }); assert.equal(r.event.status, 'processed') },
    unknown: { type: 'custom', payload: {}, conversationId: missing }, malformed: { type: 'custom', payload: [1] },
    oversized: { type: 'custom', payload: { big } } },
  { op: 'getEvent', read, args: () => ({ id: e1.id }), check: (r) => { assert.equal(r.event.id, e1.id); assert.equal(r.event.failureReason, null) },
    unknown: { id: missing } },
  { op: 'listEvents', read, args: () => ({ conversationId: c1.id, type: 'custom' }), check: (r) => assert.ok(r.events.some((e) => e.id === e1.id)) },
  // states
  { op: 'getState', read, args: () => ({ type: 'conversation', id: c1.id, name: 'memo' }),
    check: (r) => { assert.deepEqual(r.state.payload, { a: 1 }); assert.equal(r.state.conversationId, c1.id); assert.equal(r.state.botId, botId) },
    unknown: { type: 'conversation', id: c1.id, name: 'x' } },
  { op: 'setState', args: () => ({ type: 'conversation', id: c1.id, name: 'memo', payload: { a: 2 } }),
    check: (r) => assert.deepEqual(r.state.payload, { a: 2 }),
    unknown: { type: 'conversation', id: missing, name: 'x', payload: {} }, malformed: { type: 'conversation', id: c1.id, name: 'x', payload: 'p' },
    oversized: { type: 'conversation', id: c1.id, name: 'x', payload: { big } } },
  { op: 'getOrSetState', args: () => ({ type: 'conversation', id: c1.id, name: 'memo', payload: { a: 99 } }),
    check: (r) => assert.deepEqual(r.state.payload, { a: 2 }),
    unknown: { type: 'user', id: missing, name: 'x', payload: {} }, malformed: { type: 'conversation', id: c1.id, name: 'x', payload: 1 },
    oversized: { type: 'conversation', id: c1.id, name: 'x', payload: { big } } },
  { op: 'patchState', args: () => ({ type: 'conversation', id: c1.id, name: 'memo', payload: { b: 3 } }),
    check: (r) => assert.deepEqual(r.state.payload, { a: 2, b: 3 }),
    unknown: { type: 'conversation', id: c1.id, name: 'x', payload: {} }, malformed: { type: 'conversation', id: c1.id, name: 'memo', payload: [] },
    oversized: { type: 'conversation', id: c1.id, name: 'memo', payload: { big } } },
  { op: 'setStateExpiry', args: () => ({ type: 'conversation', id: c1.id, name: 'memo', expiry: 3600000 }),
    check: (r) => { assert.equal(r.state.expiry, 3600000); assert.ok(Date.parse(r.state.expiresAt) > Date.now()) },
    unknown: { type: 'conversation', id: c1.id, name: 'x', expiry: 1000 }, malformed: { type: 'conversation', id: c1.id, name: 'memo', expiry: 'soon' },
    oversized: null /* the body holds only a number */ },
  // workflows
  { op: 'createWorkflow', args: () => ({ name: 'flow', status: 'in_progress', input: { q: 1 }, conversationId: c1.id, tags: { k: 'w2' } }),
    check: (r) => { assert.equal(r.workflow.status, 'in_progress'); assert.deepEqual(r.workflow.input, { q: 1 }); assert.deepEqual(r.workflow.output, {}) },
    unknown: { name: 'flow', status: 'pending', conversationId: missing }, malformed: { name: 'flow', status: 'pending', input: 'x' },
    oversized: { name: 'flow', status: 'pending', input: { big } } },
  { op: 'getWorkflow', read, args: () => ({ id: wf1.id }), check: (r) => assert.equal(r.workflow.name, 'flow'), unknown: { id: missing } },
  { op: 'listWorkflows', read, args: () => ({ tags: { k: 'w1' } }), check: (r) => assert.deepEqual(r.workflows.map((w) => w.id), [wf1.id]) },
  { op: 'getOrCreateWorkflow', args: () => ({ name: 'flow', status: 'pending', tags: { k: 'w1' }, discriminateByTags: ['k'] }),
    check: (r) => { assert.equal(r.workflow.id, wf1.id); assert.equal(r.meta.created, false) },
    unknown: { name: 'flow', status: 'pending', userId: missing }, malformed: { name: 'flow', status: 'pending', tags: 9 },
    oversized: { name: 'flow', status: 'pending', input: { big } } },
  { op: 'updateWorkflow', args: () => ({ id: wf1.id, status: 'completed', output: { done: true } }),
    check: (r) => { assert.equal(r.workflow.status, 'completed'); assert.ok(r.workflow.completedAt); assert.deepEqual(r.workflow.output, { done: true }) },
    unknown: { id: missing, status: 'completed' }, malformed: { id: wf1.id, output: 'x' }, oversized: { id: wf1.id, output: { big } } },
  // bot-wide
  { op: 'callAction', args: () => ({ type: 'echo', input: { x: 1 } }), check: (r) => assert.deepEqual(r.output, { botId, input: { x: 1 } }),
    unknown: { type: 'no-such-action', input: {} }, malformed: { type: 'echo', input: 'x' }, oversized: { type: 'echo', input: { big } } },
  { op: 'trackAnalytics', args: () => ({ name: 'compat.tracked', count: 5 }), check: (r) => assert.deepEqual(r, {}),
    unknown: null, malformed: { name: 'compat.tracked', count: 'five' }, oversized: { name: big, count: 1 } },
  { op: 'listTagValues', read, args: () => ({ key: 'ext', type: 'user' }),
    check: (r) => assert.deepEqual(r.tags.map((t) => t.value), ['u-1', 'u-2', 'u-new']) },
  // deletes last
  { op: 'deleteMessage', args: () => ({ id: m1.id }), check: (r) => assert.deepEqual(r, {}), unknown: { id: missing } },
  { op: 'deleteWorkflow', args: () => ({ id: wf1.id }), check: (r) => assert.deepEqual(r, {}), unknown: { id: missing } },
  { op: 'deleteUser', args: () => ({ id: u2.id }), check: (r) => assert.deepEqual(r, {}), unknown: { id: missing } },
]

// refusals checks the five refusals of one operation and that none of
// them stored anything.
async function refusals(o) {
  const before = await snapshot()
  const call = (client, args) => client[o.op](args)
  await rejects(call(otherKey, o.args()), bp.ForbiddenError, `${o.op} with another bot's key`)
  await rejects(call(anon, o.args()), bp.UnauthorizedError, `${o.op} without credential`)
  if (o.unknown) await rejects(call(bot, o.unknown), bp.ResourceNotFoundError, `${o.op} with an unknown id`)
  if (o.malformed) await rejects(call(bot, o.malformed), bp.InvalidPayloadError, `${o.op} with a malformed body`)
  if (o.oversized) await rejects(call(bot, o.oversized), bp.PayloadTooLargeError, `${o.op} with an oversized body`)
  if (!o.read) await rejects(call(viewer, o.args()), bp.ForbiddenError, `${o.op} by a viewer`)
  assert.equal(await snapshot(), before, `${o.op}: a refused call stored something`)
}

for (const o of ops) {
  await scenario(o.op, async () => {
    await refusals(o)
    if (o.read) o.check(await viewer[o.op](o.args())) // viewers read
    o.check(await bot[o.op](o.args()))
  })
}

// Operations whose calls are not in the table's shape.
await scenario('getOrCreate creates when nothing matches; bot token and owner token act on the bot', async () => {
  const r = await viaToken.getOrCreateUser({ tags: { ext: 'u-fresh' }, discriminateByTags: ['ext'] })
  assert.equal(r.meta.created, true)
  const again = await owner.getOrCreateUser({ tags: { ext: 'u-fresh' }, discriminateByTags: ['ext'] })
  assert.equal(again.user.id, r.user.id)
  assert.equal(again.meta.created, false)
})

await scenario('scheduled events: created scheduled, cancelled, fired when due', async () => {
  const far = (await bot.createEvent({ type: 'later', payload: {}, conversationId: c1.id, schedule: { delay: 3600000 } })).event
  assert.equal(far.status, 'scheduled')
  const before = await snapshot()
  await rejects(otherKey.cancelScheduledEvent({ id: far.id }), bp.ForbiddenError, 'cancel with another bot key')
  await rejects(anon.cancelScheduledEvent({ id: far.id }), bp.UnauthorizedError, 'cancel without credential')
  await rejects(viewer.cancelScheduledEvent({ id: far.id }), bp.ForbiddenError, 'cancel by a viewer')
  await rejects(bot.cancelScheduledEvent({ id: missing }), bp.ResourceNotFoundError, 'cancel an unknown event')
  await rejects(otherBot.cancelScheduledEvent({ id: far.id }), bp.ResourceNotFoundError, "another bot's event")
  assert.equal(await snapshot(), before)
  assert.deepEqual(await bot.cancelScheduledEvent({ id: far.id }), {})
  assert.equal((await bot.getEvent({ id: far.id })).event.status, 'canceled')
  const soon = (await bot.createEvent({ type: 'soon', payload: {}, conversationId: c1.id, schedule: { delay: 200 } })).event
  for (let i = 0; i < 50; i++) {
    if ((await bot.getEvent({ id: soon.id })).event.status === 'processed') return
    await new Promise((r) => setTimeout(r, 100))
  }
  assert.fail('the scheduled event did not fire')
})

await scenario('state expiry: an expired state is gone and a state_expired event is stored', async () => {
  await bot.setState({ type: 'conversation', id: c1.id, name: 'short', payload: { v: 1 }, expiry: 300 })
  await new Promise((r) => setTimeout(r, 400))
  await rejects(bot.getState({ type: 'conversation', id: c1.id, name: 'short' }), bp.ResourceNotFoundError, 'expired state')
  for (let i = 0; i < 50; i++) {
    const { events } = await bot.listEvents({ conversationId: c1.id, type: 'state_expired' })
    if (events.length) {
      assert.equal(events[0].payload.state.name, 'short')
      return
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  assert.fail('no state_expired event')
})

await scenario('deleteConversation, with its refusals', async () => {
  const c = (await bot.createConversation({ channel: 'dm', tags: {} })).conversation
  const before = await snapshot()
  await rejects(otherKey.deleteConversation({ id: c.id }), bp.ForbiddenError, 'other key')
  await rejects(anon.deleteConversation({ id: c.id }), bp.UnauthorizedError, 'anon')
  await rejects(viewer.deleteConversation({ id: c.id }), bp.ForbiddenError, 'viewer')
  await rejects(bot.deleteConversation({ id: missing }), bp.ResourceNotFoundError, 'unknown')
  await rejects(otherBot.getConversation({ id: c.id }), bp.ResourceNotFoundError, "another bot's conversation")
  assert.equal(await snapshot(), before)
  assert.deepEqual(await bot.deleteConversation({ id: c.id }), {})
  await rejects(bot.getConversation({ id: c.id }), bp.ResourceNotFoundError, 'deleted conversation')
})

await scenario('incoming messages give the bot a turn; messages of users are incoming', async () => {
  const r = await bot.createMessage({ conversationId: c1.id, userId: u1.id, type: 'text', payload: { text: 'from user' }, tags: {} })
  assert.equal(r.message.direction, 'incoming')
})

await scenario('tasks of client 1.35.0', async () => {
  const created = await raw('POST', '/v1/chat/tasks', { title: 'T', description: 'D', type: 'review', data: { a: 1 }, tags: { k: 't1' } })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const task = created.body.task
  assert.equal(task.status, 'pending')
  assert.deepEqual(task.data, { a: 1 })
  const before = await snapshot()
  for (const [what, res, code] of [
    ['other key', await raw('POST', '/v1/chat/tasks', { type: 'x' }, env('OTHER_BOT_KEY')), 403],
    ['anon', await raw('POST', '/v1/chat/tasks', { type: 'x' }, ''), 401],
    ['viewer', await raw('POST', '/v1/chat/tasks', { type: 'x' }, env('VIEWER_TOKEN')), 403],
    ['unknown', await raw('GET', '/v1/chat/tasks/' + missing), 404],
    ['malformed', await raw('POST', '/v1/chat/tasks', { type: 'x', data: 'no' }), 400],
    ['oversized', await raw('POST', '/v1/chat/tasks', { type: 'x', description: big }), 413],
  ]) {
    assert.equal(res.status, code, `${what}: ${JSON.stringify(res.body)}`)
    assert.equal(typeof res.body.type, 'string')
  }
  assert.equal(await snapshot(), before)
  assert.equal((await raw('GET', '/v1/chat/tasks/' + task.id)).body.task.title, 'T')
  const upd = await raw('PUT', '/v1/chat/tasks/' + task.id, { status: 'completed', tags: { k: null } })
  assert.equal(upd.body.task.status, 'completed')
  assert.deepEqual(upd.body.task.tags, {})
  assert.equal((await raw('GET', '/v1/chat/tasks?status=completed')).body.tasks.length, 1)
  assert.equal((await raw('DELETE', '/v1/chat/tasks/' + task.id)).status, 200)
  assert.equal((await raw('GET', '/v1/chat/tasks/' + task.id)).status, 404)
})

await scenario('hosted-only operations answer 405 MethodNotFound; configureIntegration is an integration\'s', async () => {
  await rejects(bot.captureObservation({ name: 'obs', data: {} }), bp.MethodNotFoundError, 'captureObservation')
  // An integration calls it with its own credential (integrations.mjs).
  await rejects(bot.configureIntegration({ identifier: 'x' }), bp.ForbiddenError, 'configureIntegration by a bot')
})

await scenario('unknown /v1 paths answer the standard error body', async () => {
  for (const path of ['/v1/chat/nope', '/v1/nothing/here', '/v1/files/xyz']) {
    const res = await raw('GET', path)
    assert.ok(res.status >= 400, path)
    // The standard body, plus the request id Parley adds to every error.
    assert.deepEqual(Object.keys(res.body).sort(), ['code', 'id', 'message', 'requestId', 'type'], path)
  }
})

finish()
