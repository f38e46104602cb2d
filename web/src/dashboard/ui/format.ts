// Formatting shared by the screens.

export function when(iso?: string): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

/** A random secret for a rotated chat encryption key (160 bits, base32). */
export function randomKey(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return Array.from(bytes, (b) => alphabet[b % 32]).join('')
}

/**
 * An id shortened for display: its last 8 characters (Parley's ids start
 * with their creation time, so their beginnings look alike).
 */
export function shortId(id: string): string {
  return id.length > 10 ? `…${id.slice(-8)}` : id
}

/** A duration in words: "45 s", "3 min", "2 h 5 min", "1 d 4 h". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m} min`
  const h = Math.floor(m / 60)
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`
  const d = Math.floor(h / 24)
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`
}
