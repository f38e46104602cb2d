// Support teams in the dashboard (issue 19): a user asks the bot for a
// human on the hosted chat page; an operator finds the conversation in the
// Waiting list, takes it over, replies (the user sees the agent's message)
// and hands it back (the bot answers again). The analytics page then shows
// charts of that traffic. The transcript labels the user by name or short
// id, the agent and the bot by theirs, each with its role; a failing turn's
// issue shows only the frames of the bot's own code. The code editor marks a compile error's line and
// warns about unsaved changes; a workflow bot's generated code is read-only
// with a link to its bot JSON.
import { BASE, run, shot, step, watch } from './lib.mjs'

const TOKEN = process.env.TOKEN
const BOT_ID = process.env.BOT_ID
const CHAT_URL = process.env.CHAT_URL
const WORKFLOW_BOT_ID = process.env.WORKFLOW_BOT_ID
const T = 15000

await run('support', async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await ctx.newPage()
  const w = watch(page, 'dashboard')

  step('sign in')
  await page.goto(`${BASE}/`)
  await page.getByLabel('Access token').fill(TOKEN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Bots' }).waitFor({ timeout: T })
  const ws = new URL(page.url()).hash.match(/\/ws\/([^/]+)/)[1]
  const botURL = (tab) => `${BASE}/#/ws/${ws}/bots/${BOT_ID}/${tab}`

  step('a user asks the bot for a person on the hosted chat page')
  const chat = await ctx.newPage()
  const wc = watch(chat, 'hosted chat')
  await chat.goto(CHAT_URL)
  const input = chat.getByRole('textbox', { name: 'Message Input' })
  await input.waitFor({ timeout: T })
  const sent = []
  const say = async (text) => {
    await input.fill(text)
    await input.press('Enter')
    sent.push(text)
  }
  await say('hello')
  await chat.getByText('echo: hello').waitFor({ timeout: T })
  await say('human')
  await chat.getByText('A person will answer you.').waitFor({ timeout: T })

  step('the operator finds it in the Waiting list')
  await page.goto(botURL('waiting'))
  await page.getByRole('heading', { name: 'Waiting for a person' }).waitFor({ timeout: T })
  const waiting = page.getByRole('link', { name: /waiting \d+ s.*asked for a human/ })
  await waiting.waitFor({ timeout: T })
  await shot(page, 'dashboard-waiting.png')
  await waiting.click()
  await page.getByRole('heading', { name: 'Transcript' }).waitFor({ timeout: T })
  await page.getByText('Waiting for a person').waitFor({ timeout: T })

  step('takes it over and replies as an agent')
  await page.getByRole('button', { name: 'Take over' }).click()
  await page.getByRole('button', { name: 'Hand back' }).waitFor({ timeout: T })
  const reply = page.getByLabel(/^Reply as Agent/)
  await reply.fill('Hi, a human here. How can I help?')
  await page.getByRole('button', { name: 'Reply', exact: true }).click()
  await page.locator('.msg.agent').getByText('Hi, a human here. How can I help?').waitFor({ timeout: T })

  step('the user sees the agent; the bot stays quiet')
  await chat.getByText('Hi, a human here. How can I help?').waitFor({ timeout: T })
  // The agent joined the conversation: the webchat shows its initial, not the bot's.
  await chat.getByText('A', { exact: true }).first().waitFor({ timeout: T })
  await say('my order is late')
  await page.locator('.msg.user').getByText('my order is late').waitFor({ timeout: T })
  step('the transcript labels who wrote each message')
  const who = async (sel) => (await page.locator(`${sel} .who`).first().textContent()).trim()
  const userWho = await who('.msg.user')
  const userId = await page.locator('.msg.user .who').first().getAttribute('title')
  if (!userId || !userWho.endsWith(' user') || userWho.startsWith('User') || !userWho.includes(userId.slice(-8)))
    throw new Error(`user label ${JSON.stringify(userWho)} (user ${userId})`)
  const agentWho = await who('.msg.agent')
  if (!/^\S.* agent$/.test(agentWho)) throw new Error(`agent label ${JSON.stringify(agentWho)}`)
  const botWho = await who('.msg.bot:not(.agent)')
  if (botWho !== 'Support bot bot') throw new Error(`bot label ${JSON.stringify(botWho)}`)
  await reply.scrollIntoViewIfNeeded()
  await shot(page, 'dashboard-handoff.png')
  await chat.waitForTimeout(1000)
  if (await chat.getByText('echo: my order is late').count()) throw new Error('the bot answered a conversation taken over')
  await shot(chat, 'chat-page-agent.png')

  step('hands it back: the bot answers again')
  await page.getByRole('button', { name: 'Hand back' }).click()
  await page.getByRole('button', { name: 'Take over' }).waitFor({ timeout: T })
  await say('back to the bot')
  await chat.getByText('echo: back to the bot').waitFor({ timeout: T })
  wc.check()

  step('the analytics page shows charts of that traffic')
  await page.goto(botURL('analytics'))
  // The charts' code is loaded when the tab opens: a slow CI machine gets time.
  await page.getByRole('heading', { name: 'Analytics' }).waitFor({ timeout: 2 * T })
  const tile = (name) => page.getByRole('term').filter({ hasText: new RegExp(`^${name}$`) }).locator('xpath=following-sibling::dd[1]')
  await page.getByRole('term').filter({ hasText: /^Messages in$/ }).waitFor({ timeout: 2 * T })
  await page
    .waitForFunction(() => document.querySelectorAll('.recharts-surface').length >= 4, null, { timeout: 2 * T })
    .catch(async (e) => {
      console.log(`charts drawn: ${await page.locator('.recharts-surface').count()}, wrappers: ${await page.locator('.recharts-responsive-container').count()}`)
      await shot(page, 'dashboard-analytics-failed.png')
      throw e
    })
  const bars = await page.locator('.recharts-bar-rectangle').count()
  if (bars < 2) throw new Error(`only ${bars} bars drawn`)
  const messagesIn = Number(await tile('Messages in').textContent())
  const messagesOut = Number(await tile('Messages out').textContent())
  const turns = Number(await tile('Turns').textContent())
  // Every message the user sent is counted; the bot answered three
  // (hello, human, back) and the agent one; the bot ran for all but the
  // one sent while taken over (skipped, not run).
  if (messagesIn !== sent.length) throw new Error(`Messages in = ${messagesIn}, the user sent ${sent.length}`)
  if (messagesOut !== 4) throw new Error(`Messages out = ${messagesOut}, want 4 (3 from the bot, 1 from the agent)`)
  if (turns < sent.length - 1) throw new Error(`Turns = ${turns}, want at least ${sent.length - 1}`)
  await page.getByText('echoed').waitFor({ timeout: T }) // trackAnalytics, through getBotAnalytics
  await shot(page, 'dashboard-analytics.png')

  step("a failing turn's issue shows only the bot's own frames")
  await say('crash')
  await page.goto(botURL('issues'))
  await page.getByRole('heading', { name: 'Issues' }).waitFor({ timeout: T })
  const issue = page.locator('ul.issues li').filter({ hasText: 'no order number in crash' })
  // The turn runs after the message is stored: refresh until its issue is there.
  for (let i = 0; i < 30 && !(await issue.count()); i++) {
    await page.waitForTimeout(500)
    await page.getByRole('button', { name: 'Refresh' }).click()
  }
  await issue.waitFor({ timeout: T })
  const frames = await issue.getByRole('list', { name: /Where in the bot's code/ }).getByRole('listitem').allTextContents()
  const want = [/^at parseOrder \(bot\.js:2:\d+\)$/, /^at handleCrash \(bot\.js:3:\d+\)$/, /^at bot\.js:8:\d+$/]
  if (frames.length !== want.length || !want.every((re, i) => re.test(frames[i])))
    throw new Error(`issue frames: ${JSON.stringify(frames)}`)
  const text = await issue.textContent()
  if (/prelude\.js|native|dispatchTurn/.test(text)) throw new Error(`issue shows runtime frames: ${text}`)
  await shot(page, 'dashboard-issue-stack.png')
  wc.check()

  step('the code editor marks the line of a compile error')
  await page.goto(botURL('code'))
  const editor = page.getByRole('textbox', { name: 'Bot code' })
  await editor.waitFor({ timeout: 2 * T })
  if ((await page.locator('.cm-lineNumbers .cm-gutterElement').count()) < 3) throw new Error('no line numbers')
  if (!(await page.locator('.cm-content .tok-keyword, .cm-content [class*="ͼ"]').count())) throw new Error('no highlighting')
  await editor.fill("bot.on.message('*', async ({ client }) => {\n  const ok = 1\n  const = 2\n})\n")
  await page.getByText('Unsaved changes').waitFor({ timeout: T })
  w.errors.length = 0
  await page.getByRole('button', { name: 'Deploy' }).click()
  await page.getByRole('alert').waitFor({ timeout: T })
  const marked = page.locator('.cm-error-line')
  await marked.waitFor({ timeout: T })
  const markedText = await marked.textContent()
  if (!markedText.includes('const = 2')) throw new Error(`marked line: ${markedText}`)
  await page.locator('.cm-lint-marker-error').waitFor({ timeout: T })
  await shot(page, 'dashboard-code-error.png')
  // The refused deploy's 400 is the point of that step.
  w.errors.splice(0, w.errors.length, ...w.errors.filter((e) => !e.startsWith('HTTP 400') && !e.includes('status of 400')))

  step('leaving with unsaved changes asks first')
  let asked = ''
  page.once('dialog', (d) => {
    asked = d.message()
    void d.dismiss()
  })
  await page.getByRole('navigation', { name: 'Bot sections' }).getByRole('link', { name: 'Overview' }).click()
  await page.waitForTimeout(300)
  if (!asked.includes('unsaved changes')) throw new Error(`no unsaved-changes prompt: ${asked}`)
  if (!page.url().endsWith('/code')) throw new Error(`left the editor: ${page.url()}`)

  step("a workflow bot's generated code is read-only, with its bot JSON")
  page.once('dialog', (d) => void d.accept())
  await page.goto(`${BASE}/#/ws/${ws}/bots/${WORKFLOW_BOT_ID}/code`)
  await page.getByRole('heading', { name: 'Generated code' }).waitFor({ timeout: T })
  const gen = page.getByRole('textbox', { name: 'Generated code (read-only)' })
  await gen.waitFor({ timeout: T })
  if ((await gen.getAttribute('contenteditable')) !== 'false') throw new Error('generated code is editable')
  await shot(page, 'dashboard-generated-code.png')
  await page.getByRole('link', { name: 'View the bot JSON' }).click()
  await page.getByRole('heading', { name: 'Bot JSON (deployed)' }).waitFor({ timeout: T })
  await page.getByRole('textbox', { name: 'Bot JSON (read-only)' }).getByText('"workflows"').waitFor({ timeout: T })
  w.check()
})
