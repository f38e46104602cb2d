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
// then, so at least one attempt meets the outage. Prints a JSON summary;
// exits 1 on any failure.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Client, UnknownError, isApiError } from '@botpress/client'

const env = (name) => {
  const v = process.env[name]
  if (!v) {
    console.error(`${name} not set`)
    process.exit(2)
  }
  return v
}
const fail = (msg) => {
  console.error(msg)
  process.exit(1)
}
const config = { apiUrl: env('API_URL'), token: env('TOKEN'), workspaceId: env('WORKSPACE_ID') }

let err
try {
  await new Client(config).listBots({})
} catch (e) {
  err = e
}
if (!err) fail('listBots succeeded while the database was unreachable')
if (!(err instanceof UnknownError) || !isApiError(err)) {
  fail(`listBots rejected with ${err?.constructor?.name}: ${err?.message}, want the client's UnknownError`)
}
if (!err.message.includes('Type: ServiceUnavailable') || !err.message.includes('Code: 503')) {
  fail(`UnknownError's message ${JSON.stringify(err.message)} does not name ServiceUnavailable and 503`)
}

const retries = []
const retrying = new Client({
  ...config,
  retry: {
    retries: 20,
    onRetry: (n, e) => {
      retries.push({ n, status: e.response?.status, retryAfter: e.response?.headers?.['retry-after'], at: Date.now() })
      if (n === 1) writeFileSync(join(env('MARK_DIR'), 'retrying'), '')
    },
  },
})
const res = await retrying.listBots({}).catch((e) => fail(`listBots with retries failed: ${e?.constructor?.name}: ${e?.message}`))
const done = Date.now()
if (!Array.isArray(res?.bots)) fail(`listBots answered ${JSON.stringify(res)}`)
if (retries.length === 0) fail('listBots was not retried')
for (const r of retries) {
  // Until the pool reconnects an attempt may also fail otherwise; each
  // 503 must carry the delay.
  if (r.status === 503 && r.retryAfter !== '1') fail(`a 503 came with Retry-After ${JSON.stringify(r.retryAfter)}, want "1"`)
}
if (retries[0].status !== 503) fail(`the first retry followed a ${retries[0].status}, want 503`)
// axios-retry waits what Retry-After asked for (1 s) before each retry.
const waited = done - retries[retries.length - 1].at
if (waited < 900) fail(`the last retry was sent ${waited} ms after the failure before it, want Retry-After's 1 s`)
console.log(JSON.stringify({ ok: true, error: err.type, retries: retries.map((r) => r.status), waitedMs: waited }))
