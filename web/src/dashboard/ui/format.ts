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
