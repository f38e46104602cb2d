// Parley's own Admin API operations, which @botpress/client does not have:
// a bot's conversations and their messages (docs/dashboard.md); and the
// two plain HTTP steps around the client's Files and Tables calls (a file
// upload to its upload URL, a table export's content). Same
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

export type Conversation = {
  id: string
  ownerId: string
  createdAt: string
  updatedAt: string
  messageCount: number
  lastMessage?: ChatMessage
}

export type ListConversationsResponse = { conversations: Conversation[]; meta: { nextToken?: string } }
export type ListMessagesResponse = {
  messages: ChatMessage[]
  participants: { id: string; name?: string; createdAt: string; updatedAt: string }[]
  meta: { nextToken?: string }
}

/**
 * One HTTP call with the client's error reading: a network failure is
 * the client's Unknown network error, an error body its ApiError class.
 */
async function send(url: string, init: RequestInit): Promise<Response> {
  let res: Response
  try {
    res = await fetch(url, init)
  } catch (e) {
    if (e instanceof Error && e.name === 'AbortError') throw e
    throw errorFrom(Object.assign(new Error('Network Error'), { code: 'ERR_NETWORK' }))
  }
  if (!res.ok) {
    const text = await res.text()
    let body: unknown
    try {
      body = text ? JSON.parse(text) : {}
    } catch {
      body = { message: text || `HTTP ${res.status}` }
    }
    throw errorFrom(body)
  }
  return res
}

async function get<T>(path: string, workspaceId: string, signal?: AbortSignal): Promise<T> {
  const res = await send(`${baseURL}/v1/admin${path}`, {
    headers: { Authorization: `Bearer ${session.token}`, 'x-workspace-id': workspaceId },
    signal: signal ?? null,
  })
  const text = await res.text()
  return (text ? JSON.parse(text) : {}) as T
}

const q = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()

export const parley = {
  /** GET /v1/admin/bots/{id}/bot-json: a workflow bot's deployed document. */
  getBotJson: (ws: string, botId: string, signal?: AbortSignal) =>
    get<{ botJson: unknown }>(`/bots/${encodeURIComponent(botId)}/bot-json`, ws, signal),
  /** GET /v1/admin/bots/{id}/conversations: newest first; search: in ids, user names and message texts. */
  listConversations: (ws: string, botId: string, pageSize: number, search: string, signal?: AbortSignal) =>
    get<ListConversationsResponse>(
      `/bots/${encodeURIComponent(botId)}/conversations?${q(search ? { pageSize, search } : { pageSize })}`,
      ws,
      signal,
    ),
  /** GET /v1/admin/bots/{id}/conversations/{conversationId}/messages: newest first. */
  listMessages: (ws: string, botId: string, conversationId: string, pageSize: number, signal?: AbortSignal) =>
    get<ListMessagesResponse>(
      `/bots/${encodeURIComponent(botId)}/conversations/${encodeURIComponent(conversationId)}/messages?${q({ pageSize })}`,
      ws,
      signal,
    ),
  /**
   * The content of a table export (exportTable's job): Parley keeps it
   * with the job, GET /v1/tables/{table}/jobs/{job}/output (docs/tables-api.md).
   */
  exportOutput: async (botId: string, table: string, jobId: string): Promise<string> => {
    const res = await send(`${baseURL}/v1/tables/${encodeURIComponent(table)}/jobs/${encodeURIComponent(jobId)}/output`, {
      headers: { Authorization: `Bearer ${session.token}`, 'x-bot-id': botId },
    })
    return res.text()
  },
  /**
   * PUT a file's content to the upload URL upsertFile returned (the
   * client's uploadFile does the same; this one streams a browser File).
   */
  upload: async (uploadUrl: string, content: Blob, contentType: string): Promise<void> => {
    await send(uploadUrl, { method: 'PUT', body: content, headers: { 'Content-Type': contentType } })
  },
}
