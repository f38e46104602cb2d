import { useState, type FormEvent } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useLocation } from 'wouter'
import { adminClient } from '../api/client'
import { keys } from '../api/keys'
import { href, paths } from '../routes'
import { ErrorBox } from '../ui/ErrorBox'
import { shortId, when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { duplicateNames, isDuplicate, sameName } from './duplicates'

export function BotsPage({ ws }: { ws: string }) {
  const bots = useQuery({ queryKey: keys.bots(ws), queryFn: () => adminClient(ws).listBots({}) })
  const [name, setName] = useState('')
  const [, navigate] = useLocation()
  const qc = useQueryClient()
  const create = useMutation({
    mutationFn: (botName: string) => adminClient(ws).createBot({ name: botName }),
    onSuccess: ({ bot }) => {
      setName('')
      qc.setQueryData(keys.bot(ws, bot.id), { bot })
      void qc.invalidateQueries({ queryKey: keys.bots(ws) })
      navigate(paths.bot(ws, bot.id, 'code'))
    },
  })
  const clash = sameName(bots.data?.bots, name)
  const submit = (e: FormEvent) => {
    e.preventDefault()
    create.mutate(name.trim())
  }
  return (
    <section aria-labelledby="bots-title">
      <h1 id="bots-title">Bots</h1>
      <form className="inline-form card" onSubmit={submit}>
        <div className="field">
          <label htmlFor="new-bot-name">New bot name</label>
          <input
            id="new-bot-name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="support-bot"
            required
            aria-describedby={clash.length ? 'new-bot-dup' : undefined}
          />
        </div>
        <button type="submit" disabled={create.isPending || !name.trim()}>
          {create.isPending ? 'Creating…' : 'Create bot'}
        </button>
        {clash.length > 0 && (
          <p className="warning-text" id="new-bot-dup" role="status">
            This workspace already has a bot named “{clash[0]?.name}”. Two bots with one name are easy to mix up: consider another
            name.
          </p>
        )}
        {create.error && <ErrorBox error={create.error} />}
      </form>
      <QueryState
        query={bots}
        what="bots"
        isEmpty={(d) => d.bots.length === 0}
        empty={<p className="empty">No bots yet. Create your first one above.</p>}
      >
        {(d) => {
          const dups = duplicateNames(d.bots)
          return (
            <ul className="bot-list">
              {d.bots.map((b) => (
                <li key={b.id}>
                  <a href={href(paths.bot(ws, b.id))} className="bot-card">
                    <span className="bot-name">
                      {b.name}
                      {isDuplicate(dups, b.name) && (
                        <span className="badge warn" title="Another bot has this name">
                          same name · {shortId(b.id)}
                        </span>
                      )}
                    </span>
                    <span className="muted">
                      {b.deployedAt ? `Deployed ${when(b.deployedAt)}` : 'Not deployed'} · updated {when(b.updatedAt)}
                    </span>
                  </a>
                </li>
              ))}
            </ul>
          )
        }}
      </QueryState>
    </section>
  )
}
