import { useState } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { adminClient, type NewPat } from '../api/client'
import { keys } from '../api/keys'
import { CopyField } from '../ui/CopyField'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'

/** The account's personal access tokens: create (shown once), list, delete. */
export function TokensPage() {
  const qc = useQueryClient()
  const pats = useQuery({ queryKey: keys.pats, queryFn: () => adminClient().listPersonalAccessTokens({}) })
  const [note, setNote] = useState('')
  const [created, setCreated] = useState<NewPat>()
  const reload = () => qc.invalidateQueries({ queryKey: keys.pats })
  const add = useMutation({
    mutationFn: (n: string) => adminClient().createPersonalAccessToken({ note: n }),
    onSuccess: ({ pat }) => {
      setCreated(pat)
      setNote('')
      return reload()
    },
  })
  const del = useMutation({
    mutationFn: (id: string) => adminClient().deletePersonalAccessToken({ id }),
    onSuccess: reload,
  })
  return (
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">Access tokens</h1>
      <p className="muted">Personal access tokens sign in to this dashboard and call the Admin API.</p>
      <form
        className="inline-form card"
        onSubmit={(e) => {
          e.preventDefault()
          add.mutate(note.trim())
        }}
      >
        <div className="field">
          <label htmlFor="pat-note">Note</label>
          <input id="pat-note" value={note} onChange={(e) => setNote(e.target.value)} placeholder="CI deploys" required />
        </div>
        <button type="submit" disabled={add.isPending || !note.trim()}>
          {add.isPending ? 'Creating…' : 'Create token'}
        </button>
        {add.error && <ErrorBox error={add.error} />}
      </form>
      {created?.value && (
        <div className="card notice" role="status">
          <p>
            <strong>New token “{created.note}”.</strong> Copy it now: it is not shown again.
          </p>
          <CopyField label="New token" value={created.value} />
        </div>
      )}
      {del.error && <ErrorBox error={del.error} />}
      <QueryState query={pats} what="tokens">
        {(d) => (
          <ul className="token-list card">
            {d.pats.map((p) => (
              <li key={p.id}>
                <span>
                  <strong>{p.note || 'untitled'}</strong> <span className="muted small">created {when(p.createdAt)}</span>
                </span>
                <button
                  type="button"
                  className="secondary"
                  disabled={del.isPending}
                  aria-label={`Delete token ${p.note}`}
                  onClick={() => del.mutate(p.id)}
                >
                  Delete
                </button>
              </li>
            ))}
          </ul>
        )}
      </QueryState>
    </section>
  )
}
