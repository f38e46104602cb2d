// Parley's own Admin API operations, which @botpress/client does not have:
// a bot's conversations and their messages (docs/dashboard.md). Same
// credentials, pagination and error body as the Admin API; errors are
// turned into the client's ApiError classes so that the dashboard reads
// them all one way.
import { errorFrom } from '@botpress/client'
import { baseURL, session } from './session'

export type Payload = Record<string, unknown>

export type ChatMessage = {
  id: string
  createdAt: string
  userId: string
  conversationId: string
  payload: Payload
  metadata?: Record<string, unknown>
}

export type Conversation = { id: string; ownerId: string; createdAt: string; updatedAt: string; lastMessage?: ChatMessage }

export type ListConversationsResponse = { conversations: Conversation[]; meta: { nextToken?: string } }
export type ListMessagesResponse = {
  messages: ChatMessage[]
  participants: { id: string; name?: string; createdAt: string; updatedAt: string }[]
  meta: { nextToken?: string }
}

async function get<T>(path: string, workspaceId: string, signal?: AbortSignal): Promise<T> {
  let res: Response
  try {
    res = await fetch(`${baseURL}/v1/admin${path}`, {
      headers: { Authorization: `Bearer ${session.token}`, 'x-workspace-id': workspaceId },
      signal: signal ?? null,
    })
  } catch (e) {
    if (e instanceof Error && e.name === 'AbortError') throw e
    throw errorFrom(Object.assign(new Error('Network Error'), { code: 'ERR_NETWORK' }))
  }
  const text = await res.text()
  let body: unknown
  try {
    body = text ? JSON.parse(text) : {}
  } catch {
    body = { message: text }
  }
  if (!res.ok) throw errorFrom(body)
  return body as T
}

const q = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()

export const parley = {
  /** GET /v1/admin/bots/{id}/bot-json: a workflow bot's deployed document. */
  getBotJson: (ws: string, botId: string, signal?: AbortSignal) =>
    get<{ botJson: unknown }>(`/bots/${encodeURIComponent(botId)}/bot-json`, ws, signal),
  /** GET /v1/admin/bots/{id}/conversations: newest first. */
  listConversations: (ws: string, botId: string, pageSize: number, signal?: AbortSignal) =>
    get<ListConversationsResponse>(`/bots/${encodeURIComponent(botId)}/conversations?${q({ pageSize })}`, ws, signal),
  /** GET /v1/admin/bots/{id}/conversations/{conversationId}/messages: newest first. */
  listMessages: (ws: string, botId: string, conversationId: string, pageSize: number, signal?: AbortSignal) =>
    get<ListMessagesResponse>(
      `/bots/${encodeURIComponent(botId)}/conversations/${encodeURIComponent(conversationId)}/messages?${q({ pageSize })}`,
      ws,
      signal,
    ),
}
