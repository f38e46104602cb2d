// A tiny test runner for the compatibility scripts: each scenario is an
// async function; the summary is printed as JSON and the exit code is the
// number of failures (capped), so the Go test can show what broke.
import assert from 'node:assert/strict'

const results = []

export async function scenario(name, fn) {
  const start = Date.now()
  try {
    await fn()
    results.push({ name, ok: true, ms: Date.now() - start })
  } catch (err) {
    results.push({ name, ok: false, ms: Date.now() - start, error: String(err?.stack || err) })
  }
}

export async function rejects(promise, ErrorClass, what) {
  try {
    await promise
  } catch (err) {
    assert.ok(err instanceof ErrorClass, `${what}: expected ${ErrorClass.name}, got ${err?.constructor?.name}: ${err?.message}`)
    return err
  }
  assert.fail(`${what}: expected ${ErrorClass.name}, but the call succeeded`)
}

export function finish() {
  const failed = results.filter((r) => !r.ok)
  console.log(JSON.stringify({ passed: results.length - failed.length, failed: failed.length, results }, null, 2))
  process.exit(failed.length ? 1 : 0)
}

export function env(name) {
  const v = process.env[name]
  if (!v) throw new Error(`missing env ${name}`)
  return v
}

export { assert }
