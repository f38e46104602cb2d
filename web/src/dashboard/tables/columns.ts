// A table's columns as the screens use them, read from the client's
// JSON-Schema-like schema, and the conversion of typed text to values.
import type { Table, TableRow } from '../api/client'

export type Kind = 'string' | 'number' | 'boolean' | 'date-time' | 'json'
export type Column = { name: string; kind: Kind; required: boolean; nullable: boolean; enum?: string[] }

/** The kinds offered when creating a table, with their schema. */
export const kinds: { kind: Kind; label: string; schema: Record<string, unknown> }[] = [
  { kind: 'string', label: 'Text', schema: { type: 'string' } },
  { kind: 'number', label: 'Number', schema: { type: 'number' } },
  { kind: 'boolean', label: 'Yes/no', schema: { type: 'boolean' } },
  { kind: 'date-time', label: 'Date and time', schema: { type: 'string', format: 'date-time' } },
  { kind: 'json', label: 'JSON object', schema: { type: 'object' } },
]

/** The table's columns in their order (x-zui.index). */
export function columnsOf(t: Table): Column[] {
  const required = new Set(t.schema.required ?? [])
  return Object.entries(t.schema.properties)
    .sort(([, a], [, b]) => (a['x-zui']?.index ?? 0) - (b['x-zui']?.index ?? 0))
    .map(([name, p]) => {
      let kind: Kind = 'json'
      if (p.type === 'string') kind = p.format === 'date-time' ? 'date-time' : 'string'
      else if (p.type === 'number' || p.type === 'boolean') kind = p.type
      return { name, kind, required: required.has(name), nullable: !!p.nullable, ...(p.enum ? { enum: p.enum } : {}) }
    })
}

/** The row's own columns, which can be filtered and sorted too. */
export const systemColumns: Column[] = [
  { name: 'id', kind: 'number', required: true, nullable: false },
  { name: 'createdAt', kind: 'date-time', required: true, nullable: false },
  { name: 'updatedAt', kind: 'date-time', required: true, nullable: false },
]

/** A cell as text, for display and for editing. */
export function cellText(v: unknown): string {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  return JSON.stringify(v)
}

export type Parsed = { value: unknown; error?: undefined } | { value?: undefined; error: string }

/**
 * The value typed for a column: undefined for an empty field (left out of a
 * new row, cleared on edit), or an error naming what is wrong.
 */
export function parseCell(c: Column, text: string): Parsed {
  const s = text.trim()
  if (s === '') return { value: undefined }
  switch (c.kind) {
    case 'number': {
      const n = Number(s)
      return Number.isFinite(n) ? { value: n } : { error: `${c.name}: “${s}” is not a number` }
    }
    case 'boolean':
      if (s === 'true' || s === 'false') return { value: s === 'true' }
      return { error: `${c.name}: choose yes or no` }
    case 'date-time': {
      const d = new Date(s)
      return Number.isNaN(d.getTime()) ? { error: `${c.name}: “${s}” is not a date (2026-01-31T09:00:00Z)` } : { value: d.toISOString() }
    }
    case 'json':
      try {
        return { value: JSON.parse(s) as unknown }
      } catch {
        return { error: `${c.name}: not valid JSON` }
      }
    default:
      return { value: text }
  }
}

/**
 * A row from the form's texts. For a new row, empty fields are left out;
 * for an edit, they clear the cell (null).
 */
export function rowFrom(cols: Column[], texts: Record<string, string>, edit: boolean): { row: Record<string, unknown>; errors: string[] } {
  const row: Record<string, unknown> = {}
  const errors: string[] = []
  for (const c of cols) {
    const p = parseCell(c, texts[c.name] ?? '')
    if (p.error !== undefined) errors.push(p.error)
    else if (p.value !== undefined) row[c.name] = p.value
    else if (edit) row[c.name] = null
    else if (c.required) errors.push(`${c.name}: required`)
  }
  return { row, errors }
}

export const textsOf = (cols: Column[], r: TableRow) => Object.fromEntries(cols.map((c) => [c.name, cellText(r[c.name])]))
