import { adminClient } from '../api/client'

// Parley's getBotVersion answers with the client's `url` and, as an
// extension, the version itself with its code.
type WithVersionCode = { version: { code?: string } }

function hasVersion(x: object): x is WithVersionCode {
  return 'version' in x && typeof x.version === 'object' && x.version !== null
}

/** The deployed code: the newest version's ('' when nothing was deployed). */
export async function deployedCode(ws: string, botId: string): Promise<string> {
  const client = adminClient(ws)
  const { versions } = await client.listBotVersions({ id: botId })
  const newest = versions[0]
  if (!newest) return ''
  const res = await client.getBotVersion({ id: botId, versionId: newest.id })
  return hasVersion(res) ? (res.version.code ?? '') : ''
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
