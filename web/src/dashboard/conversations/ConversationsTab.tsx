import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { parley } from '../api/parley'
import { href, paths } from '../routes'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { preview } from './preview'

/** The bot's conversations, newest first, refreshed every 5 seconds. */
export function ConversationsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const convs = useQuery({
    queryKey: keys.conversations(ws, bot.id),
    queryFn: ({ signal }) => parley.listConversations(ws, bot.id, 50, signal),
    refetchInterval: 5000,
  })
  return (
    <div className="card">
      <div className="card-head">
        <h2>Conversations</h2>
        <button type="button" className="secondary" onClick={() => void convs.refetch()}>
          Refresh
        </button>
      </div>
      <QueryState
        query={convs}
        what="conversations"
        isEmpty={(d) => d.conversations.length === 0}
        empty={<p className="empty">No conversations yet.</p>}
      >
        {(d) => (
          <ul className="conv-list">
            {d.conversations.map((c) => (
              <li key={c.id}>
                <a href={href(paths.conversation(ws, bot.id, c.id))}>
                  <span className="conv-preview">{c.lastMessage ? preview(c.lastMessage.payload) : <em>no messages</em>}</span>
                  <span className="muted small">
                    {when(c.updatedAt)} · <code>{c.id.slice(0, 8)}</code>
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
