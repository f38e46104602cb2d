// Compatibility suite: drives a Parley Chat API with the real, unmodified
// @botpress/chat 0.5.5 client. It ports every e2e test shipped in the
// package  to plain node, plus Last-Event-ID replay
// through the client's own `eventsource` dependency, and (when API_URL_2
// names a second node on the same PostgreSQL database) cross-node fan-out.
//
// Env: API_URL (base URL with the webhook id), ENCRYPTION_KEY (the chat
// integration's encryption key), API_URL_2 (optional). Prints a JSON
// summary; exits 1 on any failure.
import * as chat from '@botpress/chat'
import jwt from 'jsonwebtoken'
import EventSource from 'eventsource'
import { randomUUID } from 'node:crypto'

const apiUrl = must('API_URL')
const encryptionKey = must('ENCRYPTION_KEY')
const apiUrl2 = process.env.API_URL_2 || ''
const TEST_TIMEOUT = 20_000 // as the package's vitest config

function must(name) {
  const v = process.env[name]
  if (!v) {
    console.error(`${name} not set`)
    process.exit(2)
  }
  return v
}

// ---- helpers (the package's e2e/utils.ts) ----

const halfId = () => {
  const id = randomUUID()
  return id.slice(0, id.length / 2)
}
const getUserFid = () => `test-user-${halfId()}`
const getConversationFid = () => `test-conversation-${halfId()}`
const getUserKey = (userId) => jwt.sign({ id: userId }, encryptionKey, { algorithm: 'HS256' })

const waitFor = (listener, signal) =>
  new Promise((resolve, reject) => {
    listener.once(signal, resolve)
    listener.once('error', reject)
  })

// ---- assertions (vitest's toEqual: undefined-valued keys are ignored) ----

class AssertionError extends Error {}

const clean = (v) => {
  if (Array.isArray(v)) return v.map(clean)
  if (v && typeof v === 'object') {
    const o = {}
    for (const k of Object.keys(v).sort()) if (v[k] !== undefined) o[k] = clean(v[k])
    return o
  }
  return v
}
const toEqual = (a, b, what) => {
  const x = JSON.stringify(clean(a))
  const y = JSON.stringify(clean(b))
  if (x !== y) throw new AssertionError(`${what}: ${x} != ${y}`)
}
const toBe = (a, b, what) => {
  if (a !== b) throw new AssertionError(`${what}: ${JSON.stringify(a)} !== ${JSON.stringify(b)}`)
}
const ok = (cond, what) => {
  if (!cond) throw new AssertionError(what)
}
const rejects = async (promise, cls, what) => {
  try {
    await (typeof promise === 'function' ? promise() : promise)
  } catch (e) {
    if (e instanceof cls) return
    throw new AssertionError(`${what}: rejected with ${e?.constructor?.name} ${e?.message}, want ${cls.name}`)
  }
  throw new AssertionError(`${what}: resolved, want ${cls.name}`)
}
const sortByDate = (ms) =>
  ms
    .map((m, i) => [m, i])
    .sort((a, b) => new Date(a[0].createdAt).getTime() - new Date(b[0].createdAt).getTime() || a[1] - b[1])
    .map(([m]) => m)

// ---- tests ----

const tests = []
const test = (name, fn) => tests.push({ name, fn })

// user.test.ts
test('user: invalid fid', async () => {
  const client = new chat.Client({ apiUrl })
  const userFid = getUserFid()
  const invalid = [`invalid+${userFid}`, `invalid_${userFid}_${userFid}_${userFid}_${userFid}`]
  for (const id of invalid) await rejects(client.createUser({ id }), chat.InvalidPayloadError, `createUser ${id}`)
  for (const id of invalid)
    await rejects(client.getOrCreateUser({ 'x-user-key': getUserKey(id) }), chat.InvalidPayloadError, `getOrCreateUser ${id}`)
})

test('user: duplicate fid', async () => {
  const client = new chat.Client({ apiUrl })
  const userFid = getUserFid()
  const createUser = () => client.createUser({ id: userFid })
  await createUser()
  await rejects(createUser, chat.AlreadyExistsError, 'second createUser')
})

test('user: get-or-create creates', async () => {
  const client = new chat.Client({ apiUrl })
  const userKey = getUserKey(getUserFid())
  await client.getOrCreateUser({ 'x-user-key': userKey })
  const { user } = await client.getOrCreateUser({ 'x-user-key': userKey })
  ok(user.id, 'user id defined')
})

test('user: get-or-create is stable', async () => {
  const client = new chat.Client({ apiUrl })
  const { key: userKey } = await client.createUser({})
  const { user } = await client.getUser({ 'x-user-key': userKey })
  const getOrCreate = () => client.getOrCreateUser({ 'x-user-key': userKey }).then((r) => r.user.id)
  toBe(await getOrCreate(), user.id, 'first')
  toBe(await getOrCreate(), user.id, 'second')
})

test('user: get-or-create with fid is stable', async () => {
  const client = new chat.Client({ apiUrl })
  const userFid = getUserFid()
  const userKey = getUserKey(userFid)
  await client.createUser({ id: userFid })
  const { user } = await client.getUser({ 'x-user-key': userKey })
  const getOrCreate = () => client.getOrCreateUser({ 'x-user-key': userKey }).then((r) => r.user.id)
  toBe(await getOrCreate(), user.id, 'first')
  toBe(await getOrCreate(), user.id, 'second')
})

test('user: updateUser (PUT /users/me)', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { user } = await client.updateUser({ name: 'Ann', pictureUrl: 'https://x/p.png', profile: 'hello' })
  toBe(user.name, 'Ann', 'name')
  toEqual((await client.getUser({})).user, user, 'getUser after update')
})

// conversation.test.ts
test('conversation: invalid fid', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const convFid = getConversationFid()
  const invalid = [`invalid+${convFid}`, `invalid_${convFid}_${convFid}_${convFid}`]
  for (const id of invalid) await rejects(client.createConversation({ id }), chat.InvalidPayloadError, `create ${id}`)
  for (const id of invalid) await rejects(client.getOrCreateConversation({ id }), chat.InvalidPayloadError, `getOrCreate ${id}`)
})

test('conversation: duplicate fid', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const fid = getConversationFid()
  const create = () => client.createConversation({ id: fid })
  await create()
  await rejects(create, chat.AlreadyExistsError, 'second create')
})

test('conversation: generated id stable', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const get = () => client.getConversation({ id: conversation.id }).then((r) => r.conversation.id)
  toBe(await get(), conversation.id, 'first')
  toBe(await get(), conversation.id, 'second')
})

test('conversation: fid id stable', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const fid = getConversationFid()
  await client.createConversation({ id: fid })
  const get = () => client.getConversation({ id: fid }).then((r) => r.conversation.id)
  toBe(await get(), fid, 'first')
  toBe(await get(), fid, 'second')
})

test('conversation: participants only', async () => {
  const client = new chat.Client({ apiUrl })
  const user1 = await client.createUser({})
  const user2 = await client.createUser({})
  const user3 = await client.createUser({})
  const { conversation } = await client.createConversation({ 'x-user-key': user1.key })
  await client.addParticipant({ conversationId: conversation.id, 'x-user-key': user1.key, userId: user2.user.id })
  ok(await client.getConversation({ id: conversation.id, 'x-user-key': user1.key }), 'owner')
  ok(await client.getConversation({ id: conversation.id, 'x-user-key': user2.key }), 'participant')
  await rejects(client.getConversation({ id: conversation.id, 'x-user-key': user3.key }), chat.ForbiddenError, 'third user')
})

test('conversation: list and delete', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const all = await client.list.conversations({}).collect()
  ok(all.some((c) => c.id === conversation.id), 'listed')
  await client.deleteConversation({ id: conversation.id })
  await rejects(client.getConversation({ id: conversation.id }), chat.ResourceNotFoundError, 'deleted')
})

// event.test.ts
test('event: custom events', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  const received = new Promise((resolve) => {
    listener.onceOrMore('event_created', (ev) => {
      if (ev.userId === client.user.id) return 'keep-listening'
      resolve(ev)
      return 'stop-listening'
    })
  })
  const sent = client.createEvent({ conversationId: conversation.id, payload: { foo: 'bar' } }).then((r) => r.event)
  const [eventReceived, eventSent] = await Promise.all([received, sent])
  const { event: eventFetched } = await client.getEvent({ id: eventSent.id })
  toEqual(eventFetched, eventSent, 'getEvent')
  toEqual(eventReceived.payload, eventSent.payload, 'echoed payload')
  toBe(eventReceived.isBot, true, 'bot event isBot')
  await listener.disconnect()
})

// message.test.ts
const roundTrip = async (client, conversationId, payload) => {
  const listener = await client.listenConversation({ id: conversationId })
  const reply = new Promise((resolve) => {
    listener.onceOrMore('message_created', (ev) => {
      if (ev.userId === client.user.id) return 'keep-listening'
      resolve(ev)
      return 'stop-listening'
    })
  })
  const sent = client.createMessage({ conversationId, payload }).then((r) => r.message)
  const [{ isBot, ...messageReceived }, messageSent] = await Promise.all([reply, sent])
  toBe(isBot, true, 'reply isBot')
  const { messages } = await client.listMessages({ conversationId })
  const sorted = sortByDate(messages)
  toBe(sorted.length, 2, 'listMessages length')
  toEqual(sorted[0], messageSent, 'messages[0]')
  toEqual(sorted[1], messageReceived, 'messages[1]')
  await listener.disconnect()
  return messageReceived.payload
}

test('message: botpress ids', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  await roundTrip(client, conversation.id, { type: 'text', text: 'hello world' })
})

test('message: foreign ids', async () => {
  const userId = getUserFid()
  const conversationId = getConversationFid()
  const client = await chat.Client.connect({ apiUrl, userId })
  toBe(client.user.id, userId, 'user id')
  await client.createConversation({ id: conversationId })
  await roundTrip(client, conversationId, { type: 'text', text: 'hello world' })
})

test('message: client-signed JWT', async () => {
  const userId = getUserFid()
  const conversationId = getConversationFid()
  const client = await chat.Client.connect({ apiUrl, userId, encryptionKey })
  await client.getOrCreateConversation({ id: conversationId })
  await roundTrip(client, conversationId, { type: 'text', text: 'hello world' })
})

test('message: delete', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  const [{ isBot, ...createdMessage }] = await Promise.all([
    waitFor(listener, 'message_created'),
    client.createMessage({ conversationId: conversation.id, payload: { type: 'text', text: 'hello world' } }),
  ])
  const { message: fetched } = await client.getMessage({ id: createdMessage.id })
  toEqual(fetched, createdMessage, 'getMessage')
  const [deleted] = await Promise.all([waitFor(listener, 'message_deleted'), client.deleteMessage({ id: createdMessage.id })])
  toBe(deleted.id, createdMessage.id, 'deleted id')
  await rejects(client.getMessage({ id: createdMessage.id }), chat.ResourceNotFoundError, 'getMessage after delete')
  await listener.disconnect()
})

test('message: metadata', async () => {
  const metadata = { foo: 'bar' }
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const conversationId = conversation.id
  // Fired before the listener connects (the client's documented behaviour).
  const sendPromise = client.createMessage({ conversationId, payload: { type: 'text', text: 'metadata' }, metadata })
  const listener = await client.listenConversation({ id: conversationId })
  const self = new Promise((resolve) => listener.on('message_created', (m) => m.userId === client.user.id && resolve(m)))
  const bot = new Promise((resolve) => listener.on('message_created', (m) => m.userId !== client.user.id && resolve(m)))
  const [sent, receivedSelf, receivedBot] = await Promise.all([sendPromise, self, bot])
  toEqual(sent.message.metadata, metadata, 'sent metadata')
  toEqual(receivedSelf.metadata, metadata, 'own signal metadata')
  toEqual(receivedBot.metadata, metadata, 'bot signal metadata')
  for (const [m, w] of [[sent.message, 'sent'], [receivedSelf, 'self'], [receivedBot, 'bot']])
    ok(!('metadata' in m.payload), `${w} payload has metadata`)
  const fetched = (await client.listMessages({ conversationId })).messages
  const own = fetched.filter((m) => m.userId === client.user.id)
  toBe(own.length, 1, 'own messages')
  toEqual(own[0].metadata, metadata, 'listed metadata')
  await listener.disconnect()
})

test('message: user sends bloc', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  await roundTrip(client, conversation.id, {
    type: 'bloc',
    items: [
      { type: 'text', text: 'hello world' },
      { type: 'image', imageUrl: 'https://fastly.picsum.photos/id/329/200/300.jpg?hmac=_yLyj0EqdpQ-cX84OlMxz3YzOjjd7liq6b25ldkVSpA' },
    ],
  })
})

test('message: bot sends bloc', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const payload = await roundTrip(client, conversation.id, { type: 'text', text: 'bloc' })
  toBe(payload.type, 'bloc', 'reply type')
  toBe(payload.items.length, 3, 'bloc items')
})

// participant.test.ts
test('participant: add/remove', async () => {
  const client = new chat.Client({ apiUrl })
  const { key: k1 } = await client.createUser({})
  const { user: user2, key: k2 } = await client.createUser({})
  const { conversation } = await client.createConversation({ 'x-user-key': k1 })
  const listener = await client.listenConversation({ id: conversation.id, 'x-user-key': k1 })
  const post = () =>
    client.createMessage({ 'x-user-key': k2, conversationId: conversation.id, payload: { type: 'text', text: 'hello world' } })
  await rejects(post(), chat.ForbiddenError, 'before add')
  await Promise.all([
    waitFor(listener, 'participant_added'),
    client.addParticipant({ 'x-user-key': k1, conversationId: conversation.id, userId: user2.id }),
  ])
  ok(await post(), 'after add')
  await Promise.all([
    waitFor(listener, 'participant_removed'),
    client.removeParticipant({ 'x-user-key': k1, conversationId: conversation.id, userId: user2.id }),
  ])
  await rejects(post(), chat.ForbiddenError, 'after remove')
  await listener.disconnect()
})

test('participant: list permission', async () => {
  const client = new chat.Client({ apiUrl })
  const user1 = await client.createUser({})
  const user2 = await client.createUser({})
  const user3 = await client.createUser({})
  const { conversation } = await client.createConversation({ 'x-user-key': user1.key })
  await client.addParticipant({ 'x-user-key': user1.key, conversationId: conversation.id, userId: user2.user.id })
  ok(await client.listParticipants({ 'x-user-key': user1.key, conversationId: conversation.id }), 'owner')
  ok(await client.listParticipants({ 'x-user-key': user2.key, conversationId: conversation.id }), 'participant')
  await rejects(client.listParticipants({ 'x-user-key': user3.key, conversationId: conversation.id }), chat.ForbiddenError, 'third')
})

test('participant: removed listener', async () => {
  const client = new chat.Client({ apiUrl })
  const { key: k1 } = await client.createUser({})
  const { user: user2, key: k2 } = await client.createUser({})
  const { conversation } = await client.createConversation({ 'x-user-key': k1 })
  await client.addParticipant({ 'x-user-key': k1, conversationId: conversation.id, userId: user2.id })
  const l1 = await client.listenConversation({ id: conversation.id, 'x-user-key': k1 })
  const l2 = await client.listenConversation({ id: conversation.id, 'x-user-key': k2 })
  l2.on('error', () => {}) // the server ends the removed user's stream
  const m1 = []
  const m2 = []
  l1.on('message_created', (m) => m1.push(m))
  l2.on('message_created', (m) => m2.push(m))
  const send = (text) =>
    Promise.all([
      waitFor(l1, 'message_created'),
      client.createMessage({ 'x-user-key': k1, conversationId: conversation.id, payload: { type: 'text', text } }),
    ])
  // The removed user's stream ends with the notice of its own removal (or
  // closes): everything before it has been delivered by then. Waiting for
  // it keeps the count below from racing the second stream on a loaded
  // machine (upstream's test only waits for the owner's stream).
  const l2Done = new Promise((resolve) => {
    l2.once('participant_removed', resolve)
    l2.once('error', resolve)
    setTimeout(resolve, 10_000)
  })
  await send('foo')
  await client.removeParticipant({ 'x-user-key': k1, conversationId: conversation.id, userId: user2.id })
  await send('bar')
  await l2Done
  toBe(m1.filter((m) => !m.isBot).length, 2, 'owner user messages')
  toBe(m2.filter((m) => !m.isBot).length, 1, 'removed user messages')
  await l1.disconnect()
  l1.cleanup()
  await l2.disconnect()
  l2.cleanup()
})

test('participant: owner removal', async () => {
  const client = new chat.Client({ apiUrl })
  const { user, key } = await client.createUser({})
  const { conversation } = await client.createConversation({ 'x-user-key': key })
  await rejects(
    client.removeParticipant({ 'x-user-key': key, conversationId: conversation.id, userId: user.id }),
    chat.InvalidPayloadError,
    'remove owner'
  )
})

// webhook.test.ts (awaited here, unlike upstream)
test('webhook: wrong webhook id', async () => {
  const client = new chat.Client({ apiUrl: apiUrl + '1234' })
  await rejects(client.createUser({ id: 'invalid' }), chat.ChatClientError, 'createUser on a wrong webhook id')
})

test('webhook: apiUrl with a trailing slash', async () => {
  const client = await chat.Client.connect({ apiUrl: apiUrl + '/' })
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  const [, sent] = await Promise.all([
    waitFor(listener, 'message_created'),
    client.createMessage({ conversationId: conversation.id, payload: { type: 'text', text: 'slash' } }),
  ])
  ok(sent.message.id, 'sent')
  await listener.disconnect()
})

// Last-Event-ID replay after a dropped connection, with the client's own
// SSE library (the chat client itself never resumes a stream).
const openStream = (base, conversationId, key, lastEventId) =>
  new Promise((resolve, reject) => {
    const headers = { 'x-user-key': key }
    if (lastEventId !== undefined) headers['Last-Event-ID'] = String(lastEventId)
    const es = new EventSource(`${base}/conversations/${conversationId}/listen`, { headers })
    const frames = []
    const waiters = []
    es.onmessage = (ev) => {
      if (ev.data === 'ping') return
      frames.push({ id: Number(ev.lastEventId), signal: JSON.parse(ev.data) })
      while (waiters.length && waiters[0].n <= frames.length) waiters.shift().resolve()
    }
    es.onopen = () =>
      resolve({
        es,
        frames,
        until: (n) =>
          new Promise((res, rej) => {
            if (frames.length >= n) return res()
            waiters.push({ n, resolve: res })
            setTimeout(() => rej(new AssertionError(`only ${frames.length} of ${n} frames`)), 10_000)
          }),
      })
    es.onerror = (e) => {
      es.close()
      reject(new AssertionError(`eventsource error ${e?.status ?? ''} ${e?.message ?? ''}`))
    }
  })

// Node's global agent (keep-alive since Node 19) drops a reused socket idle
// for 5 s: the client listens on a socket its earlier requests used, so the
// server must keep the stream busy (the hub's comment heartbeat).
test('listen: an idle listener stays connected', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  let failed = null
  listener.on('error', (e) => { failed = e })
  await new Promise((r) => setTimeout(r, 7000))
  if (failed) throw new Error(`the listener was dropped while idle: ${failed?.message || failed}`)
  const got = new Promise((resolve) => listener.on('message_created', resolve))
  await client.createMessage({ conversationId: conversation.id, payload: { type: 'text', text: 'still there?' } })
  const m = await Promise.race([got, new Promise((_, rej) => setTimeout(() => rej(new Error('no signal after idling')), 5000))])
  if (m.payload.text !== 'still there?') throw new Error(`unexpected message ${JSON.stringify(m)}`)
  await listener.disconnect()
})

test('listen: Last-Event-ID replay after a dropped connection', async () => {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const s1 = await openStream(apiUrl, conversation.id, client.user.key)
  await client.createMessage({ conversationId: conversation.id, payload: { type: 'text', text: 'one' } })
  await s1.until(2) // the message and the bot's reply
  const last = s1.frames[s1.frames.length - 1].id
  toEqual(s1.frames.map((f) => f.id), [1, 2], 'ids of the first stream')
  s1.es.close() // the connection drops
  for (const text of ['two', 'three']) {
    await client.createMessage({ conversationId: conversation.id, payload: { type: 'text', text } })
  }
  const { messages } = await client.listMessages({ conversationId: conversation.id })
  const deadline = Date.now() + 10_000
  while ((await client.listMessages({ conversationId: conversation.id })).messages.length < 6 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50))
  }
  ok(messages.length >= 4, 'messages stored')
  const s2 = await openStream(apiUrl, conversation.id, client.user.key, last)
  await s2.until(4)
  toEqual(s2.frames.map((f) => f.id), [3, 4, 5, 6], 'replayed ids: no gap, no duplicate')
  const texts = s2.frames.filter((f) => !f.signal.data.isBot).map((f) => f.signal.data.payload.text)
  toEqual(texts, ['two', 'three'], 'replayed user messages')
  await new Promise((r) => setTimeout(r, 300))
  toBe(s2.frames.length, 4, 'nothing more')
  s2.es.close()
})

// Two nodes on one PostgreSQL database.
if (apiUrl2) {
  test('fan-out: a message posted on node 2 reaches a listener on node 1', async () => {
    const userId = getUserFid()
    const c1 = await chat.Client.connect({ apiUrl, userId, encryptionKey })
    const c2 = await chat.Client.connect({ apiUrl: apiUrl2, userId, encryptionKey })
    const { conversation } = await c1.createConversation({})
    const listener = await c1.listenConversation({ id: conversation.id })
    const mine = new Promise((resolve) => listener.on('message_created', (m) => !m.isBot && resolve(m)))
    const reply = new Promise((resolve) => listener.on('message_created', (m) => m.isBot && resolve(m)))
    const { message } = await c2.createMessage({ conversationId: conversation.id, payload: { type: 'text', text: 'across' } })
    const [{ isBot, ...got }, botReply] = await Promise.all([mine, reply])
    toEqual(got, message, 'signal on node 1 equals the message created on node 2')
    toBe(botReply.payload.text, 'Hi! You said: "across"', 'bot reply')
    await listener.disconnect()
  })

  test('fan-out: replay across nodes', async () => {
    const client = await chat.Client.connect({ apiUrl })
    const { conversation } = await client.createConversation({})
    const c2 = new chat.Client({ apiUrl: apiUrl2 })
    const s1 = await openStream(apiUrl, conversation.id, client.user.key)
    await c2.createMessage({ 'x-user-key': client.user.key, conversationId: conversation.id, payload: { type: 'text', text: 'a' } })
    await s1.until(2)
    s1.es.close()
    await c2.createMessage({ 'x-user-key': client.user.key, conversationId: conversation.id, payload: { type: 'text', text: 'b' } })
    const s2 = await openStream(apiUrl2, conversation.id, client.user.key, 2)
    await s2.until(2)
    toEqual(s2.frames.map((f) => f.id), [3, 4], 'ids replayed on node 2')
    s2.es.close()
  })
}

// ---- runner ----

const withTimeout = (p, ms, name) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`${name}: timed out after ${ms} ms`)), ms))])

const results = []
for (const t of tests) {
  const start = Date.now()
  try {
    await withTimeout(t.fn(), TEST_TIMEOUT, t.name)
    results.push({ name: t.name, ok: true, ms: Date.now() - start })
  } catch (e) {
    results.push({ name: t.name, ok: false, ms: Date.now() - start, error: String(e?.stack || e) })
  }
}
const failed = results.filter((r) => !r.ok)
console.log(JSON.stringify({ passed: results.length - failed.length, failed: failed.length, results }, null, 2))
console.log(`${results.length - failed.length} passed, ${failed.length} failed`)
process.exit(failed.length ? 1 : 0)
