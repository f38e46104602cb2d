// The database unavailable for a while, as the official @botpress/client
// sees it (internal/app/unavailable_test.go cuts PostgreSQL's connections
// before this runs, and mends them once this script says so):
//
// 1. Without retries, listBots rejects with the client's UnknownError naming
//    the type ServiceUnavailable and the code 503 (the client knows no class
//    for it), which a caller can tell from a bug (500, InternalError).
// 2. With the client's own retry option (axios-retry, whose default delay
//    is the answer's Retry-After), the same GET is retried after the delay
//    the server asked for, and succeeds once the database is back.
//
// Env: API_URL, TOKEN, WORKSPACE_ID, and MARK_DIR, where it writes "retrying"
// at its first retry, before the delay: the test mends the connections only
// then, so at least one attempt meets the outage.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, UnknownError, isApiError } from '@botpress/client'
import { scenario, rejects, finish, env, assert } from './lib.mjs'

const config = { apiUrl: env('API_URL'), token: env('TOKEN'), workspaceId: env('WORKSPACE_ID') }

await scenario('an outage is UnknownError naming ServiceUnavailable and 503', async () => {
  const err = await rejects(new Client(config).listBots({}), UnknownError, 'listBots while the database is unreachable')
  assert.ok(isApiError(err), 'isApiError')
  assert.match(err.message, /Type: ServiceUnavailable/)
  assert.match(err.message, /Code: 503/)
})

await scenario('a GET retried after Retry-After succeeds once the database is back', async () => {
  const retries = []
  const client = new Client({
    ...config,
    retry: {
      retries: 20,
      onRetry: (n, e) => {
        retries.push({ status: e.response?.status, retryAfter: e.response?.headers?.['retry-after'], at: Date.now() })
        if (n === 1) writeFileSync(join(env('MARK_DIR'), 'retrying'), '')
      },
    },
  })
  const res = await client.listBots({})
  const done = Date.now()
  assert.ok(Array.isArray(res.bots), `listBots answered ${JSON.stringify(res)}`)
  assert.ok(retries.length > 0, 'listBots was not retried')
  assert.equal(retries[0].status, 503, 'the first retry followed a 503')
  // Until the pool reconnects an attempt may fail otherwise; each 503
  // carries the delay.
  for (const r of retries.filter((r) => r.status === 503)) assert.equal(r.retryAfter, '1', 'Retry-After of a 503')
  // axios-retry waits what Retry-After asked for (1 s) before each retry.
  const waited = done - retries[retries.length - 1].at
  assert.ok(waited >= 900, `the last retry was sent ${waited} ms after the failure before it, want Retry-After's 1 s`)
})

finish()
