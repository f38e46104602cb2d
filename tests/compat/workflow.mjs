// Workflow bots end to end through the real @botpress/chat client: each
// bot's scripted conversations (user says / bot should say) run in a fresh
// conversation. The Go test (internal/app/workflow_test.go) publishes the
// bots and passes them in WORKFLOW_BOTS (a JSON file: [{name, url, scripts}]).
// Script steps: {user, value?} sends a text message (value = button value),
// {event} a custom event, {bot} expects the next bot message's preview
// (exact, or /regex/), {sleep: ms} waits, {checkTrigger} checks the issue-
// free run of the previous turn through a code card's report.
import * as chat from '@botpress/chat'
import fs from 'node:fs'
import { scenario, finish, env, assert } from './lib.mjs'

const bots = JSON.parse(fs.readFileSync(env('WORKFLOW_BOTS'), 'utf8'))

function preview(p) {
  switch (p.type) {
    case 'text': return p.text
    case 'markdown': return p.markdown
    case 'image': case 'audio': case 'video': return `[${p.type}] ${p[p.type + 'Url']}`
    case 'card': return [p.title, p.subtitle, (p.actions || []).map((a) => `[${a.label}]`).join(' ')].filter(Boolean).join('\n')
    case 'choice': case 'dropdown': return [p.text, (p.options || []).map((o) => `[${o.label}]`).join(' ')].filter(Boolean).join('\n')
    default: return JSON.stringify(p)
  }
}

function matches(want, got) {
  if (want.length >= 2 && want.startsWith('/') && want.endsWith('/')) return new RegExp('^(?:' + want.slice(1, -1) + ')$', 's').test(got)
  return want.trim() === got.trim()
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function botMessages(client, conversationId, userId) {
  const out = []
  let nextToken
  do {
    const res = await client.listMessages({ conversationId, nextToken })
    out.push(...res.messages)
    nextToken = res.meta.nextToken
  } while (nextToken)
  return out.filter((m) => m.userId !== userId).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || 0)
}

async function runScript(url, script) {
  const client = await chat.Client.connect({ apiUrl: url })
  const { conversation } = await client.createConversation({})
  const userId = client.user.id
  let seen = 0
  const steps = script.conversation
  for (let i = 0; i < steps.length; i++) {
    const st = steps[i]
    if (st.sleep) { await sleep(st.sleep); continue }
    if (st.bot !== undefined) {
      // Wait for the bot's next message.
      let msgs
      for (let t = 0; t < 100; t++) {
        msgs = await botMessages(client, conversation.id, userId)
        if (msgs.length > seen) break
        await sleep(50)
      }
      assert.ok(msgs.length > seen, `${script.name} step ${i + 1}: expected the bot to say ${JSON.stringify(st.bot)}, it said nothing`)
      const got = preview(msgs[seen].payload)
      assert.ok(matches(st.bot, got), `${script.name} step ${i + 1}: expected ${JSON.stringify(st.bot)}, got ${JSON.stringify(got)}`)
      seen++
      continue
    }
    // Before the next input, the bot must have said nothing more.
    await sleep(150)
    const extra = (await botMessages(client, conversation.id, userId)).slice(seen)
    assert.equal(extra.length, 0, `${script.name} step ${i + 1}: the bot also said ${JSON.stringify(extra.map((m) => preview(m.payload)))}`)
    if (st.event) {
      await client.createEvent({ conversationId: conversation.id, payload: st.event })
    } else {
      const payload = { type: 'text', text: st.user }
      if (st.value) payload.value = st.value
      await client.createMessage({ conversationId: conversation.id, payload })
    }
  }
  await sleep(150)
  const extra = (await botMessages(client, conversation.id, userId)).slice(seen)
  assert.equal(extra.length, 0, `${script.name}: at the end the bot also said ${JSON.stringify(extra.map((m) => preview(m.payload)))}`)
}

for (const bot of bots) {
  for (const script of bot.scripts) {
    await scenario(`${bot.name}: ${script.name}`, () => runScript(bot.url, script))
  }
}
finish()
