// An SDK bot (sdkbot/bot.cjs, unchanged @botpress/sdk 5.4.3) answering a
// user of @botpress/chat 0.5.5, in order; its state, conversation tag and
// action seen through @botpress/client's Runtime API.
// Env: API_URL (the bot's chat webhook URL), ADMIN_URL, TOKEN, BOT_ID.
// With LOAD=1: 200 messages over 20 conversations (the Go test kills the
// bot process in the middle, BOT_PID, and one message kills it from inside
// after its reply is stored); every message must get exactly one reply, in
// order.
import * as chat from '@botpress/chat'
import { Client } from '@botpress/client'
import { scenario, finish, env, assert } from './lib.mjs'

const apiUrl = env('API_URL')

async function session() {
  const client = await chat.Client.connect({ apiUrl })
  const { conversation } = await client.createConversation({})
  const listener = await client.listenConversation({ id: conversation.id })
  const replies = []
  let wake = () => {}
  listener.on('message_created', (m) => {
    if (m.userId === client.user.id) return
    replies.push(m)
    wake()
  })
  const waitReplies = async (n, ms = 30000) => {
    const deadline = Date.now() + ms
    while (replies.length < n) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for reply #${n}; got ${replies.length}`)
      await new Promise((r) => { wake = r; setTimeout(r, 200) })
    }
    return replies.slice(0, n)
  }
  const send = (text) => client.createMessage({ conversationId: conversation.id, payload: { type: 'text', text } })
  return { client, conversation, listener, replies, waitReplies, send }
}

const texts = (ms) => ms.map((m) => m.payload.text)

if (process.env.LOAD !== '1') {
  await scenario('the SDK bot answers in order, with state, tag, action and hook', async () => {
    const s = await session()
    await s.send('hello')
    await s.send('again')
    await s.send('third')
    const got = texts(await s.waitReplies(3))
    assert.deepEqual(got, ['#1 hello (x2=2) ✓', '#2 again (x2=4) ✓', '#3 third (x2=6) ✓'])
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(s.replies.length, 3, 'exactly one reply per message')

    const rt = new Client({ apiUrl: env('ADMIN_URL'), token: env('TOKEN'), botId: env('BOT_ID') })
    const { conversation } = await rt.getConversation({ id: s.conversation.id })
    assert.equal(conversation.tags.topic, 'third')
    const { state } = await rt.getState({ type: 'user', id: s.client.user.id, name: 'counter' })
    assert.equal(state.payload.count, 3)
    s.listener.disconnect?.()
  })

  await scenario('each user has its own counter', async () => {
    const s = await session()
    await s.send('hi')
    assert.deepEqual(texts(await s.waitReplies(1)), ['#1 hi (x2=2) ✓'])
  })
} else {
  await scenario('200 messages over 20 conversations, bot killed in the middle: one reply each, in order', async () => {
    const convs = await Promise.all(Array.from({ length: 20 }, () => session()))
    const perConv = 10
    const pid = Number(process.env.BOT_PID || 0)
    let sent = 0
    const sendAll = convs.map(async (s, i) => {
      for (let k = 0; k < perConv; k++) {
        // One message kills the bot from inside, after its reply is stored.
        const die = i === 3 && k === 2 ? ' die' : ''
        await s.send(`load c${i} m${k}${die}`)
        if (++sent === 100 && pid) {
          try { process.kill(pid, 'SIGKILL') } catch {}
        }
        await new Promise((r) => setTimeout(r, 5))
      }
    })
    await Promise.all(sendAll)
    for (const [i, s] of convs.entries()) {
      const want = Array.from({ length: perConv }, (_, k) => `echo load c${i} m${k}${i === 3 && k === 2 ? ' die' : ''} ✓`)
      try {
        await s.waitReplies(perConv, 90000)
      } catch (e) {
        // Say what was stored, to tell a lost reply from a lost signal.
        const { messages } = await s.client.listMessages({ conversationId: s.conversation.id })
        throw new Error(`conversation ${i}: ${e.message}; stored: ${JSON.stringify(texts(messages.reverse()))}`)
      }
      const got = texts(s.replies.slice(0, perConv))
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        // Say what was stored too, to tell a duplicated reply from a
        // signal delivered twice.
        const { messages } = await s.client.listMessages({ conversationId: s.conversation.id })
        assert.deepEqual(got, want, `conversation ${i}; stored: ${JSON.stringify(texts(messages.reverse()))}`)
      }
    }
    await new Promise((r) => setTimeout(r, 1000))
    for (const [i, s] of convs.entries()) {
      assert.equal(s.replies.length, perConv, `conversation ${i}: exactly one reply per message`)
      const { messages } = await s.client.listMessages({ conversationId: s.conversation.id })
      assert.equal(messages.length, 2 * perConv, `conversation ${i}: stored messages`)
    }
  })
}
finish()
