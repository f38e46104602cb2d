import { useId, useState } from 'react'
import { useQuery } from '@tanstack/react-query'
import { adminClient, type Bot, type LogLine } from '../api/client'
import { keys } from '../api/keys'
import { href, paths } from '../routes'
import { shortId } from '../ui/format'
import { QueryState } from '../ui/QueryState'

const maxLines = 100
const levels = ['debug', 'info', 'warn', 'error']

type Filter = { level: string; text: string }

/**
 * The last 24 hours of the bot's logs, newest first, at most 100 lines.
 * getBotLogs has no page size in the client, so pages are followed until
 * there are enough lines.
 */
async function recentLogs(ws: string, botId: string, f: Filter): Promise<LogLine[]> {
  const timeStart = new Date(Date.now() - 24 * 3600 * 1000).toISOString()
  const lines: LogLine[] = []
  let nextToken: string | undefined
  do {
    const page = await adminClient(ws).getBotLogs({
      id: botId,
      timeStart,
      ...(f.level ? { level: f.level } : {}),
      ...(f.text ? { messageContains: f.text } : {}),
      ...(nextToken ? { nextToken } : {}),
    })
    lines.push(...page.logs)
    nextToken = page.nextToken
  } while (nextToken && lines.length < maxLines)
  return lines.slice(0, maxLines)
}

/**
 * The bot's log lines, live-tailed (polled every 2 seconds) unless paused,
 * filtered by level and text on the server (getBotLogs' level and
 * messageContains); a line of a conversation links to its transcript.
 */
export function LogsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const [live, setLive] = useState(true)
  const [level, setLevel] = useState('')
  const [text, setText] = useState('')
  const filter: Filter = { level, text: text.trim() }
  const id = useId()
  const filtered = !!(filter.level || filter.text)
  const logs = useQuery({
    queryKey: [...keys.logs(ws, bot.id), filter],
    queryFn: () => recentLogs(ws, bot.id, filter),
    refetchInterval: live ? 2000 : false,
    placeholderData: (prev) => prev,
  })
  return (
    <div className="card">
      <div className="card-head">
        <h2>Logs</h2>
        <label className="toggle">
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> Live tail
        </label>
      </div>
      <div className="inline-form log-filter" role="search">
        <div className="field narrow-field">
          <label htmlFor={`${id}-level`}>Level</label>
          <select id={`${id}-level`} value={level} onChange={(e) => setLevel(e.target.value)}>
            <option value="">all levels</option>
            {levels.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-text`}>Message contains</label>
          <input id={`${id}-text`} type="search" value={text} onChange={(e) => setText(e.target.value)} placeholder="timeout" />
        </div>
      </div>
      <p className="muted small">The last 24 hours, newest first{live ? ', refreshed every 2 seconds' : ''}.</p>
      <QueryState
        query={logs}
        what="logs"
        isEmpty={(lines) => lines.length === 0}
        empty={
          !logs.error && (
            <p className="empty">
              {filtered ? 'No log line matches the filter.' : 'No log lines yet. Talk to the bot, and its console.log lines show up here.'}
            </p>
          )
        }
      >
        {(lines) => (
          <div className="table-wrap">
            <table className="logs">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Level</th>
                  <th scope="col">Message</th>
                  <th scope="col">Conversation</th>
                </tr>
              </thead>
              <tbody aria-live={live ? 'polite' : undefined}>
                {lines.map((l, i) => (
                  <tr key={l.timestamp + String(i)} className={'lvl-' + l.level}>
                    <td className="nowrap">{new Date(l.timestamp).toLocaleTimeString()}</td>
                    <td>
                      <span className={'badge ' + l.level}>{l.level}</span>
                    </td>
                    <td className="logmsg">{l.message}</td>
                    <td className="nowrap">
                      {l.conversationId ? (
                        <a href={href(paths.conversation(ws, bot.id, l.conversationId))} aria-label={`Conversation ${shortId(l.conversationId)} of this line`}>
                          {shortId(l.conversationId)}
                        </a>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryState>
    </div>
  )
}
