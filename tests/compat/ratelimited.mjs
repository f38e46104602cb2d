// The door's refusal as the official @botpress/chat client sees it: run
// while the node sheds load (internal/httpapi/chat/overload_test.go),
// createMessage must reject with the client's own RateLimitedError (code
// 429, type RateLimited, an id and a message), which is what code written
// against Botpress Cloud catches.
//
// Env: API_URL (base URL with the webhook id), USER_KEY, CONVERSATION_ID.
// Prints a JSON summary; exits 1 on any failure.
import * as chat from '@botpress/chat'

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

const client = new chat.Client({ apiUrl: env('API_URL') })
const started = Date.now()
let err
try {
  await client.createMessage({
    'x-user-key': env('USER_KEY'),
    conversationId: env('CONVERSATION_ID'),
    payload: { type: 'text', text: 'shed, told to the official client' },
  })
} catch (e) {
  err = e
}
if (!err) fail('createMessage was accepted while the node sheds load')
if (!(err instanceof chat.RateLimitedError)) {
  fail(`createMessage rejected with ${err?.constructor?.name}: ${err?.message}, want RateLimitedError`)
}
if (!chat.isApiError(err) || err.code !== 429 || err.type !== 'RateLimited' || !err.id || !err.message) {
  fail(`RateLimitedError fields: code ${err.code}, type ${err.type}, id ${err.id}, message ${err.message}`)
}
console.log(JSON.stringify({ ok: true, error: err.constructor.name, code: err.code, id: err.id, waitedMs: Date.now() - started }))
