import { useId, useState } from 'react'
import { useLocation } from 'wouter'
import type { Bot } from '../api/client'
import { href, paths } from '../routes'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { kinds, type Kind } from './columns'
import { useCreateTable, useTables } from './queries'

type Draft = { name: string; kind: Kind; required: boolean }

const nameRule = /^[A-Za-z][A-Za-z0-9_]{0,63}$/

/** The bot's tables, and a form to create one. */
export function TablesTab({ ws, bot }: { ws: string; bot: Bot }) {
  const tables = useTables(ws, bot.id)
  return (
    <>
      <p className="muted">
        Tables hold the bot&apos;s structured data (orders, leads, bookings…). Bot code reads and writes them with{' '}
        <code>client.findTableRows</code>, <code>client.createTableRows</code> and the other row operations.
      </p>
      <div className="card">
        <h2>Tables</h2>
        <QueryState
          query={tables}
          what="tables"
          isEmpty={(d) => d.tables.length === 0}
          empty={<p className="empty">No tables yet. Create one below.</p>}
        >
          {(d) => (
            <ul className="token-list">
              {d.tables.map((t) => (
                <li key={t.id}>
                  <a href={href(paths.bot(ws, bot.id, `tables/${encodeURIComponent(t.name)}`))}>
                    <strong>{t.name}</strong>
                  </a>
                  <span className="muted small">
                    {Object.keys(t.schema.properties).length} columns · created {when(t.createdAt)}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </QueryState>
      </div>
      <CreateTable ws={ws} botId={bot.id} />
    </>
  )
}

function CreateTable({ ws, botId }: { ws: string; botId: string }) {
  const create = useCreateTable(ws, botId)
  const [, navigate] = useLocation()
  const [name, setName] = useState('')
  const [cols, setCols] = useState<Draft[]>([{ name: '', kind: 'string', required: false }])
  const [keyColumn, setKeyColumn] = useState('')
  const [problem, setProblem] = useState('')
  const id = useId()
  const set = (i: number, d: Partial<Draft>) => setCols(cols.map((c, j) => (j === i ? { ...c, ...d } : c)))
  const named = cols.filter((c) => c.name.trim())

  const submit = () => {
    const n = name.trim()
    if (!nameRule.test(n)) return setProblem('The name starts with a letter, then letters, digits or _ (at most 64).')
    const seen = new Set<string>()
    for (const c of named) {
      const cn = c.name.trim()
      if (seen.has(cn)) return setProblem(`Two columns are named “${cn}”.`)
      seen.add(cn)
    }
    if (named.length === 0) return setProblem('Add at least one column.')
    setProblem('')
    const properties = Object.fromEntries(
      named.map((c, i) => [c.name.trim(), { ...kinds.find((k) => k.kind === c.kind)?.schema, 'x-zui': { index: i } }]),
    )
    const required = named.filter((c) => c.required).map((c) => c.name.trim())
    create.mutate(
      { name: n, schema: { type: 'object', properties, required }, ...(keyColumn ? { keyColumn } : {}) },
      { onSuccess: ({ table }) => navigate(paths.bot(ws, botId, `tables/${encodeURIComponent(table.name)}`)) },
    )
  }

  return (
    <form
      className="card"
      aria-labelledby={`${id}-title`}
      onSubmit={(e) => {
        e.preventDefault()
        submit()
      }}
    >
      <h2 id={`${id}-title`}>New table</h2>
      <div className="stack-form">
        <div>
          <label htmlFor={`${id}-name`}>Table name</label>
          <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} placeholder="OrdersTable" required />
        </div>
        <fieldset className="columns-edit">
          <legend className="label">Columns</legend>
          {cols.map((c, i) => (
            <div className="column-draft" key={i}>
              <input aria-label={`Column ${i + 1} name`} value={c.name} placeholder="name" onChange={(e) => set(i, { name: e.target.value })} />
              <select aria-label={`Column ${i + 1} type`} value={c.kind} onChange={(e) => set(i, { kind: e.target.value as Kind })}>
                {kinds.map((k) => (
                  <option key={k.kind} value={k.kind}>
                    {k.label}
                  </option>
                ))}
              </select>
              <label className="toggle">
                <input type="checkbox" checked={c.required} onChange={(e) => set(i, { required: e.target.checked })} /> required
              </label>
              <button
                type="button"
                className="secondary"
                aria-label={`Remove column ${i + 1}`}
                disabled={cols.length === 1}
                onClick={() => setCols(cols.filter((_, j) => j !== i))}
              >
                Remove
              </button>
            </div>
          ))}
          <button type="button" className="secondary" onClick={() => setCols([...cols, { name: '', kind: 'string', required: false }])}>
            Add column
          </button>
        </fieldset>
        <div>
          <label htmlFor={`${id}-key`}>Key column (optional)</label>
          <select id={`${id}-key`} value={keyColumn} onChange={(e) => setKeyColumn(e.target.value)}>
            <option value="">none</option>
            {named.map((c) => (
              <option key={c.name} value={c.name.trim()}>
                {c.name.trim()}
              </option>
            ))}
          </select>
          <p className="muted small">Rows are upserted by their key column (upsertTableRows).</p>
        </div>
        {problem && (
          <p className="field-error" role="alert">
            {problem}
          </p>
        )}
        {create.error && <ErrorBox error={create.error} />}
        <button type="submit" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create table'}
        </button>
      </div>
    </form>
  )
}
