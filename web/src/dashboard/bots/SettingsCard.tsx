import { useState } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useLocation } from 'wouter'
import { adminClient, type Bot, type Outputs } from '../api/client'
import { keys } from '../api/keys'
import { paths } from '../routes'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { sameName } from './duplicates'
import { useReloadBot } from './queries'

/** Rename, facts, and deletion (confirmed inline). */
export function SettingsCard({ ws, bot }: { ws: string; bot: Bot }) {
  const [name, setName] = useState(bot.name)
  const [confirmDelete, setConfirmDelete] = useState(false)
  const [, navigate] = useLocation()
  const qc = useQueryClient()
  const reload = useReloadBot(ws, bot.id)
  const bots = useQuery({ queryKey: keys.bots(ws), queryFn: () => adminClient(ws).listBots({}) })
  const clash = name.trim() === bot.name ? [] : sameName(bots.data?.bots, name, bot.id)
  const rename = useMutation({
    mutationFn: (newName: string) => adminClient(ws).updateBot({ id: bot.id, name: newName }),
    onSuccess: reload,
  })
  const del = useMutation({
    mutationFn: () => adminClient(ws).deleteBot({ id: bot.id }),
    onSuccess: () => {
      navigate(paths.bots(ws))
      // The bot is gone: drop what was read about it (not read it again),
      // and take it off the list.
      qc.removeQueries({ queryKey: keys.bot(ws, bot.id) })
      qc.setQueryData(keys.bots(ws), (old: Outputs['listBots'] | undefined) => old && { ...old, bots: old.bots.filter((b) => b.id !== bot.id) })
      void qc.invalidateQueries({ queryKey: keys.bots(ws) })
    },
  })
  return (
    <div className="card">
      <h2>Settings</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault()
          rename.mutate(name.trim())
        }}
      >
        <div className="field">
          <label htmlFor="bot-name">Name</label>
          <input
            id="bot-name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            aria-describedby={clash.length ? 'bot-name-dup' : undefined}
          />
        </div>
        <button type="submit" disabled={rename.isPending || !name.trim() || name.trim() === bot.name}>
          {rename.isPending ? 'Saving…' : 'Rename'}
        </button>
        {clash.length > 0 && (
          <p className="warning-text" id="bot-name-dup" role="status">
            Another bot of this workspace is named “{clash[0]?.name}”: the two will be easy to mix up.
          </p>
        )}
      </form>
      {rename.error && <ErrorBox error={rename.error} />}
      <dl className="facts">
        <dt>Bot id</dt>
        <dd>
          <code>{bot.id}</code>
        </dd>
        <dt>Created</dt>
        <dd>{when(bot.createdAt)}</dd>
        <dt>Deployed</dt>
        <dd>{bot.deployedAt ? when(bot.deployedAt) : 'never'}</dd>
      </dl>
      <div className="danger">
        {!confirmDelete ? (
          <button type="button" className="danger-btn" onClick={() => setConfirmDelete(true)}>
            Delete bot…
          </button>
        ) : (
          <div role="group" aria-label="Confirm deletion">
            <p>
              Delete <strong>{bot.name}</strong> with all its conversations, logs and files? This cannot be undone.
            </p>
            <button type="button" className="danger-btn" disabled={del.isPending} onClick={() => del.mutate()}>
              {del.isPending ? 'Deleting…' : 'Yes, delete it'}
            </button>{' '}
            <button type="button" className="secondary" onClick={() => setConfirmDelete(false)} autoFocus>
              Cancel
            </button>
          </div>
        )}
        {del.error && <ErrorBox error={del.error} />}
      </div>
    </div>
  )
}
