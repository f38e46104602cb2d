// Parley's support operations (docs/dashboard.md): human handoff and the
// analytics series. getBotAnalytics itself goes through @botpress/client
// (client.ts); the rest is Parley's, called here with the Admin API's
// credentials and error body (errors become the client's ApiError classes).
import { errorFrom } from '@botpress/client'
import { baseURL, session } from './session'
import type { ChatMessage, Payload } from './parley'

export type Handoff = {
  conversationId: string
  status: 'waiting' | 'active'
  reason: string
  requestedBy: string
  requestedAt: string
  /** How long it waited for an operator (until now, or until taken). */
  waitingMs: number
  takenAt: string | null
  agent: { accountId: string; userId: string; name: string } | null
}

export type SeriesRecord = {
  startDateTimeUtc: string
  endDateTimeUtc: string
  messagesIn: number
  messagesOut: number
  agentMessages: number
  users: number
  newUsers: number
  returningUsers: number
  conversations: number
  newConversations: number
  turns: number
  turnFailures: number
  turnTimeP50Ms: number
  turnTimeP95Ms: number
}

export type Interval = 'hour' | 'day'

async function call<T>(method: string, path: string, ws: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Authorization: `Bearer ${session.token}`, 'x-workspace-id': ws }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(`${baseURL}/v1/admin${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      signal: signal ?? null,
    })
  } catch (e) {
    if (e instanceof Error && e.name === 'AbortError') throw e
    throw errorFrom(Object.assign(new Error('Network Error'), { code: 'ERR_NETWORK' }))
  }
  const text = await res.text()
  let out: unknown
  try {
    out = text ? JSON.parse(text) : {}
  } catch {
    out = { message: text }
  }
  if (!res.ok) throw errorFrom(out)
  return out as T
}

const bot = (botId: string) => `/bots/${encodeURIComponent(botId)}`
const handoffPath = (botId: string, conversationId: string) =>
  `${bot(botId)}/conversations/${encodeURIComponent(conversationId)}/handoff`

export const support = {
  /** GET /v1/admin/bots/{id}/handoffs: longest waiting first. */
  listHandoffs: (ws: string, botId: string, status: 'waiting' | 'active' | '', signal?: AbortSignal) =>
    call<{ handoffs: Handoff[] }>('GET', `${bot(botId)}/handoffs?pageSize=100${status ? `&status=${status}` : ''}`, ws, undefined, signal),
  /** The conversation's handoff, or null when the bot answers it. */
  getHandoff: async (ws: string, botId: string, conversationId: string, signal?: AbortSignal) =>
    (await call<{ handoff: Handoff | null }>('GET', handoffPath(botId, conversationId), ws, undefined, signal)).handoff,
  takeOver: (ws: string, botId: string, conversationId: string) =>
    call<{ handoff: Handoff }>('POST', handoffPath(botId, conversationId), ws, {}),
  reply: (ws: string, botId: string, conversationId: string, payload: Payload) =>
    call<{ message: ChatMessage }>('POST', `${handoffPath(botId, conversationId)}/messages`, ws, { payload }),
  handBack: (ws: string, botId: string, conversationId: string) => call<object>('DELETE', handoffPath(botId, conversationId), ws),
  /** GET /v1/admin/bots/{id}/analytics/series: every period of the range. */
  series: (ws: string, botId: string, startDate: string, endDate: string, interval: Interval, signal?: AbortSignal) =>
    call<{ interval: Interval; records: SeriesRecord[] }>(
      'GET',
      `${bot(botId)}/analytics/series?${new URLSearchParams({ startDate, endDate, interval }).toString()}`,
      ws,
      undefined,
      signal,
    ),
}
