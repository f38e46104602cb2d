// The hosted chat page of an echo bot (docs/webchat.md): the
// welcome message, a message and its reply, a choice button, a reload that
// keeps the history, an image upload, feedback; then a phone-sized view.
import { BASE, run, shot, step, watch } from './lib.mjs'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const CLIENT_ID = process.env.CLIENT_ID
const T = 15000

// A 2x2 red PNG.
const png = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==',
  'base64',
)

await run('chat page', async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } })
  const page = await ctx.newPage()
  const w = watch(page, 'chat page')
  step('open the hosted chat page')
  await page.goto(`${BASE}/w/${CLIENT_ID}`)
  const input = page.getByRole('textbox', { name: 'Message Input' })
  await input.waitFor({ timeout: T })
  step('the bot welcomes us (once per conversation)')
  await page.getByText('Welcome to the echo bot!').first().waitFor({ timeout: T })

  step('send a message, see the reply')
  await input.fill('Hello there')
  await input.press('Enter')
  await page.getByText('You said: Hello there').waitFor({ timeout: T })
  // The echo replaced the pending bubble: the text appears once.
  const count = await page.getByText('Hello there', { exact: true }).count()
  if (count !== 1) throw new Error(`the user's message shows ${count} times`)

  step('ask for a menu, click a choice button')
  await input.fill('menu')
  await input.press('Enter')
  await page.getByText('Pick a fruit').waitFor({ timeout: T })
  await page.getByRole('button', { name: 'Banana' }).click()
  await page.getByText('You picked banana').waitFor({ timeout: T })
  await page.waitForTimeout(800) // let the scroll and fade-in settle
  await shot(page, 'chat-page.png')

  step('thumbs up on a bot message')
  // The component may send more than one feedback request for a click;
  // all must be answered before the reload, which would abort them.
  let feedbackPending = 0
  page.on('request', (r) => { if (r.url().includes('/feedback')) feedbackPending++ })
  const settled = (r) => { if (r.url().includes('/feedback')) feedbackPending-- }
  page.on('requestfinished', settled)
  page.on('requestfailed', settled)
  const fb = page.waitForResponse((r) => r.url().includes('/feedback') && r.request().method() === 'PUT', { timeout: T })
  await page.locator('svg.lucide-thumbs-up').last().click()
  const fbRes = await fb
  if (fbRes.status() !== 200) throw new Error(`feedback answered ${fbRes.status()}`)
  await page.waitForTimeout(300)
  for (const until = Date.now() + T; feedbackPending > 0 && Date.now() < until; ) await page.waitForTimeout(50)

  step('reload: the history is still there, and no second welcome')
  const stored = await page.evaluate((id) => localStorage.getItem(`bp-webchat-${id}-client`), CLIENT_ID)
  if (!stored || !JSON.parse(stored).state?.conversationId) throw new Error(`no stored conversation: ${stored}`)
  await page.reload()
  await input.waitFor({ timeout: T })
  await page.getByText('You picked banana').waitFor({ timeout: T })
  await page.getByText('You said: Hello there').waitFor({ timeout: T })
  await page.waitForTimeout(1500) // a second welcome would arrive by now
  const welcomes = await page.getByText('Welcome to the echo bot!').count()
  if (welcomes !== 1) throw new Error(`the welcome message shows ${welcomes} times after a reload`)

  step('upload a small image')
  const file = join(tmpdir(), `parley-test-${process.pid}.png`)
  writeFileSync(file, png)
  const upload = page.waitForResponse((r) => r.url().includes('/upload') && r.request().method() === 'PUT', { timeout: T })
  await page.locator('input[type=file]').first().setInputFiles(file)
  const up = await upload
  if (up.status() !== 200) throw new Error(`upload answered ${up.status()}: ${await up.text()}`)
  await page.waitForTimeout(300)
  await input.press('Enter').catch(() => {})
  const sendBtn = page.getByRole('button', { name: /send/i })
  if (await sendBtn.count()) await sendBtn.first().click().catch(() => {})
  await page.getByText('Nice picture!').waitFor({ timeout: T })
  // The image is served back with its content type.
  const img = page.locator('img[src*="/files/"]').first()
  await img.waitFor({ timeout: T })
  const src = await img.getAttribute('src')
  const res = await page.request.get(src)
  if (res.status() !== 200 || res.headers()['content-type'] !== 'image/png') {
    throw new Error(`the uploaded image is served with ${res.status()} ${res.headers()['content-type']}`)
  }
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await img.elementHandle(), { timeout: T })
  await page.waitForTimeout(800)
  await shot(page, 'chat-page-upload.png')
  w.check()

  step('phone-sized view')
  const phone = await browser.newContext({ viewport: { width: 390, height: 780 }, isMobile: true, hasTouch: true })
  const p2 = await phone.newPage()
  const w2 = watch(p2, 'chat page (phone)')
  await p2.goto(`${BASE}/w/${CLIENT_ID}`)
  await p2.getByRole('textbox', { name: 'Message Input' }).waitFor({ timeout: T })
  await p2.getByText('Welcome to the echo bot!').first().waitFor({ timeout: T })
  await p2.waitForTimeout(800)
  await shot(p2, 'chat-page-phone.png')
  w2.check()

  step('an unknown client id gets a clear page')
  page.__expect404 = true
  const r404 = await page.goto(`${BASE}/w/no-such-client`)
  if (r404.status() !== 404 || !(await page.getByText('Chat unavailable').count())) throw new Error('unknown client id: no clear 404 page')
})
