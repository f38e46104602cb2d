// The embed snippet on a page of another origin: keyboard-open the chat
// button, talk to the bot in the panel, close it with Escape; then call the
// Webchat API cross-origin from that page (preflighted REST and the SSE
// stream), as a site using the React component directly would.
import { BASE, run, shot, step, watch } from './lib.mjs'

const SITE = process.env.SITE_URL
const CLIENT_ID = process.env.CLIENT_ID
const T = 15000

await run('embed', async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 820 } })
  const page = await ctx.newPage()
  const w = watch(page, 'embed host page')
  if (new URL(SITE).origin === new URL(BASE).origin) throw new Error('the site must be on another origin')

  step('open the site; the chat button appears')
  await page.goto(SITE)
  const fab = page.getByRole('button', { name: 'Open chat' })
  await fab.waitFor({ timeout: T })

  step('open it with the keyboard')
  await fab.focus()
  await page.keyboard.press('Enter')
  const frame = page.frameLocator('iframe[title="Chat with us"]')
  const input = frame.getByRole('textbox', { name: 'Message Input' })
  await input.waitFor({ timeout: T })
  await frame.getByText('Welcome to the echo bot!').first().waitFor({ timeout: T })

  step('chat in the panel')
  await input.fill('hello from another site')
  await input.press('Enter')
  await frame.getByText('You said: hello from another site').waitFor({ timeout: T })
  await page.waitForTimeout(800)
  await shot(page, 'embed-cross-origin.png')

  step('Escape closes the panel, focus returns to the button')
  await page.getByRole('button', { name: 'Close chat' }).focus()
  await page.keyboard.press('Escape')
  await page.getByRole('button', { name: 'Open chat' }).waitFor({ timeout: T })
  if (await page.locator('iframe[title="Chat with us"]').isVisible()) throw new Error('the panel is still visible')

  step('the Webchat API answers cross-origin calls (CORS)')
  const result = await page.evaluate(
    async ({ base, cid }) => {
      const api = `${base}/webchat/${cid}`
      const created = await fetch(`${api}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      const { user, key } = await created.json()
      const me = await fetch(`${api}/users/me`, { headers: { 'x-user-key': key } }).then((r) => r.json())
      const stream = await fetch(`${api}/initialize`, { headers: { 'x-user-key': key, timeout: '60000', accept: 'text/event-stream' } })
      const reader = stream.body.getReader()
      let text = ''
      while (!text.includes('\n\n')) {
        const { value, done } = await reader.read()
        if (done) break
        text += new TextDecoder().decode(value)
      }
      await reader.cancel()
      const init = JSON.parse(text.trim().replace(/^data: /, ''))
      return { status: created.status, userId: user.id, meId: me.user.id, type: init.type, initUser: init.data.user.id, ct: stream.headers.get('content-type') }
    },
    { base: BASE, cid: CLIENT_ID },
  )
  if (result.status !== 201 || result.meId !== result.userId || result.type !== 'init' || result.initUser !== result.userId) {
    throw new Error(`cross-origin calls: ${JSON.stringify(result)}`)
  }
  if (!result.ct.startsWith('text/event-stream')) throw new Error(`stream content type ${result.ct}`)

  step('phone-sized host page')
  const phone = await browser.newContext({ viewport: { width: 390, height: 780 }, isMobile: true, hasTouch: true })
  const p2 = await phone.newPage()
  const w2 = watch(p2, 'embed (phone)')
  await p2.goto(SITE)
  await p2.getByRole('button', { name: 'Open chat' }).click()
  await p2.frameLocator('iframe[title="Chat with us"]').getByText('Welcome to the echo bot!').first().waitFor({ timeout: T })
  await p2.waitForTimeout(800)
  await shot(p2, 'embed-phone.png')
  w.check()
  w2.check()
})
