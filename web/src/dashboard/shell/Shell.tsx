import { useEffect } from 'react'
import { useQuery } from '@tanstack/react-query'
import { Route, Switch, useLocation, useRoute } from 'wouter'
import { adminClient } from '../api/client'
import { statusOf } from '../api/errors'
import { keys } from '../api/keys'
import { BotPage } from '../bots/BotPage'
import { BotsPage } from '../bots/BotsPage'
import { MembersPage } from '../members/MembersPage'
import { href, paths, patterns } from '../routes'
import { TokensPage } from '../tokens/TokensPage'
import { ErrorBox } from '../ui/ErrorBox'
import { Loading } from '../ui/Loading'
import { Logo } from '../ui/Logo'

type BotParams = { ws: string; botId: string; tab?: string; sub?: string }

const decode = (s: string | undefined) => (s === undefined ? undefined : decodeURIComponent(s))

/** The signed-in frame: top bar (workspace, main navigation, account) and the current page. */
export function Shell({ onSignOut }: { onSignOut: () => void }) {
  const [location, navigate] = useLocation()
  const [inWorkspace, params] = useRoute<{ ws: string; '*': string }>(patterns.workspace)
  const workspaces = useQuery({ queryKey: keys.workspaces, queryFn: () => adminClient().listWorkspaces({}) })
  const me = useQuery({ queryKey: keys.account, queryFn: () => adminClient().getAccount({}) })
  const list = workspaces.data?.workspaces ?? []
  const ws = inWorkspace ? decode(params.ws) : undefined
  const onTokens = location === paths.tokens
  const section = ws ? (params?.['*']?.split('/')[0] || 'bots') : onTokens ? 'tokens' : ''

  const firstID = list[0]?.id
  useEffect(() => {
    if (!ws && !onTokens && firstID) navigate(paths.bots(firstID), { replace: true })
  }, [ws, onTokens, firstID, navigate])

  useEffect(() => {
    if (statusOf(workspaces.error) === 401) onSignOut()
  }, [workspaces.error, onSignOut])

  const nav = (path: string, label: string, active: boolean) => (
    <a href={href(path)} aria-current={active ? 'page' : undefined} className={active ? 'active' : undefined}>
      {label}
    </a>
  )
  const wsID = ws ?? list[0]?.id
  return (
    <div className="shell">
      <a
        className="skip"
        href="#content"
        onClick={(e) => {
          e.preventDefault()
          document.getElementById('content')?.focus()
        }}
      >
        Skip to content
      </a>
      <header className="topbar">
        <a className="brand" href={href(paths.home)} aria-label="Parley home">
          <Logo /> <span className="brand-text">Parley</span>
        </a>
        {list.length > 0 && (
          <div className="ws-select">
            <label htmlFor="workspace" className="sr-only">
              Workspace
            </label>
            <select id="workspace" value={wsID ?? ''} onChange={(e) => navigate(paths.bots(e.target.value))}>
              {list.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </div>
        )}
        <nav aria-label="Main">
          {wsID && nav(paths.bots(wsID), 'Bots', section === 'bots')}
          {wsID && nav(paths.members(wsID), 'Members', section === 'members')}
          {nav(paths.tokens, 'Tokens', section === 'tokens')}
        </nav>
        <div className="account">
          <span className="muted email">{me.data?.account.email}</span>
          <button type="button" className="secondary" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        {workspaces.isPending && <Loading what="workspaces" />}
        {workspaces.error && <ErrorBox error={workspaces.error} retry={() => void workspaces.refetch()} />}
        <Switch>
          <Route path={patterns.tokens}>
            <TokensPage />
          </Route>
          <Route path={patterns.workspaceHome}>{(p) => <BotsPage ws={decodeURIComponent(p.ws)} />}</Route>
          <Route path={patterns.bots}>{(p) => <BotsPage ws={decodeURIComponent(p.ws)} />}</Route>
          <Route<BotParams> path={patterns.bot}>
            {(p) => (
              <BotPage
                ws={decodeURIComponent(p.ws)}
                botId={decodeURIComponent(p.botId)}
                tab={decode(p.tab) ?? 'overview'}
                sub={decode(p.sub)}
              />
            )}
          </Route>
          <Route path={patterns.members}>{(p) => <MembersPage ws={decodeURIComponent(p.ws)} />}</Route>
        </Switch>
        {workspaces.isSuccess && list.length === 0 && section !== 'tokens' && <p>You are not a member of any workspace yet.</p>}
      </main>
    </div>
  )
}
