import { adminClient } from '../api/client'
import { parley } from '../api/parley'

// Parley's getBotVersion answers with the client's `url` and, as an
// extension, the version itself with its code and whether that code was
// generated from bot JSON (a workflow bot).
type WithVersionCode = { version: { code?: string; fromBotJson?: boolean } }

function hasVersion(x: object): x is WithVersionCode {
  return 'version' in x && typeof x.version === 'object' && x.version !== null
}

export type DeployedCode = { code: string; fromBotJson: boolean }

/** The deployed code: the newest version's ('' when nothing was deployed). */
export async function deployedCode(ws: string, botId: string): Promise<DeployedCode> {
  const client = adminClient(ws)
  const { versions } = await client.listBotVersions({ id: botId })
  const newest = versions[0]
  if (!newest) return { code: '', fromBotJson: false }
  const res = await client.getBotVersion({ id: botId, versionId: newest.id })
  return hasVersion(res) ? { code: res.version.code ?? '', fromBotJson: res.version.fromBotJson === true } : { code: '', fromBotJson: false }
}

/** The deployed bot JSON of a workflow bot (GET /v1/admin/bots/{id}/bot-json). */
export async function deployedBotJson(ws: string, botId: string): Promise<unknown> {
  return (await parley.getBotJson(ws, botId)).botJson
}

export const sampleCode = `// Runs on every incoming message.
bot.on.message('*', async ({ message, client }) => {
  console.log('got', message.payload.text)
  await client.createMessage({
    conversationId: message.conversationId,
    payload: { type: 'text', text: 'echo: ' + message.payload.text },
  })
})
`
