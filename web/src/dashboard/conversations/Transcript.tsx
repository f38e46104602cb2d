import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { parley } from '../api/parley'
import { href, paths } from '../routes'
import { shortId, when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { HandoffBar, HandoffReply } from '../handoff/HandoffPanel'
import { preview } from './preview'

/** One conversation's messages, oldest first, refreshed every 3 seconds. */
export function Transcript({ ws, bot, conversationId }: { ws: string; bot: Bot; conversationId: string }) {
  const msgs = useQuery({
    queryKey: keys.messages(ws, bot.id, conversationId),
    queryFn: ({ signal }) => parley.listMessages(ws, bot.id, conversationId, 100, signal),
    // The API answers newest first; a transcript reads oldest first.
    select: (d) => ({ messages: [...d.messages].reverse(), names: new Map(d.participants.map((u) => [u.id, u.name ?? ''])) }),
    refetchInterval: 3000,
  })
  return (
    <div className="card">
      <p className="crumbs">
        <a href={href(paths.bot(ws, bot.id, 'conversations'))}>← All conversations</a>
      </p>
      <h2>Transcript</h2>
      <p className="muted small">
        Conversation <code>{conversationId}</code>
      </p>
      <HandoffBar ws={ws} bot={bot} conversationId={conversationId} />
      <QueryState query={msgs} what="messages" isEmpty={(d) => d.messages.length === 0} empty={<p className="empty">No messages.</p>}>
        {({ messages: list, names }) => (
          <ol className="transcript" aria-label="Messages, oldest first">
            {list.map((m) => {
              const fromBot = m.userId === bot.id
              // An operator's reply (human handoff) comes from an agent user.
              const fromAgent = m.userId.startsWith('agent_')
              const role = fromBot ? 'bot' : fromAgent ? 'agent' : 'user'
              // A user is shown by name, else by a short id (the full one on hover).
              const name = fromBot ? bot.name : names.get(m.userId) || (fromAgent ? 'Agent' : shortId(m.userId))
              return (
                <li key={m.id} className={fromBot ? 'msg bot' : fromAgent ? 'msg bot agent' : 'msg user'}>
                  <span className="who" title={fromBot ? undefined : m.userId}>
                    {name} <span className={`role ${role}`}>{role}</span>
                  </span>
                  <span className="bubble">{preview(m.payload)}</span>
                  <time className="muted small" dateTime={m.createdAt}>
                    {when(m.createdAt)}
                  </time>
                </li>
              )
            })}
          </ol>
        )}
      </QueryState>
      <HandoffReply ws={ws} bot={bot} conversationId={conversationId} />
    </div>
  )
}
