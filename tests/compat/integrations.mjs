// Integrations end to end with the official clients: an integration written
// with the unchanged @botpress/sdk (sdkintegration/integration.cjs, deployed
// as a bundle) published and managed with @botpress/client's Admin API,
// installed on an SDK bot and on a sandbox JavaScript bot; a webhook POST
// becomes the bot's message, the bot's reply reaches the fake chat service
// this script runs on loopback (standing for the channel's servers), and
// callAction runs the integration's action. Every integration operation of
// the Admin API is asserted, with its error classes.
// Env: API_URL, TOKEN (owner PAT), WORKSPACE_ID, OTHER_WORKSPACE_ID (another
// workspace of the owner), VIEWER_TOKEN (a viewer of WORKSPACE_ID),
// INTEGRATION_BUNDLE, SDKBOT_BUNDLE (paths).
import fs from 'node:fs'
import http from 'node:http'
import * as sdk from '@botpress/sdk'
import { Client, isApiError } from '@botpress/client'
import { scenario, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const admin = new Client({ apiUrl, token: env('TOKEN'), workspaceId: env('WORKSPACE_ID') })
const other = new Client({ apiUrl, token: env('TOKEN'), workspaceId: env('OTHER_WORKSPACE_ID') })
const viewer = new Client({ apiUrl, token: env('VIEWER_TOKEN'), workspaceId: env('WORKSPACE_ID') })
const z = sdk.z

// ---- the fake chat service (the channel's servers)
const calls = []
let nextMessageId = 1000
const fake = http.createServer((req, res) => {
  let body = ''
  req.on('data', (c) => (body += c))
  req.on('end', () => {
    const m = req.url.match(/^\/bot([^/]+)\/(\w+)$/)
    const call = { token: m?.[1], method: m?.[2], body: body ? JSON.parse(body) : {} }
    calls.push(call)
    res.setHeader('content-type', 'application/json')
    if (call.token !== 'secret-token') {
      res.writeHead(401).end('{"ok":false}')
      return
    }
    res.end(JSON.stringify({ ok: true, message_id: ++nextMessageId }))
  })
})
await new Promise((r) => fake.listen(0, '127.0.0.1', r))
const fakeUrl = `http://127.0.0.1:${fake.address().port}`

async function waitFor(what, cond, ms = 30000) {
  const deadline = Date.now() + ms
  for (;;) {
    const v = cond()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; fake chat calls: ${JSON.stringify(calls)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function apiError(promise, code, what) {
  try {
    await promise
  } catch (err) {
    assert.ok(isApiError(err), `${what}: not an API error: ${err}`)
    assert.equal(err.code, code, `${what}: code ${err.code} (${err.type}: ${err.message}), want ${code}`)
    assert.ok(err.id, `${what}: the error has an id`)
    return err
  }
  assert.fail(`${what}: expected ${code}, but the call succeeded`)
}

// ---- the definition, as the Botpress CLI sends it (zui schemas as JSON schemas)
const definition = (name, version) => ({
  name,
  version,
  title: 'Fake chat',
  description: 'A fake chat service on loopback',
  configuration: { schema: z.object({ apiUrl: z.string(), token: z.string().min(1) }).toJSONSchema() },
  channels: {
    chat: {
      messages: {
        text: { schema: sdk.messages.defaults.text.schema.toJSONSchema() },
        choice: { schema: sdk.messages.defaults.choice.schema.toJSONSchema() },
      },
      conversation: { tags: { chatId: { title: 'Chat id' } }, creation: { enabled: true, requiredTags: ['chatId'] } },
      message: { tags: { id: {} } },
    },
  },
  actions: {
    double: {
      input: { schema: z.object({ value: z.number() }).toJSONSchema() },
      output: { schema: z.object({ value: z.number() }).toJSONSchema() },
    },
  },
  events: { reaction: { schema: z.object({ emoji: z.string() }).toJSONSchema() } },
  states: { lastUpdate: { type: 'conversation', schema: z.object({ id: z.number() }).toJSONSchema() } },
  user: { tags: { id: {} }, creation: { enabled: true, requiredTags: ['id'] } },
  secrets: { GREETING: 'hello-secret' },
  code: fs.readFileSync(env('INTEGRATION_BUNDLE'), 'utf8'),
})

let integration
let sdkBot
let webhookUrl

await scenario('createIntegration, its validation, reads and lists', async () => {
  await admin.validateIntegrationCreation(definition('fakechat', '0.1.0'))
  await apiError(admin.validateIntegrationCreation({ ...definition('fakechat', '0.1.0'), version: 'one' }), 400, 'an invalid version')
  await apiError(admin.validateIntegrationCreation({ ...definition('Fake Chat', '0.1.0') }), 400, 'an invalid name')
  await apiError(admin.validateIntegrationCreation({ ...definition('chat', '0.1.0') }), 400, 'a built-in name')
  const bad = definition('fakechat', '0.1.0')
  bad.actions.double.input = {}
  await apiError(admin.validateIntegrationCreation(bad), 400, 'an action without an input schema')
  await apiError(viewer.createIntegration(definition('fakechat', '0.1.0')), 403, 'a viewer creating an integration')

  ;({ integration } = await admin.createIntegration(definition('fakechat', '0.1.0')))
  assert.equal(integration.name, 'fakechat')
  assert.equal(integration.version, '0.1.0')
  assert.ok(integration.signingSecret)
  assert.deepEqual(Object.keys(integration.channels.chat.messages).sort(), ['choice', 'text'])
  assert.equal(integration.actions.double.input.schema.type, 'object')
  assert.equal(integration.configuration.identifier.required, false)
  assert.equal(integration.public, false)
  assert.deepEqual(integration.secrets, ['GREETING'])
  await apiError(admin.createIntegration(definition('fakechat', '0.1.0')), 409, 'the same name and version twice')

  const { integration: got } = await admin.getIntegration({ id: integration.id })
  assert.equal(got.id, integration.id)
  assert.deepEqual(got.user.tags, { id: {} })
  const { integration: byName } = await admin.getIntegrationByName({ name: 'fakechat', version: '0.1.0' })
  assert.equal(byName.id, integration.id)
  const { integration: latest } = await admin.getIntegrationByName({ name: 'fakechat', version: 'latest' })
  assert.equal(latest.id, integration.id)
  const { integrations } = await admin.listIntegrations({})
  assert.ok(integrations.some((i) => i.id === integration.id && i.title === 'Fake chat'))
  const { integrations: named } = await admin.listIntegrations({ name: 'nothing-like-it' })
  assert.equal(named.length, 0)
  // viewers read
  const { integration: seen } = await viewer.getIntegration({ id: integration.id })
  assert.equal(seen.id, integration.id)
  // another workspace and unknown ids do not find it
  await apiError(other.getIntegration({ id: integration.id }), 404, 'an integration of another workspace')
  await apiError(admin.getIntegration({ id: 'no-such-integration' }), 404, 'an unknown id')
  await apiError(admin.getIntegrationByName({ name: 'fakechat', version: '9.9.9' }), 404, 'an unknown version')
})

await scenario('updateIntegration, validateIntegrationUpdate, the hub', async () => {
  await admin.validateIntegrationUpdate({ id: integration.id, title: 'Fake chat!' })
  await apiError(admin.validateIntegrationUpdate({ id: integration.id, url: 'not a url' }), 400, 'an invalid url')
  await apiError(viewer.updateIntegration({ id: integration.id, title: 'no' }), 403, 'a viewer updating')
  await apiError(other.updateIntegration({ id: integration.id, title: 'no' }), 404, 'another workspace updating')
  const { integrations: before } = await admin.listPublicIntegrations({})
  assert.ok(!before.some((i) => i.id === integration.id), 'a private integration is not in the hub')
  await apiError(admin.getPublicIntegrationById({ id: integration.id }), 404, 'a private integration by id in the hub')
  const { integration: up } = await admin.updateIntegration({ id: integration.id, title: 'Fake chat!', public: true,
    actions: { triple: { input: { schema: {} }, output: { schema: {} } } } })
  assert.equal(up.title, 'Fake chat!')
  assert.equal(up.public, true)
  assert.deepEqual(Object.keys(up.actions).sort(), ['double', 'triple'])
  const { integration: down } = await admin.updateIntegration({ id: integration.id, actions: { triple: null } })
  assert.deepEqual(Object.keys(down.actions), ['double'])
  const { integrations: hub } = await admin.listPublicIntegrations({})
  const item = hub.find((i) => i.id === integration.id)
  assert.ok(item, 'a public integration is in the hub')
  assert.equal(item.ownerWorkspace.id, env('WORKSPACE_ID'))
  const { integration: pub } = await other.getPublicIntegration({ name: 'fakechat', version: '0.1.0' })
  assert.equal(pub.id, integration.id)
  assert.equal(pub.signingSecret, undefined, 'the hub shows no signing secret')
  const { integration: pubById } = await other.getPublicIntegrationById({ id: integration.id })
  assert.equal(pubById.name, 'fakechat')
})

await scenario('integration API keys and signing secrets', async () => {
  const created = await admin.createIntegrationApiKey({ integrationId: integration.id, note: 'dev' })
  assert.ok(created.value.startsWith('bp_iak_'))
  assert.equal(created.note, 'dev')
  const { iaks } = await admin.listIntegrationApiKeys({ integrationId: integration.id })
  assert.deepEqual(iaks.map((k) => k.id), [created.id])
  assert.equal(iaks[0].value, undefined)
  await apiError(viewer.createIntegrationApiKey({ integrationId: integration.id }), 403, 'a viewer creating a key')
  await apiError(other.listIntegrationApiKeys({ integrationId: integration.id }), 404, 'keys of another workspace')
  await apiError(other.deleteIntegrationApiKey({ id: created.id }), 404, 'deleting a key from another workspace')
  await admin.deleteIntegrationApiKey({ id: created.id })
  assert.equal((await admin.listIntegrationApiKeys({ integrationId: integration.id })).iaks.length, 0)
  await apiError(admin.deleteIntegrationApiKey({ id: created.id }), 404, 'a deleted key')

  const { newSigningSecret } = await admin.rotateIntegrationSigningSecrets({ id: integration.id })
  assert.ok(newSigningSecret && newSigningSecret !== integration.signingSecret)
  const { integration: got } = await admin.getIntegration({ id: integration.id })
  assert.equal(got.signingSecret, newSigningSecret)
  await apiError(viewer.rotateIntegrationSigningSecrets({ id: integration.id }), 403, 'a viewer rotating')
})

await scenario('installing on an SDK bot: configuration checked, register called, real status', async () => {
  ;({ bot: sdkBot } = await admin.createBot({ name: 'sdk-with-fakechat', code: fs.readFileSync(env('SDKBOT_BUNDLE'), 'utf8') }))
  const err = await apiError(admin.updateBot({ id: sdkBot.id, integrations: { fakechat: { enabled: true, integrationId: integration.id,
    configuration: { apiUrl: fakeUrl } } } }), 400, 'a configuration without its required token')
  assert.match(err.message, /integrations\.fakechat\.configuration.*token/)
  await apiError(admin.updateBot({ id: sdkBot.id, integrations: { fakechat: { enabled: true, integrationId: integration.id,
    configuration: { apiUrl: fakeUrl, token: 7 } } } }), 400, 'a token of the wrong type')
  await apiError(admin.updateBot({ id: sdkBot.id, integrations: { fakechat: { enabled: true, integrationId: 'no-such-integration',
    configuration: {} } } }), 404, 'an unknown integration id')
  const { bot } = await admin.updateBot({ id: sdkBot.id, integrations: { fakechat: { enabled: true, integrationId: integration.id,
    configuration: { apiUrl: fakeUrl, token: 'secret-token' } } } })
  const entry = bot.integrations.fakechat
  assert.equal(entry.id, integration.id)
  assert.equal(entry.name, 'fakechat')
  assert.equal(entry.status, 'registered', `status ${entry.status}: ${entry.statusReason}`)
  webhookUrl = entry.webhookUrl
  assert.equal(webhookUrl, `${apiUrl}/${entry.webhookId}`)
  const reg = calls.find((c) => c.method === 'setWebhook' && c.body.botId === sdkBot.id)
  assert.ok(reg, 'register set the webhook')
  assert.equal(reg.body.url, webhookUrl)
  // A later change of the entry, without integrationId, is checked too.
  await apiError(admin.updateBot({ id: sdkBot.id, integrations: { fakechat: { configuration: { token: null } } } }), 400,
    'removing the required token from the installed entry')
  const { integrations: installed } = await admin.listIntegrations({ installedByBotId: sdkBot.id })
  assert.deepEqual(installed.map((i) => i.id), [integration.id])
  await apiError(admin.deleteIntegration({ id: integration.id }), 400, 'deleting an installed integration')
})

const sendUpdate = async (url, update) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(update) })
  const text = await res.text()
  assert.equal(res.status, 200, `webhook answered ${res.status}: ${text}`)
  return JSON.parse(text)
}

await scenario('webhook → SDK bot → reply through the channel handler; callAction; ack', async () => {
  const out = await sendUpdate(webhookUrl, { update_id: 1, from: 7, chat: 42, text: 'hello' })
  assert.deepEqual(out, { ok: true })
  const sent = await waitFor('the reply', () => calls.find((c) => c.method === 'sendMessage' && c.body.chat_id === '42'))
  assert.equal(sent.body.text, 'sdk[fakechat/42]: hello (10)')
  await sendUpdate(webhookUrl, { update_id: 2, from: 7, chat: 42, text: 'menu' })
  const choice = await waitFor('the choice', () => calls.find((c) => c.method === 'sendMessage' && c.body.buttons))
  assert.deepEqual(choice.body.buttons, ['red', 'blue'])
  // The bot's view: one conversation of the integration, tags prefixed, the reply acked.
  const rt = new Client({ apiUrl, token: env('TOKEN'), botId: sdkBot.id })
  const { conversations } = await rt.listConversations({ integrationName: 'fakechat' })
  assert.equal(conversations.length, 1)
  assert.equal(conversations[0].channel, 'chat')
  assert.deepEqual(conversations[0].tags, { 'fakechat:chatId': '42' })
  const { messages } = await rt.listMessages({ conversationId: conversations[0].id })
  const replies = messages.filter((m) => m.direction === 'outgoing')
  assert.equal(replies.length, 2)
  let later = []
  const acked = async () => {
    ;({ messages: later } = await rt.listMessages({ conversationId: conversations[0].id }))
    return later.filter((m) => m.direction === 'outgoing' && /^\d+$/.test(m.tags['fakechat:id'] ?? '')).length === 2
  }
  const deadline = Date.now() + 10000
  while (!(await acked())) {
    if (Date.now() > deadline) assert.fail(`the replies were not acked with the channel's ids: ${JSON.stringify(later)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  const incoming = later.filter((m) => m.direction === 'incoming')
  assert.deepEqual(incoming.map((m) => m.tags['fakechat:id']).sort(), ['1', '2'])
  const { users } = await rt.listUsers({ tags: { 'fakechat:id': '7' } })
  assert.equal(users.length, 1)
  const { state } = await rt.getState({ type: 'conversation', id: conversations[0].id, name: 'lastUpdate' })
  assert.equal(state.payload.id, 2)
  const { output } = await rt.callAction({ type: 'fakechat:double', input: { value: 21 } })
  assert.deepEqual(output, { value: 42 })
  await apiError(rt.callAction({ type: 'fakechat:double', input: { value: 'x' } }), 400, 'an action input against its schema')
  await apiError(rt.callAction({ type: 'fakechat:nothing', input: {} }), 404, 'an unknown action of the integration')
})

await scenario('the bot starts a chat: create_user and create_conversation, then a proactive message', async () => {
  const rt = new Client({ apiUrl, token: env('TOKEN'), botId: sdkBot.id })
  const { user } = await rt.createUser({ integrationName: 'fakechat', tags: { 'fakechat:id': '555' } })
  assert.deepEqual(user.tags, { 'fakechat:id': '555' })
  const { user: same } = await rt.createUser({ integrationName: 'fakechat', tags: { 'fakechat:id': '555' } })
  assert.equal(same.id, user.id, 'the integration found its user again')
  const { conversation } = await rt.createConversation({ integrationName: 'fakechat', channel: 'chat', tags: { 'fakechat:chatId': '555' } })
  assert.equal(conversation.integration, 'fakechat')
  assert.deepEqual(conversation.tags, { 'fakechat:chatId': '555' })
  await apiError(rt.createConversation({ integrationName: 'fakechat', channel: 'chat', tags: {} }), 400, 'a conversation without its required tag')
  await rt.createMessage({ conversationId: conversation.id, userId: sdkBot.id, type: 'text', payload: { text: 'news' }, tags: {} })
  const sent = await waitFor('the proactive message', () => calls.find((c) => c.method === 'sendMessage' && c.body.chat_id === '555'))
  assert.equal(sent.body.text, 'news')
})

await scenario('the Webhook interface: any method and sub-path, the response comes back; 404 and 413', async () => {
  const res = await fetch(`${webhookUrl}/echo?x=1&y=2`, { method: 'PUT', body: 'abc' })
  assert.equal(res.status, 202)
  assert.equal(res.headers.get('x-fakechat'), 'echo')
  const echo = await res.json()
  assert.ok(echo.pid > 0)
  delete echo.pid
  assert.deepEqual(echo, { method: 'PUT', query: 'x=1&y=2', size: 3, secret: 'hello-secret' })
  const unknown = await fetch(`${apiUrl}/00000000-0000-4000-8000-000000000000`, { method: 'POST', body: '{}' })
  assert.equal(unknown.status, 404)
  const body = await unknown.json()
  assert.equal(body.type, 'ResourceNotFound')
  assert.equal(body.code, 404)
  assert.ok(body.id && body.message)
})

await scenario('the integration acts with its own credential: tags its own, configureIntegration', async () => {
  const key = await admin.createIntegrationApiKey({ integrationId: integration.id, note: 'acting' })
  const as = new Client({ apiUrl, token: key.value, botId: sdkBot.id, integrationId: integration.id })
  const { user } = await as.getOrCreateUser({ tags: { id: 'x1' }, discriminateByTags: ['id'] })
  assert.deepEqual(user.tags, { id: 'x1' })
  const { user: again } = await as.getOrCreateUser({ tags: { id: 'x1' }, discriminateByTags: ['id'] })
  assert.equal(again.id, user.id)
  const rt = new Client({ apiUrl, token: env('TOKEN'), botId: sdkBot.id })
  const { user: asBot } = await rt.getUser({ id: user.id })
  assert.deepEqual(asBot.tags, { 'fakechat:id': 'x1' })
  // Files: upsertFile, the upload, getFile, with the integration's credential.
  const { file } = await as.upsertFile({ key: 'fakechat/photo.txt', size: 5 })
  const up = await fetch(file.uploadUrl, { method: 'PUT', body: 'photo' })
  assert.ok(up.ok, `upload: ${up.status}`)
  const { file: got } = await as.getFile({ id: file.id })
  assert.equal(got.key, 'fakechat/photo.txt')
  assert.equal(got.status, 'upload_completed')
  await as.configureIntegration({ identifier: 'account-9' })
  const { bot } = await admin.getBot({ id: sdkBot.id })
  assert.equal(bot.integrations.fakechat.identifier, 'account-9')
  await apiError(rt.configureIntegration({ identifier: 'x' }), 403, 'configureIntegration by the bot itself')
  const wrong = new Client({ apiUrl, token: key.value, botId: sdkBot.id, integrationId: 'another-integration' })
  await apiError(wrong.getUser({ id: user.id }), 403, 'a key of another integration')
  const bogus = new Client({ apiUrl, token: 'bp_iak_nothing', botId: sdkBot.id, integrationId: integration.id })
  await apiError(bogus.getUser({ id: user.id }), 401, 'an unknown integration key')
  await admin.deleteIntegrationApiKey({ id: key.id })
})

await scenario('a sandbox JavaScript bot with the integration', async () => {
  const code = `bot.on.message('*', async ({ message, client, event }) => {
    const r = await client.callAction({ type: 'fakechat:double', input: { value: message.payload.text.length } })
    await client.createMessage({ conversationId: message.conversationId,
      payload: { type: 'text', text: 'js[' + event.integration + ']: ' + message.payload.text + ' (' + r.output.value + ')' } })
  })
  bot.on.event('fakechat:reaction', async ({ event, client }) => {
    await client.createMessage({ conversationId: event.conversationId,
      payload: { type: 'text', text: 'reaction ' + event.payload.emoji + ' on ' + event.integration } })
  })`
  const { bot: created } = await admin.createBot({ name: 'js-with-fakechat', code })
  const { bot } = await admin.updateBot({ id: created.id, integrations: { fakechat: { enabled: true,
    integrationId: integration.id, configuration: { apiUrl: fakeUrl, token: 'secret-token' } } } })
  const entry = bot.integrations.fakechat
  assert.equal(entry.status, 'registered', `status ${entry.status}: ${entry.statusReason}`)
  assert.ok(calls.find((c) => c.method === 'setWebhook' && c.body.botId === bot.id), 'register set the webhook')
  await sendUpdate(entry.webhookUrl, { update_id: 10, from: 8, chat: 77, text: 'hi' })
  const sent = await waitFor('the reply', () => calls.find((c) => c.method === 'sendMessage' && c.body.chat_id === '77'))
  assert.equal(sent.body.text, 'js[fakechat]: hi (4)')
  // The integration's event, named after it, is the bot's turn too.
  await sendUpdate(entry.webhookUrl, { update_id: 11, chat: 77, event: 'thumbs-up' })
  const reaction = await waitFor('the reaction', () => calls.find((c) => c.method === 'sendMessage' && c.body.chat_id === '77' &&
    c.body.text.startsWith('reaction')))
  assert.equal(reaction.body.text, 'reaction thumbs-up on fakechat')
  // disabling unregisters it, enabling registers it again
  const { bot: off } = await admin.updateBot({ id: bot.id, integrations: { fakechat: { enabled: false } } })
  assert.equal(off.integrations.fakechat.status, 'unregistered')
  assert.equal(calls.filter((c) => c.method === 'deleteWebhook' && c.body.url === entry.webhookUrl).length, 1)
  assert.equal((await fetch(entry.webhookUrl, { method: 'POST', body: '{}' })).status, 404, 'a disabled entry\'s webhook')
  const { bot: on } = await admin.updateBot({ id: bot.id, integrations: { fakechat: { enabled: true } } })
  assert.equal(on.integrations.fakechat.status, 'registered')
  assert.equal(calls.filter((c) => c.method === 'setWebhook' && c.body.botId === bot.id).length, 2)
  // removing the integration unregisters it
  await admin.updateBot({ id: bot.id, integrations: { fakechat: null } })
  assert.equal(calls.filter((c) => c.method === 'deleteWebhook' && c.body.url === entry.webhookUrl).length, 2, 'unregister was called')
  const gone = await fetch(entry.webhookUrl, { method: 'POST', body: '{}' })
  assert.equal(gone.status, 404)
  await admin.deleteBot({ id: bot.id })
})

await scenario('failures are in the integration logs and the bot issues; registration_failed', async () => {
  const { bot: created } = await admin.createBot({ name: 'bad-token' })
  const { bot } = await admin.updateBot({ id: created.id, integrations: { fakechat: { enabled: true,
    integrationId: integration.id, configuration: { apiUrl: fakeUrl, token: 'wrong-token' } } } })
  const entry = bot.integrations.fakechat
  assert.equal(entry.status, 'registration_failed')
  assert.match(entry.statusReason, /fakechat setWebhook: 401/)
  await apiError(admin.getIntegrationLogs({ id: integration.id }), 400, 'logs without timeStart')
  const { logs } = await admin.getIntegrationLogs({ id: integration.id, timeStart: new Date(Date.now() - 3600e3).toISOString() })
  assert.ok(logs.some((l) => l.level === 'error' && /register failed/.test(l.message)), JSON.stringify(logs))
  assert.ok(logs.some((l) => l.level === 'info' && l.message === 'update 1 received'), 'the integration logger\'s lines: ' + JSON.stringify(logs))
  const { logs: found } = await admin.getIntegrationLogs({ id: integration.id, timeStart: new Date(Date.now() - 3600e3).toISOString(),
    messageContains: 'UPDATE 2 RECEIVED' })
  assert.deepEqual(found.map((l) => l.message), ['update 2 received'])
  await apiError(other.getIntegrationLogs({ id: integration.id, timeStart: new Date().toISOString() }), 404, 'logs of another workspace')
  const { issues } = await admin.listBotIssues({ id: bot.id })
  assert.ok(issues.some((i) => i.code === 'integration_register_failed'), JSON.stringify(issues))
  await admin.deleteBot({ id: bot.id })
})

await scenario('deleteIntegration, and the operations Parley does not serve', async () => {
  const { integration: tmp } = await admin.createIntegration({ ...definition('fakechat', '0.2.0'), code: undefined, url: 'http://127.0.0.1:9/' })
  await apiError(viewer.deleteIntegration({ id: tmp.id }), 403, 'a viewer deleting')
  await apiError(other.deleteIntegration({ id: tmp.id }), 404, 'another workspace deleting')
  await admin.deleteIntegration({ id: tmp.id })
  await apiError(admin.getIntegration({ id: tmp.id }), 404, 'a deleted integration')
  await apiError(admin.deleteIntegration({ id: tmp.id }), 404, 'deleting twice')
  for (const [what, call] of [
    ['requestIntegrationVerification', () => admin.requestIntegrationVerification({ integrationId: integration.id })],
    ['createIntegrationShareableId', () => admin.createIntegrationShareableId({ botId: sdkBot.id, integrationId: integration.id })],
    ['getIntegrationShareableId', () => admin.getIntegrationShareableId({ botId: sdkBot.id, integrationId: integration.id })],
    ['deleteIntegrationShareableId', () => admin.deleteIntegrationShareableId({ botId: sdkBot.id, integrationId: integration.id })],
    ['listPublicInterfaces', () => admin.listPublicInterfaces({})],
    ['createInterface', () => admin.createInterface({ name: 'x', version: '0.1.0', entities: {}, events: {}, actions: {}, channels: {} })],
    ['listPublicPlugins', () => admin.listPublicPlugins({})],
  ]) {
    const err = await apiError(call(), 405, what)
    assert.equal(err.type, 'MethodNotFound', what)
  }
})

await scenario('the integration process killed (SIGKILL) while updates arrive: every update answered, in order per chat', async () => {
  const pidOf = async () => (await (await fetch(`${webhookUrl}/echo`)).json()).pid
  const pid = await pidOf()
  const chats = [901, 902, 903]
  const perChat = 8
  let sent = 0
  let retried = 0
  // The channel's servers retry an update until the webhook answers 200.
  const post = async (update) => {
    for (let i = 0; ; i++) {
      try {
        const res = await fetch(webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(update) })
        await res.text()
        if (res.status === 200) return
      } catch {}
      retried++
      if (i > 100) throw new Error(`update ${update.update_id} never accepted`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  await Promise.all(chats.map(async (chat, ci) => {
    for (let k = 0; k < perChat; k++) {
      await post({ update_id: 5000 + ci * 100 + k, from: 500 + ci, chat, text: `load ${chat} ${k}` })
      if (++sent === 10) process.kill(pid, 'SIGKILL')
    }
  }))
  const texts = (chat) => calls.filter((c) => c.method === 'sendMessage' && c.body.chat_id === String(chat)).map((c) => c.body.text)
  const want = (chat) => Array.from({ length: perChat }, (_, k) => `load ${chat} ${k}`).map((t) => `sdk[fakechat/${chat}]: ${t} (${2 * t.length})`)
  await waitFor('every reply', () => chats.every((chat) => new Set(texts(chat)).size >= perChat), 60000)
  let duplicates = 0
  for (const chat of chats) {
    const got = texts(chat)
    const firsts = got.filter((t, i) => got.indexOf(t) === i)
    assert.deepEqual(firsts, want(chat), `chat ${chat}: every update answered, in order`)
    duplicates += got.length - firsts.length
  }
  const now = await pidOf()
  assert.ok(now !== pid, 'the integration process was replaced')
  console.error(`kill test: ${sent} updates, ${retried} webhook retries by the sender, ${duplicates} duplicate sends`)
  // Delivery is at least once: a message whose sendMessage went out just
  // before the kill, and not its ack, is sent again (one per chat at most).
  assert.ok(duplicates <= chats.length, `${duplicates} replies sent twice`)
})

fake.close()
finish()
