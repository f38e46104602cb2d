import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { support } from '../api/support'
import { href, paths } from '../routes'
import { duration, when } from '../ui/format'
import { QueryState } from '../ui/QueryState'

/** Conversations handed over to people: waiting (longest first), then taken over. */
export function WaitingTab({ ws, bot }: { ws: string; bot: Bot }) {
  const list = useQuery({
    queryKey: keys.handoffs(ws, bot.id),
    queryFn: ({ signal }) => support.listHandoffs(ws, bot.id, '', signal),
    refetchInterval: 5000,
  })
  return (
    <div className="card">
      <div className="card-head">
        <h2>Waiting for a person</h2>
        <button type="button" className="secondary" onClick={() => void list.refetch()}>
          Refresh
        </button>
      </div>
      <p className="muted">
        Conversations the bot handed over (<code>client.requestHandoff</code> or a <code>handoff</code> card) or an operator took
        over. The bot does not answer them until they are handed back.
      </p>
      <QueryState
        query={list}
        what="the waiting list"
        isEmpty={(d) => d.handoffs.length === 0}
        empty={<p className="empty">Nobody is waiting.</p>}
      >
        {(d) => (
          <ul className="conv-list waiting-list">
            {[...d.handoffs.filter((h) => h.status === 'waiting'), ...d.handoffs.filter((h) => h.status === 'active')].map((h) => (
              <li key={h.conversationId}>
                <a href={href(paths.conversation(ws, bot.id, h.conversationId))}>
                  <span className="conv-preview">
                    {h.status === 'waiting' ? (
                      <span className="badge warn">waiting {duration(h.waitingMs)}</span>
                    ) : (
                      <span className="badge">with {h.agent?.name ?? 'an agent'}</span>
                    )}{' '}
                    {h.reason || <em>no reason given</em>}
                  </span>
                  <span className="muted small">
                    since {when(h.requestedAt)} · <code>{h.conversationId.slice(0, 8)}</code>
                  </span>
                </a>
              </li>
            ))}
          </ul>
        )}
      </QueryState>
    </div>
  )
}
