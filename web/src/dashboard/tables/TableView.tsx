import { useId, useState } from 'react'
import { useLocation } from 'wouter'
import type { Bot, RowFilter, TableRow } from '../api/client'
import { href, paths } from '../routes'
import { ErrorBox } from '../ui/ErrorBox'
import { QueryState } from '../ui/QueryState'
import { CellInput } from './CellInput'
import { cellText, columnsOf, rowFrom, textsOf, type Column } from './columns'
import { CsvCard } from './CsvCard'
import { FilterBuilder } from './FilterBuilder'
import { useDeleteTable, useRowWrites, useRows, useTable } from './queries'

const pageSize = 50

/** One table: filter, rows (add, edit, delete), CSV import and export. */
export function TableView({ ws, bot, table }: { ws: string; bot: Bot; table: string }) {
  const t = useTable(ws, bot.id, table)
  return (
    <>
      <p className="crumbs">
        <a href={href(paths.bot(ws, bot.id, 'tables'))}>Tables</a> <span aria-hidden="true">/</span>
      </p>
      <QueryState query={t} what="the table">
        {(d) => <Loaded ws={ws} bot={bot} table={d.table.name} cols={columnsOf(d.table)} total={d.rows} keyColumn={d.table.keyColumn ?? ''} />}
      </QueryState>
    </>
  )
}

function Loaded({ ws, bot, table, cols, total, keyColumn }: { ws: string; bot: Bot; table: string; cols: Column[]; total: number; keyColumn: string }) {
  const [filter, setFilter] = useState<RowFilter>()
  const [offset, setOffset] = useState(0)
  const [sort, setSort] = useState<{ by: string; dir: 'asc' | 'desc' }>({ by: 'id', dir: 'asc' })
  const rows = useRows(ws, bot.id, table, {
    limit: pageSize,
    offset,
    orderBy: sort.by,
    orderDirection: sort.dir,
    ...(filter ? { filter } : {}),
  })
  const writes = useRowWrites(ws, bot.id, table)
  const [editing, setEditing] = useState<{ id: number; texts: Record<string, string> }>()
  const [editErrors, setEditErrors] = useState<string[]>([])
  const [selected, setSelected] = useState<Set<number>>(new Set())
  const [confirmDelete, setConfirmDelete] = useState(false)

  const toggleSort = (by: string) => setSort(sort.by === by ? { by, dir: sort.dir === 'asc' ? 'desc' : 'asc' } : { by, dir: 'asc' })
  const startEdit = (r: TableRow) => {
    setEditErrors([])
    writes.update.reset()
    setEditing({ id: r.id, texts: textsOf(cols, r) })
  }
  const saveEdit = () => {
    if (!editing) return
    const { row, errors } = rowFrom(cols, editing.texts, true)
    setEditErrors(errors)
    if (errors.length) return
    writes.update.mutate({ id: editing.id, ...row }, { onSuccess: () => setEditing(undefined) })
  }
  const toggle = (id: number) => {
    const s = new Set(selected)
    if (s.has(id)) s.delete(id)
    else s.add(id)
    setSelected(s)
  }

  return (
    <section aria-labelledby="table-title">
      <div className="card-head">
        <h2 id="table-title" className="table-title">
          {table}
        </h2>
        <span className="muted">
          <span>
            {total} {total === 1 ? 'row' : 'rows'}
          </span>
          {keyColumn && <> · key column {keyColumn}</>}
        </span>
      </div>
      <FilterBuilder
        cols={cols}
        onApply={(f) => {
          setFilter(f)
          setOffset(0)
        }}
      />
      <div className="card">
        <div className="card-head">
          <h3>Rows</h3>
          {selected.size > 0 &&
            (confirmDelete ? (
              <span className="row-actions">
                <button
                  type="button"
                  className="danger-btn"
                  onClick={() =>
                    writes.remove.mutate([...selected], {
                      onSuccess: () => {
                        setSelected(new Set())
                        setConfirmDelete(false)
                      },
                    })
                  }
                >
                  Yes, delete {selected.size} {selected.size === 1 ? 'row' : 'rows'}
                </button>
                <button type="button" className="secondary" onClick={() => setConfirmDelete(false)}>
                  Keep
                </button>
              </span>
            ) : (
              <button type="button" className="secondary" onClick={() => setConfirmDelete(true)}>
                Delete selected ({selected.size})
              </button>
            ))}
        </div>
        {writes.remove.error && <ErrorBox error={writes.remove.error} />}
        <QueryState
          query={rows}
          what="rows"
          isEmpty={(d) => d.rows.length === 0}
          empty={<p className="empty">{filter ? 'No row matches the filter.' : 'No rows yet. Add one below, or import a CSV file.'}</p>}
        >
          {(d) => (
            <>
              <div className="table-wrap">
                <table className="rows">
                  <thead>
                    <tr>
                      {['id', ...cols.map((c) => c.name)].map((name) => (
                        <th scope="col" key={name} aria-sort={sort.by === name ? (sort.dir === 'asc' ? 'ascending' : 'descending') : undefined}>
                          <button type="button" className="sort" onClick={() => toggleSort(name)}>
                            {name}
                            <span aria-hidden="true">{sort.by === name ? (sort.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span>
                          </button>
                        </th>
                      ))}
                      <th scope="col">
                        <span className="sr-only">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.rows.map((r) =>
                      editing?.id === r.id ? (
                        <tr key={r.id} className="editing">
                          <td>{r.id}</td>
                          {cols.map((c) => (
                            <td key={c.name}>
                              <CellInput
                                col={c}
                                label={`${c.name} of row ${r.id}`}
                                value={editing.texts[c.name] ?? ''}
                                onChange={(v) => setEditing({ ...editing, texts: { ...editing.texts, [c.name]: v } })}
                              />
                            </td>
                          ))}
                          <td className="nowrap">
                            <button type="button" onClick={saveEdit} disabled={writes.update.isPending}>
                              Save
                            </button>{' '}
                            <button type="button" className="secondary" onClick={() => setEditing(undefined)}>
                              Cancel
                            </button>
                          </td>
                        </tr>
                      ) : (
                        <tr key={r.id}>
                          <td className="nowrap">
                            <input
                              type="checkbox"
                              className="check"
                              aria-label={`Select row ${r.id}`}
                              checked={selected.has(r.id)}
                              onChange={() => toggle(r.id)}
                            />{' '}
                            {r.id}
                          </td>
                          {cols.map((c) => (
                            <td key={c.name} className={c.kind === 'json' ? 'cell-json' : undefined}>
                              {c.kind === 'boolean' && typeof r[c.name] === 'boolean' ? ((r[c.name] as boolean) ? 'yes' : 'no') : cellText(r[c.name])}
                            </td>
                          ))}
                          <td>
                            <button type="button" className="secondary" aria-label={`Edit row ${r.id}`} onClick={() => startEdit(r)}>
                              Edit
                            </button>
                          </td>
                        </tr>
                      ),
                    )}
                  </tbody>
                </table>
              </div>
              {editErrors.length > 0 && (
                <div className="error" role="alert">
                  {editErrors.map((e) => (
                    <p key={e}>{e}</p>
                  ))}
                </div>
              )}
              {writes.update.error && <ErrorBox error={writes.update.error} />}
              <div className="actions">
                <span className="muted small">
                  Rows {d.offset + 1}–{d.offset + d.rows.length}
                  {filter ? ' matching the filter' : ` of ${total}`}
                </span>
                <button type="button" className="secondary" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - pageSize))}>
                  Previous
                </button>
                <button type="button" className="secondary" disabled={!d.hasMore} onClick={() => setOffset(offset + pageSize)}>
                  Next
                </button>
              </div>
            </>
          )}
        </QueryState>
      </div>
      <AddRow cols={cols} writes={writes} />
      <CsvCard ws={ws} botId={bot.id} table={table} />
      <DeleteTable ws={ws} bot={bot} table={table} />
    </section>
  )
}

function AddRow({ cols, writes }: { cols: Column[]; writes: ReturnType<typeof useRowWrites> }) {
  const empty = () => Object.fromEntries(cols.map((c) => [c.name, '']))
  const [texts, setTexts] = useState<Record<string, string>>(empty)
  const [errors, setErrors] = useState<string[]>([])
  const [added, setAdded] = useState('')
  const id = useId()
  return (
    <form
      className="card"
      aria-labelledby={`${id}-title`}
      onSubmit={(e) => {
        e.preventDefault()
        const { row, errors: errs } = rowFrom(cols, texts, false)
        setErrors(errs)
        setAdded('')
        if (errs.length) return
        writes.create.mutate(row, {
          onSuccess: (res) => {
            setTexts(empty())
            setAdded(`Row ${res.rows[0]?.id ?? ''} added.`)
          },
        })
      }}
    >
      <h3 id={`${id}-title`}>Add a row</h3>
      <div className="inline-form">
        {cols.map((c) => (
          <div className="field" key={c.name}>
            <label htmlFor={`${id}-${c.name}`}>
              {c.name}
              {c.required && <span aria-hidden="true"> *</span>}
            </label>
            <CellInput
              id={`${id}-${c.name}`}
              col={c}
              value={texts[c.name] ?? ''}
              onChange={(v) => {
                setTexts({ ...texts, [c.name]: v })
                setErrors([])
              }}
            />
          </div>
        ))}
        <button type="submit" disabled={writes.create.isPending}>
          {writes.create.isPending ? 'Adding…' : 'Add row'}
        </button>
      </div>
      {errors.length > 0 && (
        <div className="error" role="alert">
          {errors.map((e) => (
            <p key={e}>{e}</p>
          ))}
        </div>
      )}
      {writes.create.error && <ErrorBox error={writes.create.error} />}
      <p role="status" className="ok small">
        {added}
      </p>
    </form>
  )
}

function DeleteTable({ ws, bot, table }: { ws: string; bot: Bot; table: string }) {
  const del = useDeleteTable(ws, bot.id)
  const [, navigate] = useLocation()
  const [confirm, setConfirm] = useState(false)
  return (
    <div className="card danger">
      {confirm ? (
        <div className="actions">
          <span>Delete {table} and all its rows?</span>
          <button type="button" className="danger-btn" onClick={() => del.mutate(table, { onSuccess: () => navigate(paths.bot(ws, bot.id, 'tables')) })}>
            Yes, delete the table
          </button>
          <button type="button" className="secondary" onClick={() => setConfirm(false)}>
            Keep it
          </button>
        </div>
      ) : (
        <button type="button" className="danger-btn" onClick={() => setConfirm(true)}>
          Delete table…
        </button>
      )}
      {del.error && <ErrorBox error={del.error} />}
    </div>
  )
}
