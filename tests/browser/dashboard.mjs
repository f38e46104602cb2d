// The dashboard: sign in with a token, create a bot, paste its code,
// deploy, talk to it from its hosted chat page, then find the conversation,
// its transcript and the bot's log line in the dashboard.
import { BASE, run, shot, step, watch } from './lib.mjs'

const TOKEN = process.env.TOKEN
const T = 15000
const nav = (page, name) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true })
const code = `bot.on.message('*', async ({ message, client }) => {
  console.log('dashboard test got: ' + message.payload.text)
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo: ' + message.payload.text } })
})`

await run('dashboard', async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  const page = await ctx.newPage()
  const w = watch(page, 'dashboard')

  step('sign in with a token')
  await page.goto(`${BASE}/`)
  await page.getByLabel('Access token').fill('not-a-token')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('alert').waitFor({ timeout: T })
  w.errors.length = 0 // the refused token's 401 is the point of that step
  await shot(page, 'dashboard-signin.png')
  await page.getByLabel('Access token').fill(TOKEN)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Bots' }).waitFor({ timeout: T })

  step('create a bot')
  await page.getByLabel('New bot name').fill('Support bot')
  await page.getByRole('button', { name: 'Create bot' }).click()
  await page.getByRole('heading', { name: 'Support bot' }).waitFor({ timeout: T })

  step('paste its code and deploy')
  const editor = page.getByLabel('Bot code')
  await editor.waitFor({ timeout: T })
  await editor.fill(code)
  await page.getByRole('button', { name: 'Deploy' }).click()
  await page.getByText('Deployed ✓').waitFor({ timeout: T })
  await shot(page, 'dashboard-code.png')

  step('the overview shows the hosted page and the embed snippet')
  await page.getByRole('link', { name: 'Overview' }).click()
  const open = page.getByRole('link', { name: 'Open the hosted chat page' })
  await open.waitFor({ timeout: T })
  const chatURL = await open.getAttribute('href')
  const snippet = await page.getByRole('textbox', { name: 'Embed snippet' }).inputValue()
  if (!snippet.includes('/webchat.js') || !snippet.includes('data-client-id=')) throw new Error(`bad snippet: ${snippet}`)
  await shot(page, 'dashboard-bot.png')

  step('talk to the bot on its hosted chat page')
  const chat = await ctx.newPage()
  const wc = watch(chat, 'hosted chat')
  await chat.goto(chatURL)
  const input = chat.getByRole('textbox', { name: 'Message Input' })
  await input.waitFor({ timeout: T })
  await input.fill('hi from the dashboard test')
  await input.press('Enter')
  await chat.getByText('echo: hi from the dashboard test').waitFor({ timeout: T })
  wc.check()
  await chat.close()

  step('the conversation and its transcript')
  await page.getByRole('link', { name: 'Conversations' }).click()
  await page.getByText('echo: hi from the dashboard test').first().click({ timeout: T })
  await page.getByRole('heading', { name: 'Transcript' }).waitFor({ timeout: T })
  await page.getByText('hi from the dashboard test', { exact: true }).waitFor({ timeout: T })
  await shot(page, 'dashboard-transcript.png')

  step("the bot's log line, live")
  await page.getByRole('link', { name: 'Logs' }).click()
  await page.getByText('dashboard test got: hi from the dashboard test').waitFor({ timeout: T })
  await shot(page, 'dashboard-logs.png')

  step('bots, members and tokens')
  await nav(page, 'Bots').click()
  await page.getByRole('link', { name: /Support bot/ }).waitFor({ timeout: T })
  await shot(page, 'dashboard-bots.png')
  await nav(page, 'Members').click()
  await page.getByRole('table').waitFor({ timeout: T })
  await shot(page, 'dashboard-members.png')
  await nav(page, 'Tokens').click()
  await page.getByLabel('Note').fill('CI')
  await page.getByRole('button', { name: 'Create token' }).click()
  await page.getByText('Copy it now').waitFor({ timeout: T })
  await shot(page, 'dashboard-tokens.png')
  w.check()

  step('rename and delete the bot, with the keyboard')
  await nav(page, 'Bots').click()
  await page.getByRole('link', { name: /Support bot/ }).click()
  await page.getByLabel('Name', { exact: true }).fill('Support bot 2')
  await page.getByLabel('Name', { exact: true }).press('Enter')
  await page.getByRole('heading', { name: 'Support bot 2' }).waitFor({ timeout: T })
  await page.getByRole('button', { name: 'Delete bot…' }).click()
  await page.getByRole('button', { name: 'Yes, delete it' }).click()
  await page.getByText('No bots yet').waitFor({ timeout: T })

  step('phone-sized dashboard')
  const phone = await browser.newContext({ viewport: { width: 390, height: 800 }, isMobile: true, hasTouch: true })
  const p2 = await phone.newPage()
  const w2 = watch(p2, 'dashboard (phone)')
  await p2.goto(`${BASE}/`)
  await p2.getByLabel('Access token').fill(TOKEN)
  await p2.getByRole('button', { name: 'Sign in' }).click()
  await p2.getByRole('heading', { name: 'Bots' }).waitFor({ timeout: T })
  await shot(p2, 'dashboard-phone.png')
  w.check()
  w2.check()
})
