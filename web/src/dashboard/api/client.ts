// The dashboard's API client: the official @botpress/client (admin), pointed
// at this Parley, for every Admin API operation it has. Each click is thus
// also a check that Parley speaks the client's protocol. Parley's own
// extension endpoints are in parley.ts.
import { admin } from '@botpress/client'
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

const clients = new Map<string, AdminClient>()

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
}
