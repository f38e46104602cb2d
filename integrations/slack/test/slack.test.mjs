// The Slack integration's bundle, called over HTTP the way Parley calls
// integrations (the @botpress/sdk 5.4.3 headers: x-bp-operation,
// x-bp-configuration, x-webhook-id, x-bot-id, x-integration-id, ...),
// served by Parley's own runner (internal/botproc/runner.cjs), against two
// loopback test doubles: a Slack Web API, and a Runtime API that records
// what the integration asks of Parley. Slack's requests are signed here as
// Slack signs them (v0 HMAC-SHA256 with the signing secret).
//
// Run: node --test test/  (or the Go test beside it).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import crypto from 'node:crypto'
import { spawn, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..')
const runner = path.join(root, '..', '..', 'internal', 'botproc', 'runner.cjs')
const TOKEN = 'xoxb-1-test-token'
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5'
const INTEGRATION_TOKEN = 'bp-integration-token'
const BOT_ID = 'bot-1'
const INTEGRATION_ID = 'int-slack'
const WEBHOOK_ID = 'wh-51ac'
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

// The Slack Web API: POST /{method}, bearer token; Slack answers 200 with
// ok: false for a refusal.
const slack = { calls: [], nextTs: 1700000000 }
function slackAPI(req, body, res) {
  const method = req.url.replace(/^\//, '')
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return json(res, 200, { ok: false, error: 'invalid_auth' })
  const params = body ? JSON.parse(body) : {}
  slack.calls.push({ method, params, contentType: req.headers['content-type'] })
  switch (method) {
    case 'auth.test':
      return json(res, 200, { ok: true, url: 'https://parley-test.slack.com/', team: 'Parley Test', user: 'parleybot', team_id: 'T0001', user_id: 'U0BOT', bot_id: 'B0001' })
    case 'chat.postMessage':
      if (params.channel === 'C0GONE') return json(res, 200, { ok: false, error: 'channel_not_found' })
      return json(res, 200, { ok: true, channel: params.channel, ts: `${slack.nextTs++}.000100`, message: { text: params.text } })
  }
  return json(res, 404, { ok: false, error: 'unknown_method' })
}

// The Runtime API operations the integration calls, recorded with the
// headers it sends.
const runtime = { calls: [] }
function runtimeAPI(req, body, res) {
  const input = body ? JSON.parse(body) : {}
  const call = { op: `${req.method} ${req.url}`, input, headers: req.headers }
  runtime.calls.push(call)
  const at = '2026-01-01T00:00:00.000Z'
  switch (call.op) {
    case 'POST /v1/chat/conversations/get-or-create': {
      const id = `conv-${input.tags.channelId}-${input.tags.thread}`
      return json(res, 200, { conversation: { id, channel: 'channel', integration: 'slack', tags: input.tags, createdAt: at, updatedAt: at }, meta: { created: true } })
    }
    case 'POST /v1/chat/users/get-or-create':
      return json(res, 200, { user: { id: `user-${input.tags.userId}`, name: input.name, tags: input.tags, createdAt: at, updatedAt: at }, meta: { created: true } })
    case 'POST /v1/chat/messages/get-or-create':
      return json(res, 200, { message: { id: 'msg-in', ...input, direction: 'incoming', createdAt: at, updatedAt: at }, meta: { created: true } })
  }
  const upd = /^PUT \/v1\/chat\/messages\/([^/]+)$/.exec(call.op)
  if (upd) return json(res, 200, { message: { id: upd[1], tags: input.tags, createdAt: at, updatedAt: at } })
  return json(res, 404, { id: 'err', code: 404, type: 'ResourceNotFound', message: `${call.op} not faked` })
}

// ---- the integration under test ----

let sl, rt, proc, integrationURL

before(async () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-slack-'))
  execFileSync(process.execPath, [path.join(root, 'build.mjs')], { env: { ...process.env, OUT_DIR: out } })
  sl = await listen(slackAPI)
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
  sl?.server.close()
  rt?.server.close()
})

const configuration = (over = {}) => ({ botToken: TOKEN, signingSecret: SIGNING_SECRET, apiBaseUrl: sl.url, ...over })

// call invokes one operation with the SDK's headers.
async function call(operation, body, { config = configuration(), type } = {}) {
  const headers = {
    'content-type': 'application/json',
    'x-bot-id': BOT_ID,
    'x-bot-user-id': 'bot-user-1',
    'x-integration-id': INTEGRATION_ID,
    'x-integration-alias': 'slack',
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
  slack.calls.length = 0
  runtime.calls.length = 0
}

const only = (calls, op) => calls.filter((c) => c.op === op)
const now = () => Math.floor(Date.now() / 1000)

// Slack's signature, computed independently of the integration's code.
const signature = (secret, ts, body) => 'v0=' + crypto.createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')

// deliver forwards a request from Slack as Parley's Webhook interface does
// (webhook_received with the raw body and lowercased headers), signed with
// `secret` at `ts` unless told otherwise.
function deliver(body, { contentType = 'application/json', secret = SIGNING_SECRET, ts = now(), sig, extra = {} } = {}) {
  const headers = { 'content-type': contentType, ...extra }
  if (ts !== null) headers['x-slack-request-timestamp'] = String(ts)
  if (sig !== null) headers['x-slack-signature'] = sig ?? signature(secret, ts, body)
  return call('webhook_received', { req: { method: 'POST', path: '/', query: '', headers, body } })
}

const event = (ev, extra) => deliver(JSON.stringify({ token: 'x', team_id: 'T0001', type: 'event_callback', event_id: 'Ev1', event_time: now(), event: ev }), extra)
const interaction = (payload, extra) =>
  deliver(new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), { contentType: 'application/x-www-form-urlencoded', ...extra })

const userMessage = { type: 'message', channel: 'C0123', user: 'U0ADA', text: 'hello', ts: '1699999999.000200', channel_type: 'channel' }

// Conversation and message of an outgoing message_created.
const outgoing = (type, payload, conv = { id: 'conv-C0123-main', channel: 'channel', tags: { channelId: 'C0123', thread: 'main' } }) =>
  call(
    'message_created',
    {
      conversation: { ...conv, integration: 'slack', createdAt: 'x', updatedAt: 'x' },
      user: { id: 'user-U0ADA', tags: { userId: 'U0ADA' }, createdAt: 'x', updatedAt: 'x' },
      type,
      payload,
      message: { id: 'msg-out', type, payload, tags: {}, direction: 'outgoing', conversationId: conv.id, userId: BOT_ID },
    },
    { type },
  )

// ---- lifecycle ----

test('register checks the bot token with auth.test', async () => {
  reset()
  const res = await call('register', { webhookUrl: WEBHOOK_URL })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(slack.calls.map((c) => c.method), ['auth.test'])
  assert.match(slack.calls[0].contentType, /^application\/json/)
})

test('register with a token Slack refuses fails with the reason', async () => {
  reset()
  const res = await call('register', { webhookUrl: WEBHOOK_URL }, { config: configuration({ botToken: 'xoxb-wrong' }) })
  assert.ok(res.status >= 400, `status ${res.status}`)
  assert.match(res.text, /Slack auth.test failed \(200\): invalid_auth/)
})

test('register with an unreachable Slack fails with the reason', async () => {
  reset()
  const res = await call('register', { webhookUrl: WEBHOOK_URL }, { config: configuration({ apiBaseUrl: 'http://127.0.0.1:1' }) })
  assert.ok(res.status >= 400, `status ${res.status}`)
  assert.match(res.text, /Slack auth.test failed \(0\): cannot reach/)
})

test('unregister answers 200 and calls nothing', async () => {
  reset()
  const res = await call('unregister', { webhookUrl: WEBHOOK_URL })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(slack.calls, [])
})

// ---- signatures ----

test('url_verification is answered with its challenge', async () => {
  reset()
  const res = await deliver(JSON.stringify({ token: 'x', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' }))
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(res.body, { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' })
  assert.deepEqual(runtime.calls, [])
})

test('requests not signed by Slack are refused with 401 and store nothing', async () => {
  const body = JSON.stringify({ type: 'event_callback', event: userMessage })
  const cases = [
    ['no signature', { sig: null }, /missing/],
    ['no timestamp', { ts: null, sig: 'v0=' + 'a'.repeat(64) }, /missing/],
    ['another secret', { secret: 'not-the-secret' }, /does not match/],
    ['a forged signature', { sig: 'v0=' + '0'.repeat(64) }, /does not match/],
    ['a signature of another body', { sig: signature(SIGNING_SECRET, now(), body + ' ') }, /does not match/],
    ['a stale timestamp (6 minutes ago)', { ts: now() - 360 }, /5 minutes/],
    ['a timestamp 6 minutes ahead', { ts: now() + 360 }, /5 minutes/],
    ['a timestamp that is not a number', { ts: 'yesterday' }, /not a number/],
  ]
  for (const [name, opts, reason] of cases) {
    reset()
    const res = await deliver(body, opts)
    assert.equal(res.status, 401, `${name}: ${res.text}`)
    assert.match(res.body.error, reason, name)
    assert.deepEqual(runtime.calls, [], name)
  }
  // A url_verification needs a signature too.
  const res = await deliver(JSON.stringify({ type: 'url_verification', challenge: 'c' }), { sig: null })
  assert.equal(res.status, 401)
})

test('a signed request 4 minutes old is accepted; a signed non-JSON body is 400', async () => {
  reset()
  const res = await event({ ...userMessage, ts: '1699999999.000300' }, { ts: now() - 240 })
  assert.equal(res.status, 200, res.text)
  assert.equal(only(runtime.calls, 'POST /v1/chat/messages/get-or-create').length, 1)
  reset()
  const bad = await deliver('not json')
  assert.equal(bad.status, 400)
  assert.deepEqual(runtime.calls, [])
})

// ---- incoming ----

test('a message event becomes the Slack user, channel and an incoming text message keyed by its ts', async () => {
  reset()
  const res = await event(userMessage)
  assert.equal(res.status, 200, res.text)
  const [conv] = only(runtime.calls, 'POST /v1/chat/conversations/get-or-create')
  assert.deepEqual(conv.input, { channel: 'channel', tags: { channelId: 'C0123', thread: 'main' }, discriminateByTags: ['channelId', 'thread'] })
  const [user] = only(runtime.calls, 'POST /v1/chat/users/get-or-create')
  assert.deepEqual(user.input, { tags: { userId: 'U0ADA' }, discriminateByTags: ['userId'] })
  const [msg] = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.deepEqual(msg.input, {
    type: 'text',
    payload: { text: 'hello' },
    tags: { ts: '1699999999.000200', channelId: 'C0123' },
    userId: 'user-U0ADA',
    conversationId: 'conv-C0123-main',
    discriminateByTags: ['ts', 'channelId'],
  })
  for (const c of runtime.calls) {
    assert.equal(c.headers.authorization, `Bearer ${INTEGRATION_TOKEN}`)
    assert.equal(c.headers['x-bot-id'], BOT_ID)
    assert.equal(c.headers['x-integration-id'], INTEGRATION_ID)
  }
})

test('a message in a thread is the thread\'s conversation', async () => {
  reset()
  const res = await event({ ...userMessage, ts: '1699999999.000400', thread_ts: '1699999990.000100' })
  assert.equal(res.status, 200, res.text)
  const [conv] = only(runtime.calls, 'POST /v1/chat/conversations/get-or-create')
  assert.deepEqual(conv.input.tags, { channelId: 'C0123', thread: '1699999990.000100' })
  const [msg] = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.equal(msg.input.conversationId, 'conv-C0123-1699999990.000100')
})

test('Slack\'s retry of an event asks for the same message (keyed by ts), so it is stored once', async () => {
  reset()
  await event(userMessage)
  const retry = await event(userMessage, { extra: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' } })
  assert.equal(retry.status, 200, retry.text)
  const msgs = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.equal(msgs.length, 2)
  assert.deepEqual(msgs[1].input.tags, msgs[0].input.tags)
  assert.deepEqual(msgs[1].input.discriminateByTags, ['ts', 'channelId'])
})

test('bot messages, subtypes and other events are answered 200 and ignored', async () => {
  for (const ev of [
    { ...userMessage, bot_id: 'B0001' },
    { ...userMessage, subtype: 'message_changed' },
    { ...userMessage, subtype: 'bot_message', user: undefined },
    { ...userMessage, text: '' },
    { type: 'reaction_added', user: 'U0ADA', reaction: 'thumbsup', item: { type: 'message', channel: 'C0123', ts: '1' } },
  ]) {
    reset()
    const res = await event(ev)
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(runtime.calls, [], JSON.stringify(ev))
  }
})

test('a button click (block_actions) becomes a text message with the button\'s value', async () => {
  reset()
  const payload = {
    type: 'block_actions',
    user: { id: 'U0ADA', username: 'ada', name: 'ada' },
    channel: { id: 'C0123', name: 'general' },
    container: { type: 'message', message_ts: '1700000000.000100', channel_id: 'C0123' },
    message: { ts: '1700000000.000100', thread_ts: '1699999990.000100' },
    actions: [{ type: 'button', action_id: 'button:1', block_id: 'b', value: 'size_l', text: { type: 'plain_text', text: 'Large' }, action_ts: '1700000005.123456' }],
  }
  const res = await interaction(payload)
  assert.equal(res.status, 200, res.text)
  const [conv] = only(runtime.calls, 'POST /v1/chat/conversations/get-or-create')
  assert.deepEqual(conv.input.tags, { channelId: 'C0123', thread: '1699999990.000100' })
  const [user] = only(runtime.calls, 'POST /v1/chat/users/get-or-create')
  assert.deepEqual(user.input, { tags: { userId: 'U0ADA' }, name: 'ada', discriminateByTags: ['userId'] })
  const [msg] = only(runtime.calls, 'POST /v1/chat/messages/get-or-create')
  assert.deepEqual(msg.input.payload, { text: 'size_l' })
  assert.deepEqual(msg.input.tags, { ts: 'action:1700000005.123456', channelId: 'C0123' })

  // A link button's click carries no value: nothing stored. Unsigned: 401.
  reset()
  const link = { ...payload, actions: [{ type: 'button', action_id: 'link:0', url: 'https://example.com', action_ts: '1' }] }
  assert.equal((await interaction(link)).status, 200)
  assert.deepEqual(runtime.calls, [])
  assert.equal((await interaction(payload, { secret: 'wrong' })).status, 401)
  assert.deepEqual(runtime.calls, [])
})

// ---- outgoing ----

test('a text reply is chat.postMessage, acknowledged with Slack\'s ts', async () => {
  reset()
  const res = await outgoing('text', { text: 'hi Ada' })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(slack.calls.map((c) => [c.method, c.params]), [['chat.postMessage', { channel: 'C0123', text: 'hi Ada' }]])
  const [ack] = runtime.calls
  assert.equal(ack.op, 'PUT /v1/chat/messages/msg-out')
  assert.deepEqual(ack.input.tags, { ts: `${slack.nextTs - 1}.000100`, channelId: 'C0123' })
})

test('a reply in a thread conversation is posted in the thread', async () => {
  reset()
  const res = await outgoing('text', { text: 'in thread' }, { id: 'conv-t', channel: 'channel', tags: { channelId: 'C0123', thread: '1699999990.000100' } })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(slack.calls[0].params, { channel: 'C0123', thread_ts: '1699999990.000100', text: 'in thread' })
})

test('an image is an image block with its title', async () => {
  reset()
  const res = await outgoing('image', { imageUrl: 'https://example.com/cat.png', title: 'A cat' })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(slack.calls[0].params, {
    channel: 'C0123',
    text: 'A cat',
    blocks: [{ type: 'image', image_url: 'https://example.com/cat.png', alt_text: 'A cat', title: { type: 'plain_text', text: 'A cat' } }],
  })
  assert.equal(only(runtime.calls, 'PUT /v1/chat/messages/msg-out').length, 1)
})

test('a choice (and a dropdown) is a section and an actions block with one button per option', async () => {
  for (const type of ['choice', 'dropdown']) {
    reset()
    const options = [
      { label: 'Small', value: 'size_s' },
      { label: 'Large', value: 'size_l' },
    ]
    const res = await outgoing(type, { text: 'Which size?', options })
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(slack.calls[0].params, {
      channel: 'C0123',
      text: 'Which size?',
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: 'Which size?' } },
        {
          type: 'actions',
          elements: [
            { type: 'button', text: { type: 'plain_text', text: 'Small' }, value: 'size_s', action_id: 'button:0' },
            { type: 'button', text: { type: 'plain_text', text: 'Large' }, value: 'size_l', action_id: 'button:1' },
          ],
        },
      ],
    })
  }
})

test('a card is an image, its title and subtitle, and its actions as buttons', async () => {
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
  assert.deepEqual(slack.calls[0].params, {
    channel: 'C0123',
    text: 'Blue shirt\n29 €',
    blocks: [
      { type: 'image', image_url: 'https://example.com/shirt.png', alt_text: 'Blue shirt' },
      { type: 'section', text: { type: 'mrkdwn', text: '*Blue shirt*\n29 €' } },
      {
        type: 'actions',
        elements: [
          { type: 'button', text: { type: 'plain_text', text: 'Buy' }, value: 'buy_shirt', action_id: 'button:0' },
          { type: 'button', text: { type: 'plain_text', text: 'Details' }, url: 'https://example.com/shirt', action_id: 'link:1' },
        ],
      },
    ],
  })
  reset()
  assert.equal((await outgoing('card', { title: 'No picture', actions: [] })).status, 200)
  assert.deepEqual(slack.calls[0].params.blocks, [{ type: 'section', text: { type: 'mrkdwn', text: '*No picture*' } }])
  reset()
  assert.equal((await outgoing('card', { title: '', imageUrl: 'https://example.com/x.png', actions: [] })).status, 200)
  assert.deepEqual(slack.calls[0].params, { channel: 'C0123', text: 'card', blocks: [{ type: 'image', image_url: 'https://example.com/x.png', alt_text: 'image' }] })
})

test('a reply Slack refuses, or to a conversation that is not a Slack channel, fails and is not acknowledged', async () => {
  reset()
  const bad = await outgoing('text', { text: 'x' }, { id: 'conv-x', channel: 'channel', tags: {} })
  assert.ok(bad.status >= 400, `status ${bad.status}`)
  assert.match(bad.text, /not a Slack channel/)
  assert.deepEqual(slack.calls, [])
  const gone = await outgoing('text', { text: 'x' }, { id: 'conv-g', channel: 'channel', tags: { channelId: 'C0GONE', thread: 'main' } })
  assert.ok(gone.status >= 400)
  assert.match(gone.text, /Slack chat.postMessage failed \(200\): channel_not_found/)
  const long = await outgoing('choice', { text: 'Pick', options: [{ label: 'L', value: 'v'.repeat(2001) }] })
  assert.ok(long.status >= 400)
  assert.match(long.text, /longer than Slack's 2000 characters/)
  assert.deepEqual(only(runtime.calls, 'PUT /v1/chat/messages/msg-out'), [])
})

// ---- actions ----

test('getBotInfo returns the Slack bot user and workspace (auth.test)', async () => {
  reset()
  const res = await call('action_triggered', { type: 'getBotInfo', input: {} }, { type: 'getBotInfo' })
  assert.equal(res.status, 200, res.text)
  assert.deepEqual(res.body.output, { userId: 'U0BOT', botId: 'B0001', user: 'parleybot', teamId: 'T0001', team: 'Parley Test', url: 'https://parley-test.slack.com/' })
  assert.deepEqual(slack.calls.map((c) => c.method), ['auth.test'])
})
