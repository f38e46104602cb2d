import type { Payload } from '../api/parley'

const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '')
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const obj = (v: unknown): Payload => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Payload) : {})

/** The text a payload shows in transcripts and previews. */
export function preview(p: Payload | undefined): string {
  if (!p) return ''
  switch (p.type) {
    case 'text':
      return str(p.text)
    case 'markdown':
      return str(p.markdown)
    case 'choice':
    case 'dropdown':
      return `${str(p.text)} [${list(p.options)
        .map((o) => str(obj(o).label))
        .join(' | ')}]`
    case 'image':
      return `🖼 ${str(p.imageUrl)}`
    case 'file':
      return `📎 ${str(p.title) || str(p.fileUrl)}`
    case 'audio':
      return `🔊 ${str(p.audioUrl)}`
    case 'video':
      return `🎬 ${str(p.videoUrl)}`
    case 'card':
      return `[card] ${str(p.title)}`
    case 'carousel':
      return `[carousel of ${list(p.items).length} cards]`
    case 'location':
      return `📍 ${str(p.title) || str(p.address) || `${str(p.latitude)}, ${str(p.longitude)}`}`
    case 'bloc':
      return list(p.items)
        .map((i) => {
          const item = obj(i)
          return preview(item.payload === undefined ? item : obj(item.payload))
        })
        .join(' · ')
    default:
      return `[${str(p.type)}]`
  }
}
