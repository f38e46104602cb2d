// Bot names are not unique (as in Botpress); two bots of the same name are
// easy to mix up, so the screens warn before one is made.
import type { BotSummary } from '../api/client'

const norm = (s: string) => s.trim().toLowerCase()

/** The other bots named like `name` (case and surrounding spaces ignored). */
export function sameName(bots: BotSummary[] | undefined, name: string, exceptId?: string): BotSummary[] {
  const n = norm(name)
  if (!n || !bots) return []
  return bots.filter((b) => b.id !== exceptId && norm(b.name) === n)
}

/** Names carried by more than one bot. */
export function duplicateNames(bots: BotSummary[]): Set<string> {
  const seen = new Map<string, number>()
  for (const b of bots) seen.set(norm(b.name), (seen.get(norm(b.name)) ?? 0) + 1)
  return new Set([...seen].filter(([, n]) => n > 1).map(([k]) => k))
}

export const isDuplicate = (dups: Set<string>, name: string) => dups.has(norm(name))
