import type { FileInfo } from '../api/client'
import { QueryState } from '../ui/QueryState'
import { usePassages } from './queries'

/** A file's passages in document order (listFilePassages). */
export function Passages({ ws, botId, file }: { ws: string; botId: string; file: FileInfo }) {
  const passages = usePassages(ws, botId, file.id)
  return (
    <QueryState
      query={passages}
      what="passages"
      isEmpty={(d) => d.passages.length === 0}
      empty={<p className="empty">This file has no passages (no text was found in it).</p>}
    >
      {(d) => (
        <ol className="passages" aria-label={`Passages of ${file.key}`}>
          {d.passages.map((p) => (
            <li key={p.id} className={p.meta.subtype === 'title' || p.meta.subtype === 'subtitle' ? 'heading' : undefined}>
              <span className="muted small">
                {p.meta.subtype ?? 'passage'}
                {p.meta.pageNumber !== undefined && <> · page {p.meta.pageNumber}</>}
              </span>
              <p>{p.content}</p>
            </li>
          ))}
        </ol>
      )}
    </QueryState>
  )
}
