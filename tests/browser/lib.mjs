// Shared helpers of the browser tests: Debian's Chromium driven by
// playwright-core, bounded waits, console/page error capture, screenshots.
import { chromium } from 'playwright-core'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'

export const BASE = process.env.BASE_URL
export const SHOTS = process.env.SCREENSHOT_DIR || 'test-output/screenshots'
mkdirSync(SHOTS, { recursive: true })

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

// watch records console errors and uncaught page errors of a page; check()
// fails the test when any happened (the UI must run without them).
export function watch(page, name) {
  const errors = []
  page.on('console', (m) => {
    const text = m.text()
    if (process.env.DEBUG_BROWSER) console.log(`[${name} console.${m.type()}] ${text}`)
    if (m.type() === 'error') errors.push(`console.error: ${text}`)
  })
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`))
  page.on('requestfailed', (r) => {
    const url = r.url()
    // Aborted SSE streams on navigation are expected, and so is a read
    // the page itself dropped (net::ERR_ABORTED: it navigated on, or its
    // data cache cancelled a query it no longer shows); a failed write, or
    // a read that failed any other way, is an error.
    const dropped = r.method() === 'GET' && r.failure()?.errorText === 'net::ERR_ABORTED'
    if (!url.includes('/initialize') && !url.includes('/listen') && !dropped) errors.push(`request failed: ${r.method()} ${url} ${r.failure()?.errorText}`)
  })
  page.on('response', (r) => {
    if (r.status() >= 400 && !(page.__expect404 && r.status() === 404)) errors.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`)
  })
  page.on('request', (r) => {
    const u = new URL(r.url())
    if (!['127.0.0.1', 'localhost'].includes(u.hostname) && !u.protocol.startsWith('data') && !u.protocol.startsWith('blob')) {
      errors.push(`request to another host: ${r.url()}`)
    }
  })
  return {
    errors,
    check() {
      if (errors.length) throw new Error(`${name}: browser errors:\n  ${errors.join('\n  ')}`)
    },
  }
}

export async function shot(page, file) {
  const path = join(SHOTS, file)
  await page.screenshot({ path, fullPage: false })
  console.log(`screenshot: ${path}`)
}

export function step(msg) {
  console.log(`- ${msg}`)
}

// run wraps a test body: bounded in time, browser always closed.
export async function run(name, body, timeoutMs = 120000) {
  const browser = await launch()
  const timer = setTimeout(() => {
    console.error(`${name}: timed out after ${timeoutMs} ms`)
    process.exit(2)
  }, timeoutMs)
  try {
    await body(browser)
    console.log(`${name}: ok`)
  } catch (e) {
    console.error(`${name}: FAILED: ${e.stack || e}`)
    process.exitCode = 1
  } finally {
    clearTimeout(timer)
    await browser.close()
  }
}
