// Benchmark (not a test): message -> bot reply on the SSE stream, at a
// fixed rate, for each bot named in BOTS (name=chatWebhookURL,...), one
// after the other. Env: BOTS, RATE (msg/s, default 50), SECONDS (default
// 10), CONVS (default 20). Prints one JSON line per bot.
import * as chat from '@botpress/chat'

const rate = Number(process.env.RATE || 50)
const seconds = Number(process.env.SECONDS || 10)
const nconv = Number(process.env.CONVS || 20)
const pct = (xs, p) => xs.length ? xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN

for (const spec of process.env.BOTS.split(',')) {
  const [name, apiUrl] = spec.split('=')
  const sent = new Map()
  const lat = []
  const convs = await Promise.all(Array.from({ length: nconv }, async () => {
    const client = await chat.Client.connect({ apiUrl })
    const { conversation } = await client.createConversation({})
    const listener = await client.listenConversation({ id: conversation.id })
    listener.on('message_created', (m) => {
      if (m.userId === client.user.id) return
      const key = m.payload.text.replace(/^echo /, '').replace(/ ✓$/, '')
      const t0 = sent.get(key)
      if (t0 !== undefined) { sent.delete(key); lat.push(performance.now() - t0) }
    })
    return { client, conversation, listener }
  }))
  // Warm up: one message per conversation.
  await Promise.all(convs.map((c, i) => { sent.set(`load w${i}`, performance.now()); return c.client.createMessage({ conversationId: c.conversation.id, payload: { type: 'text', text: `load w${i}` } }) }))
  await new Promise((r) => setTimeout(r, 2000))
  lat.length = 0
  const total = rate * seconds
  const start = performance.now()
  let failures = 0
  const inflight = []
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate
    const wait = due - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    const c = convs[i % nconv]
    const text = `load b${i}`
    sent.set(text, performance.now())
    inflight.push(c.client.createMessage({ conversationId: c.conversation.id, payload: { type: 'text', text } }).catch(() => failures++))
  }
  await Promise.all(inflight)
  const deadline = performance.now() + 15000
  while (lat.length < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  lat.sort((a, b) => a - b)
  console.log(JSON.stringify({ bot: name, rate, seconds, sent: total, replies: lat.length, failures,
    p50ms: Math.round(pct(lat, 50) * 10) / 10, p99ms: Math.round(pct(lat, 99) * 10) / 10 }))
  for (const c of convs) c.listener.disconnect?.()
}
process.exit(0)
