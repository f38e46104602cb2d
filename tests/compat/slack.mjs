// The Slack integration (integrations/slack) end to end under a real
// Parley: installed with its own install.mjs (createIntegration and
// updateBot with @botpress/client; register checks the token against a
// Slack Web API this script runs on loopback), Slack's signed requests sent
// to the bot's webhook URL (url_verification, a message event, a retry, a
// button click; unsigned ones refused), a sandbox JavaScript bot's replies
// posted with chat.postMessage and acknowledged with Slack's ts.
// Env: API_URL, TOKEN (owner PAT), WORKSPACE_ID.
import crypto from 'node:crypto'
import http from 'node:http'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Client } from '@botpress/client'
import { scenario, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const token = env('TOKEN')
const workspaceId = env('WORKSPACE_ID')
const admin = new Client({ apiUrl, token, workspaceId })
const BOT_TOKEN = 'xoxb-e2e-token'
const SIGNING_SECRET = 'e2e-signing-secret'

// The Slack Web API, on loopback.
const calls = []
let nextTs = 1700000000
const slack = http.createServer((req, res) => {
  let body = ''
  req.on('data', (c) => (body += c))
  req.on('end', () => {
    const method = req.url.replace(/^\//, '')
    const reply = (b) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(b))
    if (req.headers.authorization !== `Bearer ${BOT_TOKEN}`) return reply({ ok: false, error: 'invalid_auth' })
    const params = body ? JSON.parse(body) : {}
    calls.push({ method, params })
    if (method === 'auth.test') return reply({ ok: true, user: 'e2ebot', user_id: 'U0BOT', bot_id: 'B0', team: 'E2E', team_id: 'T0', url: 'https://e2e.slack.com/' })
    if (method === 'chat.postMessage') return reply({ ok: true, channel: params.channel, ts: `${nextTs++}.000100` })
    reply({ ok: false, error: 'unknown_method' })
  })
})
await new Promise((r) => slack.listen(0, '127.0.0.1', r))
const slackUrl = `http://127.0.0.1:${slack.address().port}`

async function waitFor(what, cond, ms = 30000) {
  const deadline = Date.now() + ms
  for (;;) {
    const v = cond()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; Slack calls: ${JSON.stringify(calls)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

// post sends a request as Slack does, signed unless told otherwise.
async function post(url, body, { contentType = 'application/json', secret = SIGNING_SECRET, headers = {} } = {}) {
  const ts = Math.floor(Date.now() / 1000)
  const sig = 'v0=' + crypto.createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': contentType, 'x-slack-request-timestamp': String(ts), 'x-slack-signature': sig, ...headers },
    body,
  })
}
const messageEvent = (ev) => JSON.stringify({ type: 'event_callback', team_id: 'T0', event_id: `Ev${ev.ts}`, event: { type: 'message', ...ev } })

let bot, entry
await scenario('install.mjs publishes the integration and enables it on a bot (register: auth.test)', async () => {
  const code = `bot.on.message('*', async ({ message, client, event }) => {
    if (event.integration !== 'slack') return
    await client.createMessage({ conversationId: message.conversationId,
      payload: { type: 'choice', text: 'You said: ' + message.payload.text, options: [
        { label: 'Again', value: 'again' }, { label: 'Stop', value: 'stop' } ] } })
  })`
  ;({ bot } = await admin.createBot({ name: 'slack-echo', code }))
  // Asynchronous: this process serves the Slack API register calls.
  const { stdout: out } = await promisify(execFile)(process.execPath, [path.join('..', '..', 'integrations', 'slack', 'install.mjs')], {
    env: { ...process.env, PARLEY_URL: apiUrl, TOKEN: token, WORKSPACE_ID: workspaceId, BOT_ID: bot.id,
      SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_SIGNING_SECRET: SIGNING_SECRET, SLACK_API_BASE_URL: slackUrl },
  })
  assert.match(out, /created integration slack@1\.0\.0/)
  // updateBot returned once register answered.
  assert.match(out, /enabled on bot .*: status registered, webhook http/)
  ;({ bot } = await admin.getBot({ id: bot.id }))
  entry = bot.integrations.slack
  assert.equal(entry.status, 'registered', `status ${entry.status}: ${entry.statusReason}`)
  assert.ok(out.includes(`request URL (Event Subscriptions and Interactivity): ${entry.webhookUrl}`), out)
  assert.deepEqual(calls.map((c) => c.method), ['auth.test'])
})

await scenario('url_verification is answered through the webhook URL; unsigned requests get 401', async () => {
  const res = await post(entry.webhookUrl, JSON.stringify({ type: 'url_verification', challenge: 'chal-123', token: 'x' }))
  assert.equal(res.status, 200)
  assert.deepEqual(await res.json(), { challenge: 'chal-123' })
  const forged = await post(entry.webhookUrl, messageEvent({ channel: 'C1', user: 'U1', text: 'forged', ts: '1.1' }), { secret: 'wrong' })
  assert.equal(forged.status, 401)
})

await scenario('a Slack message gets the bot\'s reply as blocks; a retry is stored once; a click is a message', async () => {
  const ev = { channel: 'C1', user: 'U1', text: 'hello', ts: '1699999999.000200' }
  assert.equal((await post(entry.webhookUrl, messageEvent(ev))).status, 200)
  const reply = await waitFor('the reply', () => calls.find((c) => c.method === 'chat.postMessage' && c.params.text === 'You said: hello'))
  assert.equal(reply.params.channel, 'C1')
  assert.deepEqual(reply.params.blocks[1].elements.map((b) => b.value), ['again', 'stop'])
  // Slack's retry of the same event: no second message, no second reply.
  assert.equal((await post(entry.webhookUrl, messageEvent(ev), { headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' } })).status, 200)
  const payload = { type: 'block_actions', user: { id: 'U1', name: 'ada' }, channel: { id: 'C1' }, message: { ts: reply.params.ts },
    actions: [{ type: 'button', action_id: 'button:0', value: 'again', action_ts: '1700000009.000001' }] }
  const click = await post(entry.webhookUrl, new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), { contentType: 'application/x-www-form-urlencoded' })
  assert.equal(click.status, 200)
  await waitFor('the reply to the click', () => calls.find((c) => c.method === 'chat.postMessage' && c.params.text === 'You said: again'))
  await new Promise((r) => setTimeout(r, 500))
  assert.equal(calls.filter((c) => c.params.text === 'You said: hello').length, 1, 'the retried event was answered once')

  // The conversation and its messages, as the bot sees them.
  const runtime = new Client({ apiUrl, token, botId: bot.id })
  const { conversations } = await runtime.listConversations({ integrationName: 'slack' })
  assert.equal(conversations.length, 1)
  assert.equal(conversations[0].tags['slack:channelId'], 'C1')
  assert.equal(conversations[0].tags['slack:thread'], 'main')
  const { messages } = await runtime.listMessages({ conversationId: conversations[0].id })
  const incoming = messages.filter((m) => m.direction === 'incoming')
  assert.deepEqual(incoming.map((m) => m.payload.text).sort(), ['again', 'hello'])
  const outgoing = messages.filter((m) => m.direction === 'outgoing')
  assert.equal(outgoing.length, 2)
  for (const m of outgoing) assert.match(m.tags['slack:ts'] || '', /^\d+\.000100$/, JSON.stringify(m.tags))
})

slack.close()
finish()
