import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import {
  api,
  ApiError,
  randomKey,
  preview,
  roles,
  session,
  when,
  type Bot,
  type BotSummary,
  type ChatMessage,
  type Conversation,
  type Issue,
  type LogLine,
  type Member,
  type Pat,
  type Workspace,
} from './api'

// ---------------------------------------------------------------- routing

function useHash(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent)
  const [parts, setParts] = useState(read)
  useEffect(() => {
    const on = () => setParts(read())
    window.addEventListener('hashchange', on)
    return () => window.removeEventListener('hashchange', on)
  }, [])
  return parts
}

const go = (path: string) => {
  location.hash = '#/' + path
}

// ---------------------------------------------------------------- helpers

type Async<T> = { data?: T; error?: Error; loading: boolean; reload: () => void }

function useAsync<T>(fn: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    const ctl = new AbortController()
    setState((s) => ({ data: s.data, loading: true }))
    fn(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, loading: false }),
      (error) => !ctl.signal.aborted && setState({ error, loading: false }),
    )
    return () => ctl.abort()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick])
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) }
}

function Loading({ what }: { what: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  )
}

function ErrorBox({ error, retry }: { error: Error; retry?: () => void }) {
  const e = error as ApiError
  return (
    <div className="error" role="alert">
      <p>
        <strong>{e.type && e.type !== 'Unknown' ? e.type : 'Error'}:</strong> {e.message}
      </p>
      {retry && (
        <button type="button" className="secondary" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  )
}

function CopyField({ label, value, multiline }: { label: string; value: string; multiline?: boolean }) {
  const [copied, setCopied] = useState(false)
  const id = 'copy-' + label.toLowerCase().replace(/[^a-z0-9]+/g, '-')
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value)
      setCopied(true)
      setTimeout(() => setCopied(false), 1500)
    } catch {
      ;(document.getElementById(id) as HTMLInputElement | null)?.select()
    }
  }
  return (
    <div className="copy-field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        {multiline ? (
          <textarea id={id} readOnly value={value} rows={3} onFocus={(e) => e.currentTarget.select()} />
        ) : (
          <input id={id} readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
        )}
        <button type="button" className="secondary" onClick={copy} aria-label={`Copy ${label}`}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  )
}

/** A form submit with a busy state and an error line. */
function useAction() {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Error>()
  const run = async (fn: () => Promise<unknown>) => {
    setBusy(true)
    setError(undefined)
    try {
      await fn()
      return true
    } catch (e) {
      setError(e as Error)
      return false
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, run, setError }
}

// ---------------------------------------------------------------- sign in

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('')
  const { busy, error, run } = useAction()
  const submit = (e: FormEvent) => {
    e.preventDefault()
    run(async () => {
      await api('/account/me', { token: token.trim() })
      session.token = token.trim()
      onSignedIn()
    })
  }
  return (
    <main className="signin">
      <form onSubmit={submit} className="card" aria-labelledby="signin-title">
        <div className="brand big">
          <Logo /> Parley
        </div>
        <h1 id="signin-title">Sign in</h1>
        <p className="muted">
          Paste an access token: the admin token printed at first start (also in <code>parley-data/admin-token</code>), or
          one made with <code>parley token create</code>.
        </p>
        <label htmlFor="token">Access token</label>
        <input
          id="token"
          type="password"
          autoComplete="current-password"
          value={token}
          onChange={(e) => setToken(e.target.value)}
          required
          autoFocus
        />
        {error && <ErrorBox error={error.message.includes('invalid token') ? new Error('This token is not valid.') : error} />}
        <button type="submit" disabled={busy || !token.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}

function Logo() {
  return (
    <svg aria-hidden="true" width="26" height="26" viewBox="0 0 32 32">
      <rect width="32" height="32" rx="8" fill="#4f46e5" />
      <path d="M9 10h14a3 3 0 0 1 3 3v6a3 3 0 0 1-3 3h-7l-5 4v-4H9a3 3 0 0 1-3-3v-6a3 3 0 0 1 3-3z" fill="#fff" />
    </svg>
  )
}

// ---------------------------------------------------------------- app shell

export function App() {
  const [signedIn, setSignedIn] = useState(!!session.token)
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />
  return (
    <Shell
      onSignOut={() => {
        session.token = ''
        location.hash = ''
        setSignedIn(false)
      }}
    />
  )
}

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const parts = useHash()
  const workspaces = useAsync((signal) => api<{ workspaces: Workspace[] }>('/workspaces', { signal }), [])
  const me = useAsync((signal) => api<{ account: { email: string } }>('/account/me', { signal }), [])
  const list = workspaces.data?.workspaces ?? []
  const ws = parts[0] === 'ws' ? parts[1] : undefined
  const section = parts[0] === 'ws' ? parts[2] ?? 'bots' : parts[0]

  useEffect(() => {
    if (!ws && parts[0] !== 'tokens' && list.length > 0) go(`ws/${list[0].id}/bots`)
  }, [ws, parts, list])

  useEffect(() => {
    const e = workspaces.error as ApiError | undefined
    if (e?.status === 401) onSignOut()
  }, [workspaces.error, onSignOut])

  const nav = (href: string, label: string, active: boolean) => (
    <a href={href} aria-current={active ? 'page' : undefined} className={active ? 'active' : undefined}>
      {label}
    </a>
  )
  const wsID = ws ?? list[0]?.id
  return (
    <div className="shell">
      <a className="skip" href="#content" onClick={(e) => { e.preventDefault(); document.getElementById('content')?.focus() }}>
        Skip to content
      </a>
      <header className="topbar">
        <a className="brand" href="#/" aria-label="Parley home">
          <Logo /> <span className="brand-text">Parley</span>
        </a>
        {list.length > 0 && (
          <div className="ws-select">
            <label htmlFor="workspace" className="sr-only">
              Workspace
            </label>
            <select id="workspace" value={wsID ?? ''} onChange={(e) => go(`ws/${e.target.value}/bots`)}>
              {list.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </div>
        )}
        <nav aria-label="Main">
          {wsID && nav(`#/ws/${wsID}/bots`, 'Bots', section === 'bots')}
          {wsID && nav(`#/ws/${wsID}/members`, 'Members', section === 'members')}
          {nav('#/tokens', 'Tokens', section === 'tokens')}
        </nav>
        <div className="account">
          <span className="muted email">{me.data?.account?.email}</span>
          <button type="button" className="secondary" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        {workspaces.loading && !workspaces.data && <Loading what="workspaces" />}
        {workspaces.error && <ErrorBox error={workspaces.error} retry={workspaces.reload} />}
        {section === 'tokens' && <TokensPage />}
        {ws && section === 'bots' && !parts[3] && <BotsPage ws={ws} />}
        {ws && section === 'bots' && parts[3] && <BotPage ws={ws} botId={parts[3]} tab={parts[4] ?? 'overview'} sub={parts[5]} />}
        {ws && section === 'members' && <MembersPage ws={ws} />}
        {!workspaces.loading && list.length === 0 && !workspaces.error && section !== 'tokens' && (
          <p>You are not a member of any workspace yet.</p>
        )}
      </main>
    </div>
  )
}

// ---------------------------------------------------------------- bots

function BotsPage({ ws }: { ws: string }) {
  const bots = useAsync((signal) => api<{ bots: BotSummary[] }>('/bots', { workspace: ws, signal }), [ws])
  const [name, setName] = useState('')
  const create = useAction()
  const submit = (e: FormEvent) => {
    e.preventDefault()
    create.run(async () => {
      const { bot } = await api<{ bot: Bot }>('/bots', { method: 'POST', workspace: ws, body: { name: name.trim() } })
      setName('')
      go(`ws/${ws}/bots/${bot.id}/code`)
    })
  }
  return (
    <section aria-labelledby="bots-title">
      <h1 id="bots-title">Bots</h1>
      <form className="inline-form card" onSubmit={submit}>
        <div className="field">
          <label htmlFor="new-bot-name">New bot name</label>
          <input id="new-bot-name" value={name} onChange={(e) => setName(e.target.value)} placeholder="support-bot" required />
        </div>
        <button type="submit" disabled={create.busy || !name.trim()}>
          {create.busy ? 'Creating…' : 'Create bot'}
        </button>
        {create.error && <ErrorBox error={create.error} />}
      </form>
      {bots.loading && !bots.data && <Loading what="bots" />}
      {bots.error && <ErrorBox error={bots.error} retry={bots.reload} />}
      {bots.data && bots.data.bots.length === 0 && <p className="empty">No bots yet. Create your first one above.</p>}
      {bots.data && bots.data.bots.length > 0 && (
        <ul className="bot-list">
          {bots.data.bots.map((b) => (
            <li key={b.id}>
              <a href={`#/ws/${ws}/bots/${b.id}`} className="bot-card">
                <span className="bot-name">{b.name}</span>
                <span className="muted">
                  {b.deployedAt ? `Deployed ${when(b.deployedAt)}` : 'Not deployed'} · updated {when(b.updatedAt)}
                </span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

const botTabs: [string, string][] = [
  ['overview', 'Overview'],
  ['code', 'Code'],
  ['json', 'Bot JSON'],
  ['conversations', 'Conversations'],
  ['logs', 'Logs'],
  ['issues', 'Issues'],
]

function BotPage({ ws, botId, tab, sub }: { ws: string; botId: string; tab: string; sub?: string }) {
  const bot = useAsync((signal) => api<{ bot: Bot }>(`/bots/${botId}`, { workspace: ws, signal }), [ws, botId])
  const b = bot.data?.bot
  return (
    <section aria-labelledby="bot-title">
      <p className="crumbs">
        <a href={`#/ws/${ws}/bots`}>Bots</a> <span aria-hidden="true">/</span>
      </p>
      <h1 id="bot-title">{b?.name ?? 'Bot'}</h1>
      <nav className="tabs" aria-label="Bot sections">
        {botTabs.map(([id, label]) => (
          <a key={id} href={`#/ws/${ws}/bots/${botId}/${id}`} aria-current={tab === id ? 'page' : undefined} className={tab === id ? 'active' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {bot.loading && !b && <Loading what="the bot" />}
      {bot.error && <ErrorBox error={bot.error} retry={bot.reload} />}
      {b && tab === 'overview' && <Overview ws={ws} bot={b} reload={bot.reload} />}
      {b && tab === 'code' && <CodeTab ws={ws} bot={b} reload={bot.reload} />}
      {b && tab === 'json' && <JsonTab ws={ws} bot={b} reload={bot.reload} />}
      {b && tab === 'conversations' && !sub && <ConversationsTab ws={ws} bot={b} />}
      {b && tab === 'conversations' && sub && <Transcript ws={ws} bot={b} conversationId={sub} />}
      {b && tab === 'logs' && <LogsTab ws={ws} bot={b} />}
      {b && tab === 'issues' && <IssuesTab ws={ws} bot={b} />}
    </section>
  )
}

function publicBase(bot: Bot): string {
  const wc = bot.integrations.webchat
  if (wc?.webhookUrl) return wc.webhookUrl.replace(/\/webchat\/[^/]+$/, '')
  return location.origin
}

function Overview({ ws, bot, reload }: { ws: string; bot: Bot; reload: () => void }) {
  const [name, setName] = useState(bot.name)
  const rename = useAction()
  const del = useAction()
  const rotate = useAction()
  const [confirmDelete, setConfirmDelete] = useState(false)
  const [confirmRotate, setConfirmRotate] = useState(false)
  const [showKey, setShowKey] = useState(false)
  const base = publicBase(bot)
  const chat = bot.integrations.chat
  const wc = bot.integrations.webchat
  const page = wc ? `${base}/w/${wc.webhookId}` : ''
  const snippet = wc ? `<script src="${base}/webchat.js" data-client-id="${wc.webhookId}" defer></script>` : ''
  return (
    <div className="grid">
      <div className="card">
        <h2>Settings</h2>
        <form
          className="inline-form"
          onSubmit={(e) => {
            e.preventDefault()
            rename.run(async () => {
              await api(`/bots/${bot.id}`, { method: 'PUT', workspace: ws, body: { name: name.trim() } })
              reload()
            })
          }}
        >
          <div className="field">
            <label htmlFor="bot-name">Name</label>
            <input id="bot-name" value={name} onChange={(e) => setName(e.target.value)} required />
          </div>
          <button type="submit" disabled={rename.busy || !name.trim() || name.trim() === bot.name}>
            {rename.busy ? 'Saving…' : 'Rename'}
          </button>
        </form>
        {rename.error && <ErrorBox error={rename.error} />}
        <dl className="facts">
          <dt>Bot id</dt>
          <dd>
            <code>{bot.id}</code>
          </dd>
          <dt>Created</dt>
          <dd>{when(bot.createdAt)}</dd>
          <dt>Deployed</dt>
          <dd>{bot.deployedAt ? when(bot.deployedAt) : 'never'}</dd>
        </dl>
        <div className="danger">
          {!confirmDelete ? (
            <button type="button" className="danger-btn" onClick={() => setConfirmDelete(true)}>
              Delete bot…
            </button>
          ) : (
            <div role="group" aria-label="Confirm deletion">
              <p>
                Delete <strong>{bot.name}</strong> with all its conversations, logs and files? This cannot be undone.
              </p>
              <button
                type="button"
                className="danger-btn"
                disabled={del.busy}
                onClick={() =>
                  del.run(async () => {
                    await api(`/bots/${bot.id}`, { method: 'DELETE', workspace: ws })
                    go(`ws/${ws}/bots`)
                  })
                }
              >
                {del.busy ? 'Deleting…' : 'Yes, delete it'}
              </button>{' '}
              <button type="button" className="secondary" onClick={() => setConfirmDelete(false)} autoFocus>
                Cancel
              </button>
            </div>
          )}
          {del.error && <ErrorBox error={del.error} />}
        </div>
      </div>

      {wc && (
        <div className="card">
          <h2>Webchat</h2>
          <p className="muted">A hosted chat page for this bot, and a snippet that puts a chat button on any website.</p>
          <p>
            <a href={page} target="_blank" rel="noopener" className="button-link">
              Open the hosted chat page
            </a>
          </p>
          <CopyField label="Hosted page link" value={page} />
          <CopyField label="Embed snippet" value={snippet} multiline />
          <p className="muted small">
            Client id for the React component (<code>@botpress/webchat</code>): <code>{wc.webhookId}</code>, with{' '}
            <code>apiUrl="{base}/webchat"</code>.
          </p>
        </div>
      )}

      {chat && (
        <div className="card">
          <h2>Chat API</h2>
          <p className="muted">For custom channels with <code>@botpress/chat</code>.</p>
          <CopyField label="Webhook URL" value={chat.webhookUrl} />
          <div className="copy-field">
            <span className="label">Encryption key</span>
            <div className="copy-row">
              <code className="secret" aria-live="polite">
                {showKey ? String(chat.configuration.encryptionKey ?? '') : '••••••••••••••••'}
              </code>
              <button type="button" className="secondary" onClick={() => setShowKey((v) => !v)} aria-pressed={showKey}>
                {showKey ? 'Hide' : 'Show'}
              </button>
            </div>
          </div>
          {!confirmRotate ? (
            <button type="button" className="secondary" onClick={() => setConfirmRotate(true)}>
              Rotate encryption key…
            </button>
          ) : (
            <div role="group" aria-label="Confirm key rotation">
              <p>Every user key signed with the old key stops working (webchat visitors start a new conversation).</p>
              <button
                type="button"
                disabled={rotate.busy}
                onClick={() =>
                  rotate.run(async () => {
                    await api(`/bots/${bot.id}`, {
                      method: 'PUT',
                      workspace: ws,
                      body: { integrations: { chat: { configuration: { encryptionKey: randomKey() } } } },
                    })
                    setConfirmRotate(false)
                    reload()
                  })
                }
              >
                {rotate.busy ? 'Rotating…' : 'Rotate key'}
              </button>{' '}
              <button type="button" className="secondary" onClick={() => setConfirmRotate(false)}>
                Cancel
              </button>
            </div>
          )}
          {rotate.error && <ErrorBox error={rotate.error} />}
        </div>
      )}
    </div>
  )
}

const sampleCode = `// Runs on every incoming message.
bot.on.message('*', async ({ message, client }) => {
  console.log('got', message.payload.text)
  await client.createMessage({
    conversationId: message.conversationId,
    payload: { type: 'text', text: 'echo: ' + message.payload.text },
  })
})
`

function CodeTab({ ws, bot, reload }: { ws: string; bot: Bot; reload: () => void }) {
  const current = useAsync((signal) => fetchCode(ws, bot.id, signal), [ws, bot.id])
  const [code, setCode] = useState<string>()
  const deploy = useAction()
  const [deployed, setDeployed] = useState(false)
  useEffect(() => {
    if (current.data !== undefined && code === undefined) setCode(current.data || sampleCode)
  }, [current.data, code])
  if (current.loading && code === undefined) return <Loading what="the code" />
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault()
        setDeployed(false)
        deploy.run(async () => {
          await api(`/bots/${bot.id}`, { method: 'PUT', workspace: ws, body: { code } })
          setDeployed(true)
          reload()
        })
      }}
    >
      <h2>
        <label htmlFor="code">Bot code</label>
      </h2>
      <p className="muted">
        JavaScript run by Parley for each event: register handlers on <code>bot</code>, answer with <code>client</code>.
        Deploying makes a new version live at once.
      </p>
      <textarea
        id="code"
        className="code"
        spellCheck={false}
        value={code ?? ''}
        onChange={(e) => setCode(e.target.value)}
        rows={18}
        onKeyDown={(e) => {
          if (e.key === 'Tab' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
            // Indent; Escape then Tab leaves the editor (keyboard users).
            if ((e.currentTarget as any)._escaped) return
            e.preventDefault()
            const t = e.currentTarget
            const s = t.selectionStart
            setCode(t.value.slice(0, s) + '  ' + t.value.slice(t.selectionEnd))
            requestAnimationFrame(() => t.setSelectionRange(s + 2, s + 2))
          }
          ;(e.currentTarget as any)._escaped = e.key === 'Escape'
        }}
        aria-describedby="code-help"
      />
      <p id="code-help" className="muted small">
        Tab indents; press Escape then Tab to move on.
      </p>
      <div className="actions">
        <button type="submit" disabled={deploy.busy}>
          {deploy.busy ? 'Deploying…' : 'Deploy'}
        </button>
        {deployed && (
          <span className="ok" role="status">
            Deployed ✓ — try it on the <a href={`${publicBase(bot)}/w/${bot.integrations.webchat?.webhookId}`} target="_blank" rel="noopener">hosted chat page</a>.
          </span>
        )}
      </div>
      {deploy.error && <ErrorBox error={deploy.error} />}
    </form>
  )
}

/** The deployed code: the newest version's. */
async function fetchCode(ws: string, botId: string, signal: AbortSignal): Promise<string> {
  const { versions } = await api<{ versions: { id: string }[] }>(`/bots/${botId}/versions`, { workspace: ws, signal })
  if (!versions?.length) return ''
  const { version } = await api<{ version: { code?: string } }>(`/bots/${botId}/versions/${versions[0].id}`, { workspace: ws, signal })
  return version?.code ?? ''
}

const editable = ['name', 'description', 'tags', 'configuration', 'states', 'events', 'recurringEvents', 'actions', 'user', 'conversation', 'message'] as const

function JsonTab({ ws, bot, reload }: { ws: string; bot: Bot; reload: () => void }) {
  const initial = JSON.stringify(Object.fromEntries(editable.map((k) => [k, (bot as any)[k]]).filter(([, v]) => v !== undefined)), null, 2)
  const [text, setText] = useState(initial)
  const save = useAction()
  const [saved, setSaved] = useState(false)
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault()
        setSaved(false)
        save.run(async () => {
          let body: unknown
          try {
            body = JSON.parse(text)
          } catch (err) {
            throw new Error('The JSON is not valid: ' + (err as Error).message)
          }
          await api(`/bots/${bot.id}`, { method: 'PUT', workspace: ws, body })
          setSaved(true)
          reload()
        })
      }}
    >
      <h2>
        <label htmlFor="bot-json">Bot JSON</label>
      </h2>
      <p className="muted">
        The bot's definition as the Admin API's <code>updateBot</code> takes it (maps are merged; <code>null</code> removes a key).
      </p>
      <textarea id="bot-json" className="code" spellCheck={false} rows={20} value={text} onChange={(e) => setText(e.target.value)} />
      <div className="actions">
        <button type="submit" disabled={save.busy}>
          {save.busy ? 'Saving…' : 'Save and deploy'}
        </button>
        {saved && (
          <span className="ok" role="status">
            Saved ✓
          </span>
        )}
      </div>
      {save.error && <ErrorBox error={save.error} />}
    </form>
  )
}

function usePoll(fn: () => void, ms: number, enabled = true) {
  const ref = useRef(fn)
  ref.current = fn
  useEffect(() => {
    if (!enabled) return
    const t = setInterval(() => document.visibilityState === 'visible' && ref.current(), ms)
    return () => clearInterval(t)
  }, [ms, enabled])
}

function ConversationsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const convs = useAsync(
    (signal) => api<{ conversations: Conversation[] }>(`/bots/${bot.id}/conversations?pageSize=50`, { workspace: ws, signal }),
    [ws, bot.id],
  )
  usePoll(convs.reload, 5000)
  return (
    <div className="card">
      <div className="card-head">
        <h2>Conversations</h2>
        <button type="button" className="secondary" onClick={convs.reload}>
          Refresh
        </button>
      </div>
      {convs.loading && !convs.data && <Loading what="conversations" />}
      {convs.error && <ErrorBox error={convs.error} retry={convs.reload} />}
      {convs.data && convs.data.conversations.length === 0 && <p className="empty">No conversations yet.</p>}
      {convs.data && convs.data.conversations.length > 0 && (
        <ul className="conv-list">
          {convs.data.conversations.map((c) => (
            <li key={c.id}>
              <a href={`#/ws/${ws}/bots/${bot.id}/conversations/${encodeURIComponent(c.id)}`}>
                <span className="conv-preview">{c.lastMessage ? preview(c.lastMessage.payload) : <em>no messages</em>}</span>
                <span className="muted small">
                  {when(c.updatedAt)} · <code>{c.id.slice(0, 8)}</code>
                </span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

function Transcript({ ws, bot, conversationId }: { ws: string; bot: Bot; conversationId: string }) {
  const msgs = useAsync(
    (signal) =>
      api<{ messages: ChatMessage[] }>(`/bots/${bot.id}/conversations/${encodeURIComponent(conversationId)}/messages?pageSize=100`, {
        workspace: ws,
        signal,
      }),
    [ws, bot.id, conversationId],
  )
  usePoll(msgs.reload, 3000)
  const list = [...(msgs.data?.messages ?? [])].reverse()
  return (
    <div className="card">
      <p className="crumbs">
        <a href={`#/ws/${ws}/bots/${bot.id}/conversations`}>← All conversations</a>
      </p>
      <h2>Transcript</h2>
      <p className="muted small">
        Conversation <code>{conversationId}</code>
      </p>
      {msgs.loading && !msgs.data && <Loading what="messages" />}
      {msgs.error && <ErrorBox error={msgs.error} retry={msgs.reload} />}
      {msgs.data && list.length === 0 && <p className="empty">No messages.</p>}
      <ol className="transcript" aria-label="Messages, oldest first">
        {list.map((m) => {
          const fromBot = m.userId === bot.id
          return (
            <li key={m.id} className={fromBot ? 'msg bot' : 'msg user'}>
              <span className="who">{fromBot ? bot.name : 'User'}</span>
              <span className="bubble">{preview(m.payload)}</span>
              <time className="muted small" dateTime={m.createdAt}>
                {when(m.createdAt)}
              </time>
            </li>
          )
        })}
      </ol>
    </div>
  )
}

function LogsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const [lines, setLines] = useState<LogLine[]>([])
  const [error, setError] = useState<Error>()
  const [live, setLive] = useState(true)
  const [loaded, setLoaded] = useState(false)
  const fetchLogs = useCallback(async () => {
    try {
      const since = new Date(Date.now() - 24 * 3600 * 1000).toISOString()
      const { logs } = await api<{ logs: LogLine[] }>(`/bots/${bot.id}/logs?timeStart=${encodeURIComponent(since)}&pageSize=100`, {
        workspace: ws,
      })
      setLines(logs ?? [])
      setError(undefined)
    } catch (e) {
      setError(e as Error)
    } finally {
      setLoaded(true)
    }
  }, [ws, bot.id])
  useEffect(() => {
    fetchLogs()
  }, [fetchLogs])
  usePoll(fetchLogs, 2000, live)
  return (
    <div className="card">
      <div className="card-head">
        <h2>Logs</h2>
        <label className="toggle">
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> Live tail
        </label>
      </div>
      <p className="muted small">The last 24 hours, newest first{live ? ', refreshed every 2 seconds' : ''}.</p>
      {!loaded && <Loading what="logs" />}
      {error && <ErrorBox error={error} retry={fetchLogs} />}
      {loaded && lines.length === 0 && !error && <p className="empty">No log lines yet. Talk to the bot, and its console.log lines show up here.</p>}
      {lines.length > 0 && (
        <div className="table-wrap">
          <table className="logs">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Level</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody aria-live={live ? 'polite' : undefined}>
              {lines.map((l, i) => (
                <tr key={l.timestamp + i} className={'lvl-' + l.level}>
                  <td className="nowrap">{new Date(l.timestamp).toLocaleTimeString()}</td>
                  <td>
                    <span className={'badge ' + l.level}>{l.level}</span>
                  </td>
                  <td className="logmsg">{l.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  )
}

function IssuesTab({ ws, bot }: { ws: string; bot: Bot }) {
  const issues = useAsync((signal) => api<{ issues: Issue[] }>(`/bots/${bot.id}/issues`, { workspace: ws, signal }), [ws, bot.id])
  const del = useAction()
  return (
    <div className="card">
      <div className="card-head">
        <h2>Issues</h2>
        <button type="button" className="secondary" onClick={issues.reload}>
          Refresh
        </button>
      </div>
      {issues.loading && !issues.data && <Loading what="issues" />}
      {issues.error && <ErrorBox error={issues.error} retry={issues.reload} />}
      {issues.data && issues.data.issues.length === 0 && <p className="empty">No issues: the bot's code has not failed.</p>}
      <ul className="issues">
        {issues.data?.issues.map((i) => (
          <li key={i.id}>
            <div>
              <strong>{i.title}</strong> <span className="badge error">{i.code}</span>
              <p className="issue-desc">{i.description}</p>
              <p className="muted small">
                {i.eventsCount} occurrence{i.eventsCount === 1 ? '' : 's'} · last {when(i.lastSeenAt)}
              </p>
            </div>
            <button
              type="button"
              className="secondary"
              disabled={del.busy}
              onClick={() => del.run(async () => {
                await api(`/bots/${bot.id}/issues/${i.id}`, { method: 'DELETE', workspace: ws })
                issues.reload()
              })}
            >
              Resolve
            </button>
          </li>
        ))}
      </ul>
      {del.error && <ErrorBox error={del.error} />}
    </div>
  )
}

// ---------------------------------------------------------------- members

function MembersPage({ ws }: { ws: string }) {
  const members = useAsync((signal) => api<{ members: Member[] }>('/workspace-members', { workspace: ws, signal }), [ws])
  const [email, setEmail] = useState('')
  const [role, setRole] = useState('developer')
  const add = useAction()
  const change = useAction()
  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members</h1>
      <form
        className="inline-form card"
        onSubmit={(e) => {
          e.preventDefault()
          add.run(async () => {
            await api('/workspace-members', { method: 'POST', workspace: ws, body: { email: email.trim(), role } })
            setEmail('')
            members.reload()
          })
        }}
      >
        <div className="field">
          <label htmlFor="member-email">E-mail</label>
          <input id="member-email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
        </div>
        <div className="field">
          <label htmlFor="member-role">Role</label>
          <select id="member-role" value={role} onChange={(e) => setRole(e.target.value)}>
            {roles.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={add.busy}>
          {add.busy ? 'Adding…' : 'Add member'}
        </button>
        {add.error && <ErrorBox error={add.error} />}
      </form>
      <p className="muted small">
        Parley sends no e-mail: give a new member a token with <code>parley token create --email …</code>.
      </p>
      {members.loading && !members.data && <Loading what="members" />}
      {members.error && <ErrorBox error={members.error} retry={members.reload} />}
      {change.error && <ErrorBox error={change.error} />}
      {members.data && (
        <div className="table-wrap card">
          <table>
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data.members.map((m) => (
                <tr key={m.id}>
                  <td>{m.displayName ? `${m.displayName} (${m.email})` : m.email}</td>
                  <td>
                    <label className="sr-only" htmlFor={'role-' + m.id}>
                      Role of {m.email}
                    </label>
                    <select
                      id={'role-' + m.id}
                      value={m.role}
                      disabled={change.busy}
                      onChange={(e) =>
                        change.run(async () => {
                          await api(`/workspace-members/${m.id}`, { method: 'PUT', workspace: ws, body: { role: e.target.value } })
                          members.reload()
                        })
                      }
                    >
                      {roles.map((r) => (
                        <option key={r}>{r}</option>
                      ))}
                    </select>
                  </td>
                  <td className="nowrap">{when(m.createdAt)}</td>
                  <td>
                    <button
                      type="button"
                      className="secondary"
                      disabled={change.busy}
                      aria-label={`Remove ${m.email}`}
                      onClick={() =>
                        change.run(async () => {
                          await api(`/workspace-members/${m.id}`, { method: 'DELETE', workspace: ws })
                          members.reload()
                        })
                      }
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

// ---------------------------------------------------------------- tokens

function TokensPage() {
  const pats = useAsync((signal) => api<{ pats: Pat[] }>('/account/pats', { signal }), [])
  const [note, setNote] = useState('')
  const [created, setCreated] = useState<Pat>()
  const add = useAction()
  const del = useAction()
  return (
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">Access tokens</h1>
      <p className="muted">Personal access tokens sign in to this dashboard and call the Admin API.</p>
      <form
        className="inline-form card"
        onSubmit={(e) => {
          e.preventDefault()
          add.run(async () => {
            const { pat } = await api<{ pat: Pat }>('/account/pats', { method: 'POST', body: { note: note.trim() } })
            setCreated(pat)
            setNote('')
            pats.reload()
          })
        }}
      >
        <div className="field">
          <label htmlFor="pat-note">Note</label>
          <input id="pat-note" value={note} onChange={(e) => setNote(e.target.value)} placeholder="CI deploys" required />
        </div>
        <button type="submit" disabled={add.busy || !note.trim()}>
          {add.busy ? 'Creating…' : 'Create token'}
        </button>
        {add.error && <ErrorBox error={add.error} />}
      </form>
      {created?.value && (
        <div className="card notice" role="status">
          <p>
            <strong>New token “{created.note}”.</strong> Copy it now: it is not shown again.
          </p>
          <CopyField label="New token" value={created.value} />
        </div>
      )}
      {pats.loading && !pats.data && <Loading what="tokens" />}
      {pats.error && <ErrorBox error={pats.error} retry={pats.reload} />}
      {del.error && <ErrorBox error={del.error} />}
      {pats.data && (
        <ul className="token-list card">
          {pats.data.pats.map((p) => (
            <li key={p.id}>
              <span>
                <strong>{p.note || 'untitled'}</strong> <span className="muted small">created {when(p.createdAt)}</span>
              </span>
              <button
                type="button"
                className="secondary"
                disabled={del.busy}
                aria-label={`Delete token ${p.note}`}
                onClick={() =>
                  del.run(async () => {
                    await api(`/account/pats/${p.id}`, { method: 'DELETE' })
                    pats.reload()
                  })
                }
              >
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

