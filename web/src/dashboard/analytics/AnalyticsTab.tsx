import { useState } from 'react'
import { useQuery } from '@tanstack/react-query'
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import { adminClient, type Bot } from '../api/client'
import { keys } from '../api/keys'
import { support, type Interval, type SeriesRecord } from '../api/support'
import { QueryState } from '../ui/QueryState'

const ranges = {
  '24h': { label: 'Last 24 hours, by hour', hours: 24, interval: 'hour' },
  '7d': { label: 'Last 7 days, by day', hours: 7 * 24, interval: 'day' },
  '30d': { label: 'Last 30 days, by day', hours: 30 * 24, interval: 'day' },
} as const satisfies Record<string, { label: string; hours: number; interval: Interval }>
type Range = keyof typeof ranges

/** [startDate, endDate] of a range ending now, as ISO strings. */
function span(r: Range): [string, string] {
  const end = Date.now()
  return [new Date(end - (ranges[r].hours - 1) * 3600 * 1000).toISOString(), new Date(end).toISOString()]
}

function tick(interval: Interval) {
  return (iso: string) => {
    const d = new Date(iso)
    return interval === 'hour'
      ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
      : d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
  }
}

const total = (rs: SeriesRecord[], k: keyof SeriesRecord) => rs.reduce((n, r) => n + Number(r[k]), 0)

/**
 * The bot's analytics, computed by the server from its stored messages,
 * users, conversations and turns: totals, then charts per hour or day
 * (recharts). The custom events come from getBotAnalytics (the official
 * client); the series from Parley's analytics/series.
 */
export function AnalyticsTab({ ws, bot }: { ws: string; bot: Bot }) {
  const [range, setRange] = useState<Range>('24h')
  const { interval } = ranges[range]
  const series = useQuery({
    queryKey: keys.analytics(ws, bot.id, range),
    queryFn: ({ signal }) => {
      const [start, end] = span(range)
      return support.series(ws, bot.id, start, end, interval, signal)
    },
    refetchInterval: 30000,
  })
  const daily = useQuery({
    queryKey: [...keys.analytics(ws, bot.id, range), 'getBotAnalytics'],
    queryFn: () => {
      const [startDate, endDate] = span(range)
      return adminClient(ws).getBotAnalytics({ id: bot.id, startDate, endDate })
    },
  })
  const fmt = tick(interval)
  const label = (l: unknown) => (typeof l === 'string' ? fmt(l) : '')
  const custom = new Map<string, number>()
  for (const r of daily.data?.records ?? []) for (const [k, v] of Object.entries(r.customEvents)) custom.set(k, (custom.get(k) ?? 0) + v)
  return (
    <div className="card analytics">
      <div className="card-head">
        <h2>Analytics</h2>
        <label className="inline">
          <span className="sr-only">Range</span>
          <select value={range} onChange={(e) => setRange(e.target.value as Range)} aria-label="Range">
            {Object.entries(ranges).map(([k, v]) => (
              <option key={k} value={k}>
                {v.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <QueryState query={series} what="analytics">
        {({ records }) => {
          const turns = total(records, 'turns')
          const p95 = Math.max(0, ...records.map((r) => r.turnTimeP95Ms))
          return (
            <>
              <dl className="tiles" aria-label="Totals">
                <div>
                  <dt>Messages in</dt>
                  <dd>{total(records, 'messagesIn')}</dd>
                </div>
                <div>
                  <dt>Messages out</dt>
                  <dd>{total(records, 'messagesOut') + total(records, 'agentMessages')}</dd>
                </div>
                <div>
                  <dt>New users</dt>
                  <dd>{total(records, 'newUsers')}</dd>
                </div>
                <div>
                  <dt>New conversations</dt>
                  <dd>{total(records, 'newConversations')}</dd>
                </div>
                <div>
                  <dt>Turns</dt>
                  <dd>{turns}</dd>
                </div>
                <div>
                  <dt>Turn failures</dt>
                  <dd className={total(records, 'turnFailures') ? 'bad' : undefined}>{total(records, 'turnFailures')}</dd>
                </div>
                <div>
                  <dt>Worst p95 turn time</dt>
                  <dd>{turns ? `${p95} ms` : '—'}</dd>
                </div>
              </dl>
              <div className="charts">
                <figure>
                  <figcaption>Messages</figcaption>
                  <ResponsiveContainer width="100%" height={220}>
                    <BarChart data={records}>
                      <CartesianGrid strokeDasharray="3 3" vertical={false} />
                      <XAxis dataKey="startDateTimeUtc" tickFormatter={fmt} minTickGap={16} />
                      <YAxis allowDecimals={false} width={36} />
                      <Tooltip labelFormatter={label} />
                      <Legend />
                      <Bar dataKey="messagesIn" name="In (users)" stackId="m" fill="#4f46e5" isAnimationActive={false} />
                      <Bar dataKey="messagesOut" name="Out (bot)" stackId="m" fill="#12b76a" isAnimationActive={false} />
                      <Bar dataKey="agentMessages" name="Out (agents)" stackId="m" fill="#f79009" isAnimationActive={false} />
                    </BarChart>
                  </ResponsiveContainer>
                </figure>
                <figure>
                  <figcaption>Users and conversations</figcaption>
                  <ResponsiveContainer width="100%" height={220}>
                    <LineChart data={records}>
                      <CartesianGrid strokeDasharray="3 3" vertical={false} />
                      <XAxis dataKey="startDateTimeUtc" tickFormatter={fmt} minTickGap={16} />
                      <YAxis allowDecimals={false} width={36} />
                      <Tooltip labelFormatter={label} />
                      <Legend />
                      <Line dataKey="users" name="Active users" stroke="#4f46e5" dot={false} isAnimationActive={false} />
                      <Line dataKey="newUsers" name="New users" stroke="#12b76a" dot={false} isAnimationActive={false} />
                      <Line dataKey="conversations" name="Conversations" stroke="#f79009" dot={false} isAnimationActive={false} />
                    </LineChart>
                  </ResponsiveContainer>
                </figure>
                <figure>
                  <figcaption>Turns and failures</figcaption>
                  <ResponsiveContainer width="100%" height={220}>
                    <BarChart data={records}>
                      <CartesianGrid strokeDasharray="3 3" vertical={false} />
                      <XAxis dataKey="startDateTimeUtc" tickFormatter={fmt} minTickGap={16} />
                      <YAxis allowDecimals={false} width={36} />
                      <Tooltip labelFormatter={label} />
                      <Legend />
                      <Bar dataKey="turns" name="Turns" fill="#4f46e5" isAnimationActive={false} />
                      <Bar dataKey="turnFailures" name="Failures" fill="#f04438" isAnimationActive={false} />
                    </BarChart>
                  </ResponsiveContainer>
                </figure>
                <figure>
                  <figcaption>Turn time (ms)</figcaption>
                  <ResponsiveContainer width="100%" height={220}>
                    <LineChart data={records}>
                      <CartesianGrid strokeDasharray="3 3" vertical={false} />
                      <XAxis dataKey="startDateTimeUtc" tickFormatter={fmt} minTickGap={16} />
                      <YAxis width={44} />
                      <Tooltip labelFormatter={label} />
                      <Legend />
                      <Line dataKey="turnTimeP50Ms" name="p50" stroke="#4f46e5" dot={false} isAnimationActive={false} />
                      <Line dataKey="turnTimeP95Ms" name="p95" stroke="#f04438" dot={false} isAnimationActive={false} />
                    </LineChart>
                  </ResponsiveContainer>
                </figure>
              </div>
            </>
          )
        }}
      </QueryState>
      <h3>Custom events</h3>
      <QueryState
        query={daily}
        what="custom events"
        isEmpty={() => custom.size === 0}
        empty={
          <p className="empty">
            No custom events: bots count them with <code>client.trackAnalytics</code>.
          </p>
        }
      >
        {() => (
          <table className="small-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Count</th>
              </tr>
            </thead>
            <tbody>
              {[...custom].map(([k, v]) => (
                <tr key={k}>
                  <td>
                    <code>{k}</code>
                  </td>
                  <td>{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </QueryState>
    </div>
  )
}
