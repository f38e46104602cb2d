// The dashboard's API client: the official @botpress/client (admin), pointed
// at this Parley, for every Admin API operation it has. Each click is thus
// also a check that Parley speaks the client's protocol. Parley's own
// extension endpoints are in parley.ts.
import { admin, Client } from '@botpress/client'
import { baseURL, session } from './session'

export type AdminClient = admin.Client

// The client's own ClientInputs/ClientOutputs go through a helper type that
// names Node's Buffer, which a browser build does not have; these read the
// operations' signatures directly.
type Operation = {
  [K in keyof AdminClient]: AdminClient[K] extends (input: never) => Promise<unknown> ? K : never
}[keyof AdminClient]
export type Inputs = { [K in Operation]: Parameters<AdminClient[K]>[0] }
export type Outputs = { [K in Operation]: Awaited<ReturnType<AdminClient[K]>> }

export type Bot = Outputs['getBot']['bot']
export type BotSummary = Outputs['listBots']['bots'][number]
export type Workspace = Outputs['listWorkspaces']['workspaces'][number]
export type LogLine = Outputs['getBotLogs']['logs'][number]
export type Issue = Outputs['listBotIssues']['issues'][number]
export type Member = Outputs['listWorkspaceMembers']['members'][number]
export type Role = Member['role']
export type Pat = Outputs['listPersonalAccessTokens']['pats'][number]
export type NewPat = Outputs['createPersonalAccessToken']['pat']

export const roles: readonly Role[] = ['viewer', 'billing', 'developer', 'manager', 'administrator', 'owner']

// The bot-scoped client (the Runtime API's, with x-bot-id): the Files and
// Tables families, called with the signed-in member's token.
export type BotClient = Client
type BotOperation = {
  [K in keyof BotClient]: BotClient[K] extends (input: never) => Promise<unknown> ? K : never
}[keyof BotClient]
export type BotInputs = { [K in BotOperation]: Parameters<BotClient[K]>[0] }
export type BotOutputs = { [K in BotOperation]: Awaited<ReturnType<BotClient[K]>> }

export type FileInfo = BotOutputs['getFile']['file']
export type Passage = BotOutputs['listFilePassages']['passages'][number]
export type SearchHit = BotOutputs['searchFiles']['passages'][number]
export type KnowledgeBase = BotOutputs['listKnowledgeBases']['knowledgeBases'][number]
export type Table = BotOutputs['getTable']['table']
export type TableRow = BotOutputs['findTableRows']['rows'][number]
/** A job as Parley sends it: the client's, plus why a failed one failed. */
export type TableJob = BotOutputs['getTableJobs']['jobs'][number] & { error?: string }
export type RowFilter = NonNullable<BotInputs['findTableRows']['filter']>

const clients = new Map<string, AdminClient>()
const botClients = new Map<string, BotClient>()

/** A client acting on one bot (x-bot-id) with the signed-in token. */
export function botClient(botId: string, token = session.token): BotClient {
  const key = `${token}\n${botId}`
  let c = botClients.get(key)
  if (!c) {
    c = new Client({ apiUrl: baseURL, token, botId })
    botClients.set(key, c)
  }
  return c
}


/**
 * A client for the signed-in token (or the given one), scoped to a
 * workspace when one is given (the x-workspace-id header). Clients are
 * reused per token and workspace.
 */
export function adminClient(workspaceId?: string, token = session.token): AdminClient {
  const key = `${token}\n${workspaceId ?? ''}`
  let c = clients.get(key)
  if (!c) {
    c = new admin.Client({ apiUrl: baseURL, token, ...(workspaceId ? { workspaceId } : {}) })
    clients.set(key, c)
  }
  return c
}

/** Forgets the clients (at sign-out: they hold the token). */
export function forgetClients() {
  clients.clear()
  botClients.clear()
}
