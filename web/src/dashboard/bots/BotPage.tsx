import { lazy, Suspense } from 'react'
import { JsonTab } from '../botjson/JsonTab'
import { ConversationsTab } from '../conversations/ConversationsTab'
import { Transcript } from '../conversations/Transcript'
import { WaitingTab } from '../handoff/WaitingTab'
import { IssuesTab } from '../issues/IssuesTab'
import { KnowledgeTab } from '../knowledge/KnowledgeTab'
import { LogsTab } from '../logs/LogsTab'
import { href, paths } from '../routes'
import { TablesTab } from '../tables/TablesTab'
import { TableView } from '../tables/TableView'
import { ErrorBox } from '../ui/ErrorBox'
import { Loading } from '../ui/Loading'
import { NotDeployedBanner } from './NotDeployedBanner'
import { OverviewTab } from './OverviewTab'
import { useBot } from './queries'

// The code editor (CodeMirror) and the charts (recharts) are loaded when
// their tab opens: they are most of the dashboard's weight.
const CodeTab = lazy(() => import('../code/CodeTab').then((m) => ({ default: m.CodeTab })))
const BotJsonView = lazy(() => import('../code/BotJsonView').then((m) => ({ default: m.BotJsonView })))
const AnalyticsTab = lazy(() => import('../analytics/AnalyticsTab').then((m) => ({ default: m.AnalyticsTab })))

const botTabs: [string, string][] = [
  ['overview', 'Overview'],
  ['code', 'Code'],
  ['json', 'Bot JSON'],
  ['conversations', 'Conversations'],
  ['knowledge', 'Knowledge'],
  ['tables', 'Tables'],
  ['waiting', 'Waiting'],
  ['analytics', 'Analytics'],
  ['logs', 'Logs'],
  ['issues', 'Issues'],
]

/** One bot: its name, the tab bar and the current tab. */
export function BotPage({ ws, botId, tab, sub }: { ws: string; botId: string; tab: string; sub?: string | undefined }) {
  const bot = useBot(ws, botId)
  const b = bot.data?.bot
  return (
    <section aria-labelledby="bot-title">
      <p className="crumbs">
        <a href={href(paths.bots(ws))}>Bots</a> <span aria-hidden="true">/</span>
      </p>
      <h1 id="bot-title">{b?.name ?? 'Bot'}</h1>
      {b && <NotDeployedBanner ws={ws} bot={b} />}
      <nav className="tabs" aria-label="Bot sections">
        {botTabs.map(([id, label]) => (
          <a
            key={id}
            href={href(paths.bot(ws, botId, id))}
            aria-current={tab === id ? 'page' : undefined}
            className={tab === id ? 'active' : undefined}
          >
            {label}
          </a>
        ))}
      </nav>
      {bot.isPending && <Loading what="the bot" />}
      {bot.error && <ErrorBox error={bot.error} retry={() => void bot.refetch()} />}
      {b && tab === 'overview' && <OverviewTab ws={ws} bot={b} />}
      <Suspense fallback={<Loading what="the tab" />}>
        {b && tab === 'code' && sub !== 'bot-json' && <CodeTab ws={ws} bot={b} />}
        {b && tab === 'code' && sub === 'bot-json' && <BotJsonView ws={ws} bot={b} />}
        {b && tab === 'analytics' && <AnalyticsTab ws={ws} bot={b} />}
      </Suspense>
      {b && tab === 'json' && <JsonTab ws={ws} bot={b} />}
      {b && tab === 'conversations' && !sub && <ConversationsTab ws={ws} bot={b} />}
      {b && tab === 'conversations' && sub && <Transcript ws={ws} bot={b} conversationId={sub} />}
      {b && tab === 'waiting' && <WaitingTab ws={ws} bot={b} />}
      {b && tab === 'logs' && <LogsTab ws={ws} bot={b} />}
      {b && tab === 'issues' && <IssuesTab ws={ws} bot={b} />}
      {b && tab === 'knowledge' && <KnowledgeTab ws={ws} bot={b} />}
      {b && tab === 'tables' && !sub && <TablesTab ws={ws} bot={b} />}
      {b && tab === 'tables' && sub && <TableView key={sub} ws={ws} bot={b} table={sub} />}
    </section>
  )
}
