// Drives Parley's Admin API with the official @botpress/client 1.45.0.
// Env: API_URL, TOKEN (owner), WORKSPACE_ID, VIEWER_TOKEN, VIEWER_EMAIL.
import { Client, UnauthorizedError, ForbiddenError, ResourceNotFoundError, PayloadTooLargeError, InvalidPayloadError } from '@botpress/client'
import { scenario, rejects, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const token = env('TOKEN')
const workspaceId = env('WORKSPACE_ID')
const viewerToken = env('VIEWER_TOKEN')
const viewerEmail = env('VIEWER_EMAIL')
const owner = new Client({ apiUrl, token, workspaceId })

const BOT_REQUIRED = ['id', 'createdAt', 'updatedAt', 'signingSecret', 'integrations', 'plugins', 'user', 'conversation',
  'message', 'states', 'configuration', 'events', 'recurringEvents', 'subscriptions', 'actions', 'tags', 'name', 'dev',
  'secrets', 'alwaysAlive', 'status', 'medias', 'type']
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

await scenario('account: get and update', async () => {
  const { account } = await owner.getAccount({})
  assert.match(account.email, /@/)
  assert.equal(typeof account.emailVerified, 'boolean')
  assert.match(account.createdAt, ISO)
  const { account: updated } = await owner.updateAccount({ displayName: 'Ada Admin' })
  assert.equal(updated.displayName, 'Ada Admin')
  assert.equal((await owner.getAccount({})).account.displayName, 'Ada Admin')
})

await scenario('personal access tokens: create, use, list without secrets, delete', async () => {
  const { pat } = await owner.createPersonalAccessToken({ note: 'ci token' })
  assert.ok(pat.value && pat.id && pat.note === 'ci token')
  const other = new Client({ apiUrl, token: pat.value, workspaceId })
  assert.equal((await other.getAccount({})).account.id, (await owner.getAccount({})).account.id)
  const { pats } = await owner.listPersonalAccessTokens({})
  const listed = pats.find((p) => p.id === pat.id)
  assert.ok(listed, 'new token listed')
  assert.equal(listed.value, undefined, 'secret never listed')
  assert.deepEqual(await owner.deletePersonalAccessToken({ id: pat.id }), {})
  await rejects(other.getAccount({}), UnauthorizedError, 'deleted token')
})

await scenario('workspaces: list, create, get, update, audit, delete', async () => {
  const { workspaces } = await owner.listWorkspaces({})
  assert.ok(workspaces.some((w) => w.id === workspaceId))
  const created = await owner.createWorkspace({ name: 'Second workspace' })
  for (const k of ['id', 'name', 'ownerId', 'createdAt', 'updatedAt', 'botCount', 'billingVersion', 'plan', 'blocked', 'spendingLimit']) {
    assert.ok(k in created, `workspace.${k}`)
  }
  assert.equal(created.botCount, 0)
  assert.equal(created.activeTrialId, null)
  assert.equal((await owner.getWorkspace({ id: created.id })).name, 'Second workspace')
  const updated = await owner.updateWorkspace({ id: created.id, name: 'Renamed', handle: 'renamed-ws' })
  assert.equal(updated.name, 'Renamed')
  assert.equal(updated.handle, 'renamed-ws')
  const all = await owner.list.workspaces({}).collect()
  assert.ok(all.some((w) => w.id === created.id))
  const { records } = await owner.getAuditRecords({ id: created.id })
  assert.deepEqual(records.map((r) => r.action).slice(0, 2), ['UPDATE_WORKSPACE', 'CREATE_WORKSPACE'])
  assert.deepEqual(await owner.deleteWorkspace({ id: created.id }), {})
  await rejects(owner.getWorkspace({ id: created.id }), ResourceNotFoundError, 'deleted workspace')
})

let viewerMemberId
await scenario('members: add a viewer, read me, change role, list', async () => {
  const me = await owner.getWorkspaceMember({})
  assert.equal(me.role, 'owner')
  const member = await owner.createWorkspaceMember({ email: viewerEmail, role: 'developer' })
  assert.equal(member.email, viewerEmail)
  assert.equal(member.role, 'developer')
  viewerMemberId = member.id
  const changed = await owner.updateWorkspaceMember({ id: member.id, role: 'viewer' })
  assert.equal(changed.role, 'viewer')
  const viewer = new Client({ apiUrl, token: viewerToken, workspaceId })
  assert.equal((await viewer.getWorkspaceMember({})).role, 'viewer')
  const { members } = await owner.listWorkspaceMembers({})
  assert.deepEqual(members.map((m) => m.role).sort(), ['owner', 'viewer'])
  await rejects(viewer.createWorkspaceMember({ email: 'x@example.com', role: 'viewer' }), ForbiddenError, 'viewer adding a member')
})

await scenario('bots: create many, list across pages newest first, tag filter', async () => {
  const ids = []
  for (let i = 0; i < 23; i++) {
    const { bot } = await owner.createBot({ name: `bot-${i}`, tags: { env: i % 2 ? 'prod' : 'dev', n: String(i) } })
    ids.push(bot.id)
  }
  const first = await owner.listBots({ pageSize: 10 })
  assert.equal(first.bots.length, 10)
  assert.ok(first.meta.nextToken, 'first page has a next token')
  assert.equal(first.bots[0].id, ids[22], 'newest first')
  // A bot created between pages must not shift or duplicate later pages.
  const { bot: late } = await owner.createBot({ name: 'late' })
  const second = await owner.listBots({ pageSize: 10, nextToken: first.meta.nextToken })
  assert.equal(second.bots[0].id, ids[12])
  const all = await owner.list.bots({}).collect()
  const seen = new Set(all.map((b) => b.id))
  assert.equal(seen.size, all.length, 'no duplicates')
  for (const id of [...ids, late.id]) assert.ok(seen.has(id), 'every bot listed')
  for (const b of all) for (const k of ['id', 'createdAt', 'updatedAt', 'name', 'tags', 'type']) assert.ok(k in b, `summary.${k}`)
  const prod = await owner.list.bots({ tags: { env: 'prod' } }).collect()
  assert.equal(prod.length, 11)
  assert.ok(prod.every((b) => b.tags.env === 'prod'))
  const one = await owner.listBots({ tags: { env: 'prod', n: '7' } })
  assert.deepEqual(one.bots.map((b) => b.name), ['bot-7'])
})

let botId
await scenario('bots: full object, get, merge update, delete', async () => {
  // The client's createBot input has no integrations; updateBot carries them.
  const { bot: created } = await owner.createBot({ name: 'Support', tags: { team: 'a', keep: 'yes' }, code: 'bot.on.message("*", async () => {})' })
  assert.ok(created.signingSecret.length > 0, 'signing secret shown on create')
  const generatedKey = created.integrations.chat.configuration.encryptionKey
  assert.ok(generatedKey, 'an encryption key is generated when absent')
  const { bot } = await owner.updateBot({ id: created.id, integrations: { chat: { enabled: true, configuration: { encryptionKey: 'my-encryption-key-1' } } } })
  botId = bot.id
  for (const k of BOT_REQUIRED) assert.ok(k in bot, `bot.${k}`)
  assert.ok(bot.id.length >= 28 && bot.id.length <= 36)
  assert.deepEqual(bot.configuration, { data: {}, schema: {} })
  assert.deepEqual(bot.subscriptions, { events: null })
  assert.equal(bot.status, 'active')
  assert.match(bot.deployedAt, ISO)
  const chat = bot.integrations.chat
  assert.equal(chat.enabled, true)
  assert.equal(chat.configuration.encryptionKey, 'my-encryption-key-1')
  assert.equal(chat.webhookUrl, `${apiUrl}/chat/${chat.webhookId}`)
  const got = (await owner.getBot({ id: bot.id })).bot
  assert.equal(got.signingSecret, '', 'signing secret hidden after create')
  assert.equal(got.integrations.chat.webhookId, chat.webhookId, 'webhook id stable')
  const { bot: upd } = await owner.updateBot({ id: bot.id, name: 'Support 2', tags: { team: null, added: 'x' },
    states: { profile: { type: 'user', schema: { type: 'object' } } }, description: 'helps' })
  assert.equal(upd.name, 'Support 2')
  assert.deepEqual(upd.tags, { keep: 'yes', added: 'x' })
  assert.equal(upd.states.profile.type, 'user')
  assert.equal(upd.description, 'helps')
  assert.equal(upd.integrations.chat.configuration.encryptionKey, 'my-encryption-key-1', 'untouched integration kept')
  const { bot: upd2 } = await owner.updateBot({ id: bot.id, states: { profile: null } })
  assert.deepEqual(upd2.states, {})
  assert.deepEqual(upd2.tags, { keep: 'yes', added: 'x' })
})

await scenario('bot api keys, versions, logs', async () => {
  const key = await owner.createBotApiKey({ botId, note: 'deploy' })
  assert.ok(key.value && key.id)
  const { baks } = await owner.listBotApiKeys({ botId })
  assert.deepEqual(baks.map((k) => k.id), [key.id])
  assert.equal(baks[0].value, undefined)
  assert.deepEqual(await owner.deleteBotApiKey({ id: key.id }), {})
  assert.deepEqual((await owner.listBotApiKeys({ botId })).baks, [])
  const { versions } = await owner.listBotVersions({ id: botId })
  assert.equal(versions.length, 1)
  const logs = await owner.getBotLogs({ id: botId, timeStart: new Date(Date.now() - 3600e3).toISOString() })
  assert.deepEqual(logs.logs, [])
})

await scenario('errors: unauthorized, forbidden, not found, too large, invalid', async () => {
  await rejects(new Client({ apiUrl, workspaceId }).listBots({}), UnauthorizedError, 'missing token')
  await rejects(new Client({ apiUrl, token: 'bp_pat_wrong', workspaceId }).listBots({}), UnauthorizedError, 'wrong token')
  await rejects(new Client({ apiUrl, token }).listBots({}), UnauthorizedError, 'missing workspace header')
  const viewer = new Client({ apiUrl, token: viewerToken, workspaceId })
  const foreign = await new Client({ apiUrl, token: viewerToken }).createWorkspace({ name: 'Viewer own' })
  await rejects(new Client({ apiUrl, token, workspaceId: foreign.id }).listBots({}), UnauthorizedError, "another workspace's id")
  await rejects(new Client({ apiUrl, token, workspaceId: 'no-such-workspace' }).listBots({}), UnauthorizedError, 'unknown workspace id')
  await rejects(viewer.createBot({ name: 'nope' }), ForbiddenError, 'viewer creating a bot')
  assert.ok((await viewer.listBots({})).bots.length > 0, 'viewer can read')
  await rejects(viewer.deleteBot({ id: botId }), ForbiddenError, 'viewer deleting a bot')
  await rejects(owner.getBot({ id: '00000000-0000-7000-8000-000000000000' }), ResourceNotFoundError, 'unknown bot')
  await rejects(owner.createBot({ name: 'big', code: 'x'.repeat(51 * 1024 * 1024) }), PayloadTooLargeError, 'body above 50 MB')
  const err = await rejects(owner.createBot({ name: 123 }), InvalidPayloadError, 'wrong type')
  assert.match(err.message, /name/)
  // (Unknown properties never reach the server through this client: its
  // request builders copy known fields only. The Go HTTP tests cover them.)
  const before = (await owner.list.bots({}).collect()).length
  await rejects(owner.createBot({ name: 'x', states: { s: { type: 'nope', schema: {} } } }), InvalidPayloadError, 'bad enum')
  assert.equal((await owner.list.bots({}).collect()).length, before, 'nothing stored on error')
})

await scenario('workspace with bots is not deleted by accident; audit trail', async () => {
  const ws = await owner.createWorkspace({ name: 'With bots' })
  const c = new Client({ apiUrl, token, workspaceId: ws.id })
  const { bot } = await c.createBot({ name: 'inside' })
  const err = await owner.deleteWorkspace({ id: ws.id }).catch((e) => e)
  assert.equal(err.type, 'RelationConflict')
  await c.deleteBot({ id: bot.id })
  await rejects(c.getBot({ id: bot.id }), ResourceNotFoundError, 'deleted bot')
  const { records } = await owner.getAuditRecords({ id: ws.id })
  assert.deepEqual(records.map((r) => r.action), ['DELETE_BOT', 'CREATE_BOT', 'CREATE_WORKSPACE'])
  assert.equal(records[0].resourceId, bot.id)
  assert.deepEqual(await owner.deleteWorkspace({ id: ws.id }), {})
})

await scenario('members: remove', async () => {
  assert.deepEqual(await owner.deleteWorkspaceMember({ id: viewerMemberId }), {})
  await rejects(new Client({ apiUrl, token: viewerToken, workspaceId }).listBots({}), UnauthorizedError, 'removed member')
})

finish()
