// The Telegram integration's bundle, called over HTTP the way Parley calls
// integrations (the @botpress/sdk 5.4.3 headers: x-bp-operation,
// x-bp-configuration, x-webhook-id, x-bot-id, x-integration-id, ...),
// served by Parley's own runner (internal/botproc/runner.cjs), against two
// loopback test doubles: a Telegram Bot API, and a Runtime API that records
// what the integration asks of Parley. The Runtime API double stands in
// until Parley serves integrations; the end-to-end test runs the bundle
// under a real Parley.
//
// Run: node build.mjs && node --test test/  (or the Go test beside it).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { spawn, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..')
const runner = path.join(root, '..', '..', 'internal', 'botproc', 'runner.cjs')
const TOKEN = '123456:TEST-token'
const INTEGRATION_TOKEN = 'bp-integration-token'
const BOT_ID = 'bot-1'
const INTEGRATION_ID = 'int-telegram'
const WEBHOOK_ID = 'wh-0b7c'
const WEBHOOK_URL = `https://parley.example/${WEBHOOK_ID}`

// ---- test doubles ----

function listen(handler) {
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => handler(req, body, res))
    })
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` }))
  })
}

const json = (res, status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))

// The Telegram Bot API: POST /bot{token}/{method}.
const telegram = { calls: [], nextMessageId: 900 }
function telegramAPI(req, body, res) {
  const m = /^\/bot([^/]+)\/(\w+)$/.exec(req.url)
  if (!m) return json(res, 404, { ok: false, error_code: 404, description: 'Not Found' })
  if (m[1] !== TOKEN) return json(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' })
  const method = m[2]
  const params = body ? JSON.parse(body) : {}
  telegram.calls.push({ method, params })
  const ok = (result) => json(res, 200, { ok: true, result })
  switch (method) {
    case 'setWebhook':
    case 'deleteWebhook':
    case 'sendChatAction':
    case 'answerCallbackQuery':
      return ok(true)
    case 'getMe':
      return ok({ id: 4242, is_bot: true, first_name: 'Parley Test', username: 'parley_test_bot' })
    case 'getFile':
      return ok({ file_id: params.file_id, file_path: `photos/${params.file_id}.jpg` })
    case 'sendMessage':
    case 'sendPhoto':
      return ok({ message_id: telegram.nextMessageId++, chat: { id: Number(params.chat_id) }, date: 1 })
  }
  return json(res, 400, { ok: false, error_code: 400, description: `method ${method} not faked` })
}

// The Runtime API operations the integration calls, recorded with the
// headers it sends.
const runtime = { calls: [] }
function runtimeAPI(req, body, res) {
  const input = body ? JSON.parse(body) : {}
  const call = { op: `${req.method} ${req.url}`, input, headers: req.headers }
  runtime.calls.push(call)
  const at = '2026-01-01T00:00:00.000Z'
  const conversation = (id, tags) => ({ id, channel: 'channel', integration: 'telegram', tags, createdAt: at, updatedAt: at })
  switch (call.op) {
    case 'POST /v1/chat/conversations/get-or-create':
      return json(res, 200, { conversation: conversation(`conv-${input.tags.chatId}`, input.tags), meta: { created: true } })
    case 'POST /v1/chat/users/get-or-create':
      return json(res, 200, { user: { id: `user-${input.tags.userId}`, name: input.name, tags: input.tags, createdAt: at, updatedAt: at }, meta: { created: true } })
    case 'POST /v1/chat/messages/get-or-create':
      return json(res, 200, { message: { id: 'msg-in', ...input, direction: 'incoming', createdAt: at, updatedAt: at }, meta: { created: true } })
    case 'GET /v1/chat/conversations/conv-777':
      return json(res, 200, { conversation: conversation('conv-777', { chatId: '777' }) })
  }
  const upd = /^PUT \/v1\/chat\/messages\/([^/]+)$/.exec(call.op)
  if (upd) return json(res, 200, { message: { id: upd[1], tags: input.tags, createdAt: at, updatedAt: at } })
  return json(res, 404, { id: 'err', code: 404, type: 'ResourceNotFound', message: `${call.op} not faked` })
}

// ---- the integration under test ----

let tg, rt, proc, integrationURL, webhookSecret

before(async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-telegram-'))
  execFileSync(process.execPath, [path.join(root, 'build.mjs')], { env: { ...process.env, OUT_DIR: out } })
  tg = await listen(telegramAPI)
  rt = await listen(runtimeAPI)
  proc = spawn(process.execPath, [runner, path.join(out, 'index.cjs')], {
    env: { ...process.env, BP_API_URL: rt.url, BP_TOKEN: INTEGRATION_TOKEN },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const port = await new Promise((resolve, reject) => {
    let buf = ''
    proc.stdout.on('data', (c) => {
      buf += c
      const line = buf.split('\n')[0]
      if (buf.includes('\n')) resolve(JSON.parse(line).parleyRunner.port)
    })
    proc.on('exit', (code) => reject(new Error(`runner exited with ${code}`)))
  })
  integrationURL = `http://127.0.0.1:${port}/`
})

after(() => {
  proc?.kill()
  tg?.server.close()
  rt?.server.close()
})

const configuration = (over = {}) => ({ botToken: TOKEN, apiBaseUrl: tg.url, ...over })

// call invokes one operation with the SDK's headers.
async function call(operation, body, { config = configuration(), type } = {}) {
  const headers = {
    'content-type': 'application/json',
    'x-bot-id': BOT_ID,
    'x-bot-user-id': 'bot-user-1',
    'x-integration-id': INTEGRATION_ID,
    'x-integration-alias': 'telegram',
    'x-webhook-id': WEBHOOK_ID,
    'x-bp-operation': operation,
    'x-bp-configuration': Buffer.from(JSON.stringify(config)).toString('base64'),
  }
  if (type) headers['x-bp-type'] = type
  const res = await fetch(integrationURL, { method: 'POST', headers, body: JSON.stringify(body) })
  const text = await res.text()
  let parsed = null
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: res.status, body: parsed, text }
}

function reset() {
  telegram.calls.length = 0
  runtime.calls.length = 0
}

const only = (calls, op) => calls.filter((c) => c.op === op)

// update delivers a Telegram update as Parley's Webhook interface
// forwards it: webhook_received with the request.
const update = (u, secret = webhookSecret, secretHeader = 'x-telegram-bot-api-secret-token') =>
  call('webhook_received', {
    req: {
      method: 'POST',
      path: '',
      query: '',
      headers: { 'content-type': 'application/json', ...(secret && { [secretHeader]: secret }) },
      body: JSON.stringify(u),
    },
  })

const from = { id: 555, is_bot: false, first_name: 'Ada', last_name: 'Lovelace', username: 'ada' }
const chat = { id: 777, type: 'private' }

// Conversation and message of an outgoing message_created.
const outgoing = (type, payload, conv = { id: 'conv-777', channel: 'channel', tags: { chatId: '777' } }) =>
  call(
    'message_created',
    {
      conversation: { ...conv, integration: 'telegram', createdAt: 'x', updatedAt: 'x' },
      user: { id: 'user-555', tags: { userId: '555' }, createdAt: 'x', updatedAt: 'x' },
      type,
      payload,
      message: { id: 'msg-out', type, payload, tags: {}, direction: 'outgoing', conversationId: conv.id, userId: BOT_ID },
    },
    { type },
  )

// ---- lifecycle ----

test('register sets the Telegram webhook to the webhook URL, with a secret token', async () => {
  reset()
  const res = await call('register', { webhookUrl: WEBHOOK_URL })
  assert.equal(res.status, 200, res.text)
  const [set] = telegram.calls
  assert.equal(set.method, 'setWebhook')
  assert.equal(set.params.url, WEBHOOK_URL)
  assert.match(set.params.secret_token, /^[0-9a-f]{64}$/)
  assert.deepEqual(set.params.allowed_updates, ['message', 'callback_query'])
  webhookSecret = set.params.secret_token
})

test('register with a token Telegram refuses fails with the reason', async () => {
  reset()
  const res = await call('register', { webhookUrl: WEBHOOK_URL }, { config: configuration({ botToken: '1:wrong' }) })
  assert.ok(res.status >= 400, `status ${res.status}`)
  assert.match(res.text, /Telegram setWebhook failed \(401\): Unauthorized/)
})

// ---- incoming ----

test('a text message becomes the Telegram user, chat and an incoming text message', async () => {
  reset()
  const res = await update({ update_id: 1, message: { message_id: 10, from, chat, date: 1, text: 'hello' } })
  assert.equal(res.status, 200, res.text)
  const [conv] = only(runtime.calls, 'POST /v1/chat/conversations/get-or-create')
  assert.deepEqual(conv.input, { channel: 'channel', tags: { chatId: '777' }, discriminateByTags: ['chatId'] })
  const [user] = only(runtime.calls, 'POST /v1/chat/users/get-or-create')
  assert.deepEqual(user.input, { tags: { userId: '555' }, name: 'Ada Lovelace', discriminateByTags: ['userId'] })
  const [msg] = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.deepEqual(msg.input, {
    type: 'text',
    payload: { text: 'hello' },
    tags: { id: '10', chatId: '777' },
    userId: 'user-555',
    conversationId: 'conv-777',
    discriminateByTags: ['id'],
  })
  // The integration's credentials on every Runtime API call.
  for (const c of runtime.calls) {
    assert.equal(c.headers.authorization, `Bearer ${INTEGRATION_TOKEN}`)
    assert.equal(c.headers['x-bot-id'], BOT_ID)
    assert.equal(c.headers['x-integration-id'], INTEGRATION_ID)
    assert.equal(c.headers['x-integration-alias'], 'telegram')
  }
})

test('the secret token header is found whatever the case of its name', async () => {
  reset()
  const res = await update({ update_id: 8, message: { message_id: 15, from, chat, date: 1, text: 'canonical' } }, webhookSecret, 'X-Telegram-Bot-Api-Secret-Token')
  assert.equal(res.status, 200, res.text)
  assert.equal(only(runtime.calls, 'POST /v1/chat/messages/get-or-create').length, 1)
})

test('a photo becomes an image message with Telegram\'s file URL and the caption', async () => {
  reset()
  const photo = [
    { file_id: 'small', width: 90, height: 90 },
    { file_id: 'large', width: 1280, height: 1280 },
  ]
  const res = await update({ update_id: 2, message: { message_id: 11, from, chat, date: 1, photo, caption: 'my cat' } })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls, [{ method: 'getFile', params: { file_id: 'large' } }])
  const [msg] = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.equal(msg.input.type, 'image')
  assert.deepEqual(msg.input.payload, { imageUrl: `${tg.url}/file/bot${TOKEN}/photos/large.jpg`, title: 'my cat' })
})

test('a button click becomes a text message with the button\'s value', async () => {
  reset()
  const res = await update({
    update_id: 3,
    callback_query: { id: 'cb-1', from, data: 'size_l', message: { message_id: 901, chat, date: 1, text: 'Size?' } },
  })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls, [{ method: 'answerCallbackQuery', params: { callback_query_id: 'cb-1' } }])
  const [msg] = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.deepEqual(msg.input.payload, { text: 'size_l' })
  assert.deepEqual(msg.input.tags, { id: 'callback:cb-1', chatId: '777' })
})

test('updates that are not new user messages are answered 200 and ignored', async () => {
  for (const u of [
    { update_id: 4, edited_message: { message_id: 10, from, chat, date: 1, text: 'edited' } },
    { update_id: 5, message: { message_id: 12, from, chat, date: 1, sticker: { file_id: 's' } } },
    { update_id: 6, message: { message_id: 13, from: { ...from, is_bot: true }, chat, date: 1, text: 'bot' } },
  ]) {
    reset()
    const res = await update(u)
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(only(runtime.calls, 'POST /v1/chat/messages/get-or-create'), [], JSON.stringify(u))
  }
})

test('an update without the secret token, or with another, is refused with 401', async () => {
  for (const secret of [null, 'f'.repeat(64)]) {
    reset()
    const res = await update({ update_id: 7, message: { message_id: 14, from, chat, date: 1, text: 'forged' } }, secret)
    assert.equal(res.status, 401, res.text)
    assert.deepEqual(runtime.calls, [])
  }
})

// ---- outgoing ----

test('a text reply is sendMessage, acknowledged with the Telegram message id', async () => {
  reset()
  const res = await outgoing('text', { text: 'hi Ada' })
  assert.equal(res.status, 200, res.text)
  const [sent] = telegram.calls
  assert.deepEqual(sent, { method: 'sendMessage', params: { chat_id: '777', text: 'hi Ada' } })
  const [ack] = runtime.calls
  assert.equal(ack.op, 'PUT /v1/chat/messages/msg-out')
  assert.deepEqual(ack.input.tags, { id: String(telegram.nextMessageId - 1), chatId: '777' })
})

test('an image is sendPhoto with its title as caption', async () => {
  reset()
  const res = await outgoing('image', { imageUrl: 'https://example.com/cat.png', title: 'A cat' })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls[0], { method: 'sendPhoto', params: { chat_id: '777', photo: 'https://example.com/cat.png', caption: 'A cat' } })
})

test('a choice is a message with one inline keyboard button per option', async () => {
  reset()
  const options = [
    { label: 'Small', value: 'size_s' },
    { label: 'Large', value: 'size_l' },
  ]
  const res = await outgoing('choice', { text: 'Which size?', options })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls[0], {
    method: 'sendMessage',
    params: {
      chat_id: '777',
      text: 'Which size?',
      reply_markup: { inline_keyboard: [[{ text: 'Small', callback_data: 'size_s' }], [{ text: 'Large', callback_data: 'size_l' }]] },
    },
  })
})

test('a card is a photo with its title and subtitle as caption and its actions as buttons', async () => {
  reset()
  const card = {
    title: 'Blue shirt',
    subtitle: '29 €',
    imageUrl: 'https://example.com/shirt.png',
    actions: [
      { action: 'postback', label: 'Buy', value: 'buy_shirt' },
      { action: 'url', label: 'Details', value: 'https://example.com/shirt' },
    ],
  }
  const res = await outgoing('card', card)
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls[0], {
    method: 'sendPhoto',
    params: {
      chat_id: '777',
      photo: 'https://example.com/shirt.png',
      caption: 'Blue shirt\n29 €',
      reply_markup: { inline_keyboard: [[{ text: 'Buy', callback_data: 'buy_shirt' }], [{ text: 'Details', url: 'https://example.com/shirt' }]] },
    },
  })
  reset()
  assert.equal((await outgoing('card', { title: 'No picture', actions: [] })).status, 200)
  assert.deepEqual(telegram.calls[0], { method: 'sendMessage', params: { chat_id: '777', text: 'No picture' } })
})

test('a dropdown is a choice; a carousel is one message per card', async () => {
  reset()
  const options = [{ label: 'Red', value: 'red' }]
  assert.equal((await outgoing('dropdown', { text: 'Colour?', options })).status, 200)
  assert.deepEqual(telegram.calls[0].params.reply_markup, { inline_keyboard: [[{ text: 'Red', callback_data: 'red' }]] })
  reset()
  const first = telegram.nextMessageId
  const items = [
    { title: 'One', imageUrl: 'https://example.com/1.png', actions: [{ action: 'say', label: 'Pick one', value: 'one' }] },
    { title: 'Two', actions: [] },
  ]
  const res = await outgoing('carousel', { items })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls.map((c) => c.method), ['sendPhoto', 'sendMessage'])
  assert.deepEqual(telegram.calls[0].params.reply_markup, { inline_keyboard: [[{ text: 'Pick one', callback_data: 'one' }]] })
  assert.equal(telegram.calls[1].params.text, 'Two')
  const acks = only(runtime.calls, 'PUT /v1/chat/messages/msg-out')
  assert.equal(acks.length, 1)
  assert.deepEqual(acks[0].input.tags, { id: String(first), chatId: '777' })
})

test('a reply Telegram refuses, or to a conversation that is not a Telegram chat, fails', async () => {
  reset()
  const bad = await outgoing('text', { text: 'x' }, { id: 'conv-x', channel: 'channel', tags: {} })
  assert.ok(bad.status >= 400, `status ${bad.status}`)
  assert.match(bad.text, /not a Telegram chat/)
  assert.deepEqual(telegram.calls, [])
  const long = await outgoing('choice', { text: 'Pick', options: [{ label: 'L', value: 'v'.repeat(65) }] })
  assert.ok(long.status >= 400)
  assert.match(long.text, /longer than Telegram's 64 bytes/)
})

// ---- actions ----

test('getMe returns the Telegram bot', async () => {
  reset()
  const res = await call('action_triggered', { type: 'getMe', input: {} }, { type: 'getMe' })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(res.body.output, { id: '4242', username: 'parley_test_bot', firstName: 'Parley Test' })
})

test('sendTyping shows typing in the conversation\'s chat', async () => {
  reset()
  const res = await call('action_triggered', { type: 'sendTyping', input: { conversationId: 'conv-777' } }, { type: 'sendTyping' })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(res.body.output, { chatId: '777' })
  assert.deepEqual(runtime.calls.map((c) => c.op), ['GET /v1/chat/conversations/conv-777'])
  assert.deepEqual(telegram.calls, [{ method: 'sendChatAction', params: { chat_id: '777', action: 'typing' } }])
})

test('unregister deletes the Telegram webhook', async () => {
  reset()
  const res = await call('unregister', { webhookUrl: WEBHOOK_URL })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(telegram.calls.map((c) => c.method), ['deleteWebhook'])
})
