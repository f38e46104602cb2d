// Installs the Slack integration on a Parley bot, in one command:
// builds the bundle, creates the integration on the server (or updates it
// when this version exists) with createIntegration / updateIntegration,
// then enables it on the bot with updateBot; Parley calls its register,
// which checks the bot token (auth.test). It prints the webhook URL to set
// as the Slack app's Event Subscriptions and Interactivity request URL.
//
//   PARLEY_URL=https://bots.example.com TOKEN=<personal access token> \
//   WORKSPACE_ID=<workspace id> BOT_ID=<bot id> \
//   SLACK_BOT_TOKEN=xoxb-... SLACK_SIGNING_SECRET=<app's signing secret> \
//   node integrations/slack/install.mjs
//
// Optional: SLACK_API_BASE_URL (default https://slack.com/api).
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import fs from 'node:fs'
import path from 'node:path'

const here = path.dirname(fileURLToPath(import.meta.url))
const need = (name) => process.env[name] || (console.error(`install: set ${name}`), process.exit(2))
const apiUrl = need('PARLEY_URL')
const token = need('TOKEN')
const workspaceId = need('WORKSPACE_ID')
const botId = need('BOT_ID')
const botToken = need('SLACK_BOT_TOKEN')
const signingSecret = need('SLACK_SIGNING_SECRET')

const bundle = execFileSync(process.execPath, [path.join(here, 'build.mjs')], { encoding: 'utf8' }).trim()
const definition = JSON.parse(fs.readFileSync(path.join(path.dirname(bundle), 'definition.json'), 'utf8'))
const code = fs.readFileSync(bundle, 'utf8')

const modules = [path.join(here, 'node_modules'), path.join(here, '..', '..', 'tests', 'compat', 'node_modules')]
const from = modules.find((p) => fs.existsSync(path.join(p, '@botpress', 'client')))
if (!from) {
  console.error('install: @botpress/client not found: run `npm install` in integrations/slack')
  process.exit(2)
}
const { Client } = createRequire(path.join(from, 'x.js'))('@botpress/client')
const admin = new Client({ apiUrl, token, workspaceId })

let integration
try {
  ;({ integration } = await admin.getIntegrationByName({ name: definition.name, version: definition.version }))
  const { name, version, ...changes } = definition
  ;({ integration } = await admin.updateIntegration({ id: integration.id, ...changes, code }))
  console.log(`updated integration ${definition.name}@${definition.version} (${integration.id})`)
} catch (err) {
  if (err?.type !== 'ResourceNotFound') throw err
  ;({ integration } = await admin.createIntegration({ ...definition, code }))
  console.log(`created integration ${definition.name}@${definition.version} (${integration.id})`)
}

const configuration = { botToken, signingSecret }
if (process.env.SLACK_API_BASE_URL) configuration.apiBaseUrl = process.env.SLACK_API_BASE_URL
const { bot } = await admin.updateBot({ id: botId, integrations: { [definition.name]: { enabled: true, integrationId: integration.id, configuration } } })
const installed = Object.values(bot.integrations).find((i) => i.id === integration.id || i.name === definition.name)
console.log(`enabled on bot ${botId}: status ${installed?.status}, webhook ${installed?.webhookUrl}`)
console.log(`Slack app request URL (Event Subscriptions and Interactivity): ${installed?.webhookUrl}`)
