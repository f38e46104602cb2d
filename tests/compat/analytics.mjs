// getBotAnalytics through @botpress/client 1.45.0, and Parley's hourly
// series, checked against the traffic the Go test sent
// (internal/app/support_test.go, TestGetBotAnalyticsWithClient): EXPECT
// holds its figures. Records are summed over the range, so traffic that
// straddles midnight (UTC) still adds up.
import { Client, InvalidQueryError, ResourceNotFoundError } from '@botpress/client'
import { scenario, rejects, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')
const botId = env('BOT_ID')
const workspaceId = env('WORKSPACE_ID')
const expect = JSON.parse(env('EXPECT'))
const now = new Date(Number(env('NOW')))
const client = new Client({ apiUrl, token: env('TOKEN'), workspaceId })
const viewer = new Client({ apiUrl, token: env('VIEWER_TOKEN'), workspaceId })

const day = 24 * 3600 * 1000
const startDate = new Date(now.getTime() - day).toISOString()
const endDate = new Date(now.getTime() + 60000).toISOString()
const sum = (records, key) => records.reduce((n, r) => n + r[key], 0)

await scenario('getBotAnalytics: one record per UTC day, figures of the traffic', async () => {
  const { records } = await client.getBotAnalytics({ id: botId, startDate, endDate })
  const days = new Set([startDate.slice(0, 10), endDate.slice(0, 10)])
  assert.equal(records.length, days.size, JSON.stringify(records))
  for (const r of records) {
    assert.match(r.startDateTimeUtc, /T00:00:00\.000Z$/)
    assert.match(r.endDateTimeUtc, /T23:59:59\.999Z$/)
    assert.equal(typeof r.llm.latency.mean, 'number')
    assert.deepEqual(r.eventTypes, {})
  }
  assert.equal(sum(records, 'userMessages'), expect.userMessages, 'userMessages')
  assert.equal(sum(records, 'messages'), expect.userMessages, 'messages (deprecated alias)')
  assert.equal(sum(records, 'botMessages'), expect.botMessages, 'botMessages')
  assert.equal(sum(records, 'newUsers'), expect.newUsers, 'newUsers')
  assert.equal(sum(records, 'returningUsers'), expect.returningUsers, 'returningUsers')
  assert.equal(sum(records, 'sessions'), expect.sessions, 'sessions')
  const echoed = records.reduce((n, r) => n + (r.customEvents.echoed || 0), 0)
  assert.equal(echoed, expect.customEvents.echoed, 'customEvents.echoed (trackAnalytics)')
  assert.equal(sum(records, 'events'), expect.customEvents.echoed, 'events')
})

await scenario('getBotAnalytics: a viewer may read', async () => {
  const { records } = await viewer.getBotAnalytics({ id: botId, startDate, endDate })
  assert.equal(sum(records, 'userMessages'), expect.userMessages)
})

await scenario('getBotAnalytics: bad ranges and unknown bots are refused', async () => {
  await rejects(client.getBotAnalytics({ id: botId, startDate: endDate, endDate: startDate }), InvalidQueryError, 'end before start')
  await rejects(client.getBotAnalytics({ id: botId, startDate: 'yesterday', endDate }), InvalidQueryError, 'not a date')
  await rejects(client.getBotAnalytics({ id: botId, startDate: '2020-01-01T00:00:00Z', endDate }), InvalidQueryError, 'too long')
  await rejects(client.getBotAnalytics({ id: 'nope', startDate, endDate }), ResourceNotFoundError, 'unknown bot')
})

await scenario("Parley's hourly series: messages, users, turns, failures, p50/p95", async () => {
  const q = new URLSearchParams({ startDate: new Date(now.getTime() - 3 * 3600 * 1000).toISOString(), endDate, interval: 'hour' })
  const res = await fetch(`${apiUrl}/v1/admin/bots/${botId}/analytics/series?${q}`, {
    headers: { authorization: `Bearer ${env('TOKEN')}`, 'x-workspace-id': workspaceId },
  })
  assert.equal(res.status, 200)
  const { interval, records } = await res.json()
  assert.equal(interval, 'hour')
  assert.ok(records.length >= 4 && records.length <= 5, `${records.length} hourly records`)
  for (let i = 1; i < records.length; i++) {
    assert.equal(Date.parse(records[i].startDateTimeUtc) - Date.parse(records[i - 1].startDateTimeUtc), 3600 * 1000)
  }
  assert.equal(sum(records, 'messagesIn'), expect.userMessages)
  assert.equal(sum(records, 'messagesOut'), expect.botMessages)
  assert.equal(sum(records, 'turns'), expect.turns)
  assert.equal(sum(records, 'turnFailures'), expect.turnFailures)
  assert.equal(sum(records, 'newConversations'), expect.sessions)
  const busy = records.filter((r) => r.turns > 0)
  assert.ok(busy.length >= 1)
  for (const r of busy) {
    assert.ok(r.turnTimeP50Ms >= 0 && r.turnTimeP95Ms >= r.turnTimeP50Ms, JSON.stringify(r))
    assert.ok(r.users >= 1 && r.users <= expect.users)
  }
  const idle = records.filter((r) => r.turns === 0)
  for (const r of idle) assert.equal(r.turnTimeP95Ms, 0)
})

finish()
