// The dashboard's API client: the official @botpress/client (admin), pointed
// at this Parley, for every Admin API operation it has. Each click is thus
// also a check that Parley speaks the client's protocol. Parley's own
// extension endpoints are in parley.ts.
import { admin, files, tables } from '@botpress/client'
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

// The bot-scoped clients (the Runtime API's credentials: x-bot-id and the
// signed-in member's token): the client's Files and Tables families, each
// on its own so that the dashboard does not carry the whole runtime client.
export type FilesClient = files.Client
export type TablesClient = tables.Client
type Ops<C> = { [K in keyof C]: C[K] extends (input: never) => Promise<unknown> ? K : never }[keyof C]
type In<C> = { [K in Ops<C>]: C[K] extends (input: infer I) => Promise<unknown> ? I : never }
type Out<C> = { [K in Ops<C>]: C[K] extends (input: never) => Promise<infer O> ? O : never }
export type BotInputs = In<FilesClient> & In<TablesClient>
export type BotOutputs = Out<FilesClient> & Out<TablesClient>

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
const filesClients = new Map<string, FilesClient>()
const tablesClients = new Map<string, TablesClient>()

/** The Files API client for one bot (x-bot-id), with the signed-in token. */
export function filesClient(botId: string, token = session.token): FilesClient {
  const key = `${token}\n${botId}`
  let c = filesClients.get(key)
  if (!c) {
    c = new files.Client({ apiUrl: baseURL, token, botId })
    filesClients.set(key, c)
  }
  return c
}

/** The Tables API client for one bot (x-bot-id), with the signed-in token. */
export function tablesClient(botId: string, token = session.token): TablesClient {
  const key = `${token}\n${botId}`
  let c = tablesClients.get(key)
  if (!c) {
    c = new tables.Client({ apiUrl: baseURL, token, botId })
    tablesClients.set(key, c)
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
  filesClients.clear()
  tablesClients.clear()
}
