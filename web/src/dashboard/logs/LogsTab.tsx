import { useState } from 'react'
import { useQuery } from '@tanstack/react-query'
import { adminClient, type Bot, type LogLine } from '../api/client'
import { keys } from '../api/keys'
import { QueryState } from '../ui/QueryState'

const maxLines = 100

/**
 * The last 24 hours of the bot's logs, newest first, at most 100 lines.
 * getBotLogs has no page size in the client, so pages are followed until
 * there are enough lines.
 */
async function recentLogs(ws: string, botId: string): Promise<LogLine[]> {
  const timeStart = new Date(Date.now() - 24 * 3600 * 1000).toISOString()
  const lines: LogLine[] = []
  let nextToken: string | undefined
  do {
    const page = await adminClient(ws).getBotLogs({ id: botId, timeStart, ...(nextToken ? { nextToken } : {}) })
    lines.push(...page.logs)
    nextToken = page.nextToken
  } while (nextToken && lines.length < maxLines)
  return lines.slice(0, maxLines)
}

/** The bot's log lines, live-tailed (polled every 2 seconds) unless paused. */
export function LogsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const [live, setLive] = useState(true)
  const logs = useQuery({
    queryKey: keys.logs(ws, bot.id),
    queryFn: () => recentLogs(ws, bot.id),
    refetchInterval: live ? 2000 : false,
  })
  return (
    <div className="card">
      <div className="card-head">
        <h2>Logs</h2>
        <label className="toggle">
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> Live tail
        </label>
      </div>
      <p className="muted small">The last 24 hours, newest first{live ? ', refreshed every 2 seconds' : ''}.</p>
      <QueryState
        query={logs}
        what="logs"
        isEmpty={(lines) => lines.length === 0}
        empty={!logs.error && <p className="empty">No log lines yet. Talk to the bot, and its console.log lines show up here.</p>}
      >
        {(lines) => (
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
                  <tr key={l.timestamp + String(i)} className={'lvl-' + l.level}>
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
      </QueryState>
    </div>
  )
}
