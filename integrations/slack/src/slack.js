// A small client of the Slack Web API (https://api.slack.com/web): POST
// {base}/{method} with a JSON body and the bot token as bearer, answer
// {ok: true, ...} or {ok: false, error}. Node's fetch, no dependency. And
// the check of Slack's request signatures
// (https://api.slack.com/authentication/verifying-requests-from-slack).
'use strict'
const crypto = require('node:crypto')
const { RuntimeError } = require('@botpress/sdk')
const { DEFAULT_API_BASE_URL } = require('./definition')

// Slack's advice: refuse requests whose timestamp is more than five minutes
// from now (a replayed request).
const MAX_SKEW_SECONDS = 5 * 60

class SlackError extends RuntimeError {
  constructor(method, status, error) {
    super(`Slack ${method} failed (${status}): ${error}`)
    this.slackStatus = status
  }
}

function baseUrl(configuration) {
  return (configuration.apiBaseUrl || DEFAULT_API_BASE_URL).replace(/\/+$/, '')
}

function api(configuration) {
  const base = baseUrl(configuration)
  return async function call(method, params) {
    let res
    try {
      res = await fetch(`${base}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${configuration.botToken}` },
        body: JSON.stringify(params || {}),
      })
    } catch (err) {
      throw new SlackError(method, 0, `cannot reach ${base}: ${err.cause?.code || err.message}`)
    }
    const body = await res.json().catch(() => null)
    if (!res.ok || !body || body.ok !== true) {
      throw new SlackError(method, res.status, (body && body.error) || 'no error given')
    }
    return body
  }
}

// sign is Slack's signature of a request: v0= and the hex HMAC-SHA256, keyed
// with the signing secret, of "v0:{timestamp}:{raw body}".
function sign(signingSecret, timestamp, body) {
  return 'v0=' + crypto.createHmac('sha256', signingSecret).update(`v0:${timestamp}:${body}`).digest('hex')
}

// verify answers why a request is not Slack's, or null when its signature
// and timestamp are right.
function verify(signingSecret, { timestamp, signature, body }, nowSeconds = Math.floor(Date.now() / 1000)) {
  if (!timestamp || !signature) return 'missing X-Slack-Request-Timestamp or X-Slack-Signature'
  if (!/^\d+$/.test(String(timestamp))) return 'X-Slack-Request-Timestamp is not a number'
  if (Math.abs(nowSeconds - Number(timestamp)) > MAX_SKEW_SECONDS) return 'X-Slack-Request-Timestamp is more than 5 minutes away'
  const want = Buffer.from(sign(signingSecret, timestamp, body))
  const got = Buffer.from(String(signature))
  if (want.length !== got.length || !crypto.timingSafeEqual(want, got)) return 'X-Slack-Signature does not match'
  return null
}

module.exports = { api, sign, verify, SlackError, MAX_SKEW_SECONDS }
