import type { Column } from './columns'

/** The input for one cell, by the column's kind. */
export function CellInput({
  col,
  value,
  onChange,
  id,
  label,
}: {
  col: Column
  value: string
  onChange: (v: string) => void
  id?: string
  label?: string
}) {
  const common = { id, 'aria-label': label, value, onChange: (e: { target: { value: string } }) => onChange(e.target.value) }
  if (col.kind === 'boolean') {
    return (
      <select {...common}>
        <option value="">—</option>
        <option value="true">yes</option>
        <option value="false">no</option>
      </select>
    )
  }
  if (col.enum) {
    return (
      <select {...common}>
        <option value="">—</option>
        {col.enum.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    )
  }
  const placeholder = { number: '0', 'date-time': '2026-01-31T09:00:00Z', json: '{"a": 1}', string: '', boolean: '' }[col.kind]
  return <input {...common} inputMode={col.kind === 'number' ? 'decimal' : undefined} placeholder={placeholder} />
}
