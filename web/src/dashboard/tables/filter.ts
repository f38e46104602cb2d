// The filter builder's model: conditions (column, operator, value) joined
// by "all" or "any", turned into the client's filter language
// (docs/tables-api.md, findTableRows).
import type { RowFilter } from '../api/client'
import { parseCell, type Column, type Kind } from './columns'

export type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'contains' | 'regex' | 'in' | 'set' | 'unset'
export type Condition = { column: string; op: Op; value: string }

export const opLabels: Record<Op, string> = {
  eq: 'is',
  ne: 'is not',
  gt: '>',
  gte: '≥',
  lt: '<',
  lte: '≤',
  contains: 'contains',
  regex: 'matches regex',
  in: 'is one of',
  set: 'has a value',
  unset: 'has no value',
}

const byKind: Record<Kind, Op[]> = {
  string: ['eq', 'ne', 'contains', 'regex', 'in', 'gt', 'lt', 'set', 'unset'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'set', 'unset'],
  boolean: ['eq', 'ne', 'set', 'unset'],
  'date-time': ['gt', 'gte', 'lt', 'lte', 'eq', 'ne', 'set', 'unset'],
  json: ['set', 'unset'],
}

export const opsFor = (kind: Kind): Op[] => byKind[kind]
export const needsValue = (op: Op) => op !== 'set' && op !== 'unset'

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** One condition as a filter, or an error naming the column. */
function one(c: Condition, col: Column): { filter: RowFilter } | { error: string } {
  const wrap = (cond: Record<string, unknown>) => ({ filter: { [c.column]: cond } })
  switch (c.op) {
    case 'set':
      return wrap({ $exists: true })
    case 'unset':
      return wrap({ $exists: false })
    case 'contains':
      return wrap({ $regex: escapeRegex(c.value), $options: 'i' })
    case 'regex':
      return wrap({ $regex: c.value })
    case 'in': {
      const values: unknown[] = []
      for (const part of c.value.split(',')) {
        const p = parseCell(col, part)
        if (p.error !== undefined) return { error: p.error }
        if (p.value !== undefined) values.push(p.value)
      }
      return wrap({ $in: values })
    }
  }
  const p = parseCell(col, c.value)
  if (p.error !== undefined) return { error: p.error }
  if (p.value === undefined) return { error: `${c.column}: type a value` }
  return wrap({ [`$${c.op}`]: p.value })
}

/**
 * The client's filter for the conditions: undefined for none, one
 * condition alone, several under $and (all) or $or (any).
 */
export function buildFilter(conds: Condition[], cols: Column[], match: 'all' | 'any'): { filter?: RowFilter; error?: string } {
  const parts: RowFilter[] = []
  for (const c of conds) {
    const col = cols.find((x) => x.name === c.column)
    if (!col) return { error: `unknown column ${c.column}` }
    const r = one(c, col)
    if ('error' in r) return { error: r.error }
    parts.push(r.filter)
  }
  if (parts.length === 0) return {}
  if (parts.length === 1) return { filter: parts[0] }
  return { filter: { [match === 'all' ? '$and' : '$or']: parts } }
}
