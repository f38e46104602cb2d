import { useId, useState } from 'react'
import type { RowFilter } from '../api/client'
import { CellInput } from './CellInput'
import { systemColumns, type Column } from './columns'
import { buildFilter, needsValue, opLabels, opsFor, type Condition, type Op } from './filter'

/**
 * Conditions (column, operator, value) joined by all/any, applied as the
 * client's filter; the filter sent is shown, to copy into bot code.
 */
export function FilterBuilder({ cols, onApply }: { cols: Column[]; onApply: (f: RowFilter | undefined) => void }) {
  const all = [...cols, ...systemColumns]
  const first = all[0] as Column
  const fresh = (): Condition => ({ column: first.name, op: opsFor(first.kind)[0] as Op, value: '' })
  const [conds, setConds] = useState<Condition[]>([])
  const [match, setMatch] = useState<'all' | 'any'>('all')
  const [applied, setApplied] = useState<RowFilter>()
  const [error, setError] = useState('')
  const id = useId()
  const colOf = (name: string) => all.find((c) => c.name === name) ?? first
  const set = (i: number, c: Partial<Condition>) => setConds(conds.map((x, j) => (j === i ? { ...x, ...c } : x)))

  const apply = (list: Condition[]) => {
    const r = buildFilter(list, all, match)
    if (r.error) {
      setError(r.error)
      return
    }
    setError('')
    setApplied(r.filter)
    onApply(r.filter)
  }

  return (
    <form
      className="card filter"
      aria-labelledby={`${id}-title`}
      onSubmit={(e) => {
        e.preventDefault()
        apply(conds)
      }}
    >
      <div className="card-head">
        <h3 id={`${id}-title`}>Filter</h3>
        {conds.length > 1 && (
          <label className="toggle">
            Rows matching
            <select value={match} onChange={(e) => setMatch(e.target.value as 'all' | 'any')} className="narrow">
              <option value="all">all conditions</option>
              <option value="any">any condition</option>
            </select>
          </label>
        )}
      </div>
      {conds.length === 0 && <p className="muted small">Every row is shown. Add a condition to narrow them down.</p>}
      {conds.map((c, i) => {
        const col = colOf(c.column)
        const ops = opsFor(col.kind)
        return (
          <div className="condition" key={i}>
            <select
              aria-label={`Condition ${i + 1} column`}
              value={c.column}
              onChange={(e) => {
                const nc = colOf(e.target.value)
                set(i, { column: nc.name, op: opsFor(nc.kind).includes(c.op) ? c.op : (opsFor(nc.kind)[0]), value: '' })
              }}
            >
              {all.map((x) => (
                <option key={x.name} value={x.name}>
                  {x.name}
                </option>
              ))}
            </select>
            <select aria-label={`Condition ${i + 1} operator`} value={c.op} onChange={(e) => set(i, { op: e.target.value as Op })}>
              {ops.map((o) => (
                <option key={o} value={o}>
                  {opLabels[o]}
                </option>
              ))}
            </select>
            {needsValue(c.op) &&
              (c.op === 'in' || c.op === 'contains' || c.op === 'regex' ? (
                <input
                  aria-label={`Condition ${i + 1} value`}
                  value={c.value}
                  placeholder={c.op === 'in' ? 'a, b, c' : ''}
                  onChange={(e) => set(i, { value: e.target.value })}
                />
              ) : (
                <CellInput col={col} label={`Condition ${i + 1} value`} value={c.value} onChange={(v) => set(i, { value: v })} />
              ))}
            <button type="button" className="secondary" aria-label={`Remove condition ${i + 1}`} onClick={() => setConds(conds.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        )
      })}
      <div className="actions">
        <button type="button" className="secondary" onClick={() => setConds([...conds, fresh()])}>
          Add condition
        </button>
        <button type="submit">Apply filter</button>
        {applied && (
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setConds([])
              apply([])
            }}
          >
            Clear filter
          </button>
        )}
      </div>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      {applied && (
        <p className="muted small filter-json">
          Filter sent: <code>{JSON.stringify(applied)}</code>
        </p>
      )}
    </form>
  )
}
