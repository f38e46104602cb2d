// The built-in webhook integration, seen from outside: a @botpress/chat
// user listens in a conversation while an external service POSTs JSON to
// the bot's webhook URL; the bot's answer to the webhook event reaches the
// user. Also the refusals: wrong or missing secret (401), non-JSON (400),
// an unknown conversation (400), oversized (413), an unknown webhook id
// (404), another method (405), each with the standard error body.
//
// Env: CHAT_URL (the chat integration's webhookUrl), ENCRYPTION_KEY,
// WEBHOOK_URL (the webhook integration's webhookUrl), SECRET, MODE
// ("workflow": a bot JSON with a webhook trigger; "code": a sandbox bot).
// Prints a JSON summary with accepted (the events the server accepted).
import * as chat from '@botpress/chat'
import { randomUUID } from 'node:crypto'
import { scenario, finish, assert, env } from './lib.mjs'

const chatUrl = env('CHAT_URL')
const webhookUrl = env('WEBHOOK_URL')
const secret = env('SECRET')
const mode = env('MODE')
const userId = `webhook-user-${randomUUID().slice(0, 8)}`
const client = await chat.Client.connect({ apiUrl: chatUrl, userId, encryptionKey: env('ENCRYPTION_KEY') })
let accepted = 0

async function post(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const json = await res.json().catch(() => null)
  if (res.status === 200) accepted++
  return { status: res.status, body: json }
}

function standardError(res, status, type) {
  assert.equal(res.status, status, JSON.stringify(res.body))
  assert.equal(res.body?.type, type, JSON.stringify(res.body))
  assert.equal(res.body?.code, status)
  assert.ok(typeof res.body?.id === 'string' && res.body.id.length > 0, 'error id')
  assert.ok(typeof res.body?.message === 'string' && res.body.message.length > 0, 'error message')
}

// botSays opens a conversation, listens, runs send() and resolves with
// the first bot message's text.
async function botSays(send) {
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  try {
    const got = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no bot message within 15 s')), 15_000)
      listener.on('message_created', (m) => {
        if (m.userId !== userId) {
          clearTimeout(timer)
          resolve(m)
        }
      })
    })
    const res = await send(conversation.id)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(res.body.event.type, 'webhook:event')
    const m = await got
    return { text: m.payload.text ?? m.payload.block?.text, res, conversationId: conversation.id }
  } finally {
    await listener.disconnect()
  }
}

if (mode === 'workflow') {
  await scenario('a POST starts the webhook trigger\'s workflow, which messages the chat user', async () => {
    const { text, res, conversationId } = await botSays((id) =>
      post(webhookUrl, { conversationId: id, text: 'order 42 shipped' }, { 'x-bp-secret': secret }),
    )
    assert.equal(res.body.event.conversationId, conversationId)
    assert.equal(res.body.event.userId, userId, 'the conversation owner is the event user')
    assert.equal(text, 'webhook says order 42 shipped via webhook, flow hook')
  })
} else {
  await scenario('a bot-level event: the sandbox bot messages the conversation named in the JSON', async () => {
    const { text, res, conversationId } = await botSays((id) =>
      post(`${webhookUrl}/orders/new?q=1&q=2&r=x`, { notify: id, text: 'hello' }, { 'x-bp-secret': secret }),
    )
    assert.notEqual(res.body.event.conversationId, conversationId, 'the webhook conversation')
    assert.equal(res.body.event.userId, null)
    assert.equal(text, 'webhook:event webhook hello POST /orders/new 1,2 x webhook-conversation')
  })
  await scenario('with conversationId, the event is the conversation\'s', async () => {
    const { text } = await botSays((id) => post(webhookUrl, { conversationId: id, text: 'direct' }, { 'x-bp-secret': secret }))
    assert.equal(text, 'webhook:event webhook direct POST    same-conversation')
  })
}

await scenario('a wrong or missing secret is 401 with the standard error body', async () => {
  standardError(await post(webhookUrl, { text: 'x' }, { 'x-bp-secret': secret + 'x' }), 401, 'Unauthorized')
  standardError(await post(webhookUrl, { text: 'x' }), 401, 'Unauthorized')
})
await scenario('a body that is not JSON is 400', async () => {
  standardError(await post(webhookUrl, 'text=hello', { 'x-bp-secret': secret }), 400, 'InvalidPayload')
})
await scenario('an unknown conversation or user is 400', async () => {
  standardError(await post(webhookUrl, { conversationId: 'nope' }, { 'x-bp-secret': secret }), 400, 'InvalidPayload')
  standardError(await post(webhookUrl, { userId: 'nobody' }, { 'x-bp-secret': secret }), 400, 'InvalidPayload')
})
await scenario('a body above 1 MB is 413', async () => {
  const big = JSON.stringify({ blob: 'x'.repeat(1 << 20) })
  standardError(await post(webhookUrl, big, { 'x-bp-secret': secret }), 413, 'PayloadTooLarge')
})
await scenario('an unknown webhook id is 404, another method 405', async () => {
  const unknown = webhookUrl.replace(/[^/]+$/, randomUUID())
  standardError(await post(unknown, {}, { 'x-bp-secret': secret }), 404, 'ResourceNotFound')
  const put = await fetch(webhookUrl, { method: 'PUT', body: '{}', headers: { 'x-bp-secret': secret } })
  standardError({ status: put.status, body: await put.json() }, 405, 'MethodNotFound')
})
console.log(JSON.stringify({ accepted }))
finish()
