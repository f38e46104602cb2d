import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { adminClient, type Bot } from '../api/client'
import { keys } from '../api/keys'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { splitStack } from './stack'

/** Runtime errors of the bot's code, with counts; Resolve deletes one. */
export function IssuesTab({ ws, bot }: { ws: string; bot: Bot }) {
  const qc = useQueryClient()
  const issues = useQuery({ queryKey: keys.issues(ws, bot.id), queryFn: () => adminClient(ws).listBotIssues({ id: bot.id }) })
  const resolve = useMutation({
    mutationFn: (issueId: string) => adminClient(ws).deleteBotIssue({ id: bot.id, issueId }),
    onSuccess: () => qc.invalidateQueries({ queryKey: keys.issues(ws, bot.id) }),
  })
  return (
    <div className="card">
      <div className="card-head">
        <h2>Issues</h2>
        <button type="button" className="secondary" onClick={() => void issues.refetch()}>
          Refresh
        </button>
      </div>
      <QueryState
        query={issues}
        what="issues"
        isEmpty={(d) => d.issues.length === 0}
        empty={<p className="empty">No issues: the bot's code has not failed.</p>}
      >
        {(d) => (
          <ul className="issues">
            {d.issues.map((i) => (
              <li key={i.id}>
                <div>
                  <strong>{i.title}</strong> <span className="badge error">{i.code}</span>
                  <IssueDescription text={i.description} />
                  <p className="muted small">
                    {i.eventsCount} occurrence{i.eventsCount === 1 ? '' : 's'} · last {when(i.lastSeenAt)}
                  </p>
                </div>
                <button type="button" className="secondary" disabled={resolve.isPending} onClick={() => resolve.mutate(i.id)}>
                  Resolve
                </button>
              </li>
            ))}
          </ul>
        )}
      </QueryState>
      {resolve.error && <ErrorBox error={resolve.error} />}
    </div>
  )
}

/** An issue's message, then the frames of the bot's code where it failed. */
function IssueDescription({ text }: { text: string }) {
  const { message, frames } = splitStack(text)
  return (
    <>
      <p className="issue-desc">{message}</p>
      {frames.length > 0 && (
        <ol className="issue-stack" aria-label="Where in the bot's code, innermost first">
          {frames.map((f, n) => (
            <li key={n}>
              at <code>{f}</code>
            </li>
          ))}
        </ol>
      )}
    </>
  )
}
