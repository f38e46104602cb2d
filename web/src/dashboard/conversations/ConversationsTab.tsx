import { useId, useState } from 'react'
import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { parley } from '../api/parley'
import { href, paths } from '../routes'
import { shortId, when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { preview } from './preview'

/**
 * The bot's conversations, newest first, refreshed every 5 seconds, with
 * their user and message count; searchable by user (id or name) and by
 * the text of their messages.
 */
export function ConversationsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const [search, setSearch] = useState('')
  const s = search.trim()
  const id = useId()
  const convs = useQuery({
    queryKey: [...keys.conversations(ws, bot.id), s],
    queryFn: ({ signal }) => parley.listConversations(ws, bot.id, 50, s, signal),
    refetchInterval: 5000,
    placeholderData: (prev) => prev,
  })
  return (
    <div className="card">
      <div className="card-head">
        <h2>Conversations</h2>
        <button type="button" className="secondary" onClick={() => void convs.refetch()}>
          Refresh
        </button>
      </div>
      <div className="field conv-search" role="search">
        <label htmlFor={`${id}-q`}>Search conversations</label>
        <input
          id={`${id}-q`}
          type="search"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          placeholder="A user id or name, or words from a message"
          maxLength={200}
        />
      </div>
      <QueryState
        query={convs}
        what="conversations"
        isEmpty={(d) => d.conversations.length === 0}
        empty={<p className="empty">{s ? `No conversation matches “${s}”.` : 'No conversations yet.'}</p>}
      >
        {(d) => (
          <ul className="conv-list">
            {d.conversations.map((c) => (
              <li key={c.id}>
                <a href={href(paths.conversation(ws, bot.id, c.id))}>
                  <span className="conv-preview">{c.lastMessage ? preview(c.lastMessage.payload) : <em>no messages</em>}</span>
                  <span className="muted small">
                    {when(c.updatedAt)} · {c.messageCount} {c.messageCount === 1 ? 'message' : 'messages'} · user{' '}
                    <code>{c.ownerId ? shortId(c.ownerId) : 'unknown'}</code> · conversation <code>{shortId(c.id)}</code>
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
