// The dashboard's only server: Parley's Admin API (/v1/admin), with the
// token the user signed in with. Everything here can be scripted with curl
// or @botpress/client (see docs/dashboard.md).

export class ApiError extends Error {
  status: number
  type: string
  id: string
  constructor(status: number, type: string, message: string, id: string) {
    super(message)
    this.status = status
    this.type = type
    this.id = id
  }
}

const TOKEN_KEY = 'parley.token'

export const session = {
  get token(): string {
    return localStorage.getItem(TOKEN_KEY) ?? ''
  },
  set token(v: string) {
    if (v) localStorage.setItem(TOKEN_KEY, v)
    else localStorage.removeItem(TOKEN_KEY)
  },
}

// The API base: the dashboard is served by the same Parley at the root of
// its public URL (the <base href> the server writes).
export const baseURL = new URL('.', document.baseURI).href.replace(/\/$/, '')

type Opts = { method?: string; body?: unknown; workspace?: string; token?: string; signal?: AbortSignal }

export async function api<T = any>(path: string, opts: Opts = {}): Promise<T> {
  const headers: Record<string, string> = { Authorization: `Bearer ${opts.token ?? session.token}` }
  if (opts.workspace) headers['x-workspace-id'] = opts.workspace
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(`${baseURL}/v1/admin${path}`, {
      method: opts.method ?? 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
    })
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e
    throw new ApiError(0, 'Network', 'Parley could not be reached. Check your connection and try again.', '')
  }
  const text = await res.text()
  let body: any = {}
  try {
    body = text ? JSON.parse(text) : {}
  } catch {
    body = { message: text }
  }
  if (!res.ok) {
    throw new ApiError(res.status, body.type ?? 'Unknown', body.message ?? `Request failed (${res.status})`, body.id ?? '')
  }
  return body as T
}

export type Workspace = { id: string; name: string; botCount: number }
export type BotSummary = { id: string; name: string; createdAt: string; updatedAt: string; deployedAt?: string }
export type Integration = {
  enabled: boolean
  name: string
  webhookUrl: string
  webhookId: string
  configuration: Record<string, unknown>
}
export type Bot = BotSummary & {
  description?: string
  integrations: Record<string, Integration>
  tags: Record<string, string>
  configuration: { data: Record<string, unknown>; schema: Record<string, unknown> }
  states: Record<string, unknown>
  events: Record<string, unknown>
  actions: Record<string, unknown>
  recurringEvents: Record<string, unknown>
  user: unknown
  conversation: unknown
  message: unknown
}
export type ChatMessage = {
  id: string
  createdAt: string
  userId: string
  conversationId: string
  payload: Record<string, any>
  metadata?: Record<string, unknown>
}
export type Conversation = { id: string; ownerId: string; createdAt: string; updatedAt: string; lastMessage?: ChatMessage }
export type LogLine = { timestamp: string; level: string; message: string; conversationId?: string; userId?: string }
export type Issue = { id: string; code: string; title: string; description: string; eventsCount: number; lastSeenAt: string; category: string }
export type Member = { id: string; email: string; role: string; displayName?: string; createdAt: string }
export type Pat = { id: string; note: string; createdAt: string; value?: string }

export const roles = ['viewer', 'billing', 'developer', 'manager', 'administrator', 'owner']

/** A random secret for a rotated chat encryption key (160 bits, base32). */
export function randomKey(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return Array.from(bytes, (b) => alphabet[b % 32]).join('')
}

/** The text a payload shows in transcripts and previews. */
export function preview(p: Record<string, any> | undefined): string {
  if (!p) return ''
  switch (p.type) {
    case 'text':
      return p.text ?? ''
    case 'markdown':
      return p.markdown ?? ''
    case 'choice':
    case 'dropdown':
      return `${p.text ?? ''} [${(p.options ?? []).map((o: any) => o.label).join(' | ')}]`
    case 'image':
      return `🖼 ${p.imageUrl}`
    case 'file':
      return `📎 ${p.title ?? p.fileUrl}`
    case 'audio':
      return `🔊 ${p.audioUrl}`
    case 'video':
      return `🎬 ${p.videoUrl}`
    case 'card':
      return `[card] ${p.title}`
    case 'carousel':
      return `[carousel of ${(p.items ?? []).length} cards]`
    case 'location':
      return `📍 ${p.title ?? p.address ?? `${p.latitude}, ${p.longitude}`}`
    case 'bloc':
      return (p.items ?? []).map((i: any) => preview(i.payload ?? i)).join(' · ')
    default:
      return `[${p.type}]`
  }
}

export function when(iso?: string): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}
