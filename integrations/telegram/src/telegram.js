// A small client of the Telegram Bot API (https://core.telegram.org/bots/api):
// POST {base}/bot{token}/{method} with a JSON body, answer {ok, result} or
// {ok: false, error_code, description}. Node's fetch, no dependency.
'use strict'
const crypto = require('node:crypto')
const { RuntimeError } = require('@botpress/sdk')
const { DEFAULT_API_BASE_URL } = require('./definition')

class TelegramError extends RuntimeError {
  constructor(method, status, description) {
    super(`Telegram ${method} failed (${status}): ${description}`)
    this.telegramStatus = status
  }
}

function baseUrl(configuration) {
  return (configuration.apiBaseUrl || DEFAULT_API_BASE_URL).replace(/\/+$/, '')
}

function api(configuration) {
  const base = baseUrl(configuration)
  const token = configuration.botToken
  return async function call(method, params) {
    let res
    try {
      res = await fetch(`${base}/bot${token}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(params || {}),
      })
    } catch (err) {
      throw new TelegramError(method, 0, `cannot reach ${base}: ${err.cause?.code || err.message}`)
    }
    const body = await res.json().catch(() => null)
    if (!res.ok || !body || body.ok !== true) {
      throw new TelegramError(method, res.status, (body && body.description) || 'no description')
    }
    return body.result
  }
}

// The URL of a file Telegram holds (getFile's file_path). It carries the
// bot token, as Telegram's file links do.
function fileUrl(configuration, filePath) {
  return `${baseUrl(configuration)}/file/bot${configuration.botToken}/${filePath}`
}

// secretToken is the secret_token given to setWebhook: Telegram sends it back
// in X-Telegram-Bot-Api-Secret-Token with every update, so the integration
// tells Telegram's updates from anyone else's. Derived from the bot token
// and the webhook id: nothing to store.
function secretToken(configuration, webhookId) {
  return crypto.createHmac('sha256', configuration.botToken).update(`parley-telegram:${webhookId}`).digest('hex')
}

module.exports = { api, fileUrl, secretToken, TelegramError }
