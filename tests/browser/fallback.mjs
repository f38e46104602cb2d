// A failed turn on the hosted chat page: the bot's code throws, and the
// person chatting sees the bot's fallback message instead of typing dots
// and then nothing; the next message is answered normally.
import { BASE, run, shot, step, watch } from './lib.mjs'

const CLIENT_ID = process.env.CLIENT_ID
const FALLBACK = process.env.FALLBACK
const T = 15000

await run('fallback message', async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } })
  const page = await ctx.newPage()
  const w = watch(page, 'fallback')
  step('open the hosted chat page')
  await page.goto(`${BASE}/w/${CLIENT_ID}`)
  const input = page.getByRole('textbox', { name: 'Message Input' })
  await input.waitFor({ timeout: T })

  step('a message the bot answers')
  await input.fill('hello')
  await input.press('Enter')
  await page.getByText('ok: hello').waitFor({ timeout: T })

  step('a message that makes the bot code throw: the fallback message shows')
  await input.fill('crash please')
  await input.press('Enter')
  await page.getByText(FALLBACK).waitFor({ timeout: T })

  step('the bot still answers afterwards')
  await input.fill('and now?')
  await input.press('Enter')
  await page.getByText('ok: and now?').waitFor({ timeout: T })
  await page.waitForTimeout(800) // let the scroll and fade-in settle
  await shot(page, 'chat-page-fallback.png')
  w.check()
})
