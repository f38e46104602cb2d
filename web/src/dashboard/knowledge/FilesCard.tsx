import { useId, useRef, useState } from 'react'
import type { FileInfo, KnowledgeBase } from '../api/client'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { Passages } from './Passages'
import { formatTags, parseTags, useDeleteFile, useFiles, useUpload } from './queries'

const statusText: Record<FileInfo['status'], string> = {
  upload_pending: 'waiting for upload',
  upload_failed: 'upload failed',
  upload_completed: 'stored (not indexed)',
  indexing_pending: 'indexing…',
  indexing_completed: 'indexed',
  indexing_failed: 'indexing failed',
}
const statusClass: Record<FileInfo['status'], string> = {
  upload_pending: 'warn',
  upload_failed: 'error',
  upload_completed: 'debug',
  indexing_pending: 'warn',
  indexing_completed: 'ok',
  indexing_failed: 'error',
}

export function size(n: number | null): string {
  if (n === null) return '—'
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

/** Upload files (to a knowledge base), and the bot's files with their indexing status and passages. */
export function FilesCard({ ws, botId, kbs }: { ws: string; botId: string; kbs: KnowledgeBase[] }) {
  const files = useFiles(ws, botId)
  const upload = useUpload(ws, botId)
  const del = useDeleteFile(ws, botId)
  const [kb, setKb] = useState('')
  const [tagText, setTagText] = useState('')
  const [index, setIndex] = useState(true)
  const [open, setOpen] = useState<string>()
  const [confirm, setConfirm] = useState<string>()
  const [done, setDone] = useState('')
  const input = useRef<HTMLInputElement>(null)
  const id = useId()
  const parsed = parseTags(tagText)

  const submit = () => {
    const list = Array.from(input.current?.files ?? [])
    if (!list.length || parsed.bad) return
    const kbTags = kbs.find((k) => k.id === kb)?.tags ?? {}
    setDone('')
    upload.mutate(
      { files: list, index, tags: { ...parsed.tags, ...kbTags } },
      {
        onSuccess: () => {
          setDone(`Uploaded ${list.map((f) => f.name).join(', ')}.`)
          if (input.current) input.current.value = ''
        },
      },
    )
  }

  return (
    <div className="card">
      <h2>Files</h2>
      <p className="muted small">
        Plain text, Markdown, HTML and PDF files are split into passages and indexed for search. Up to 100 MB per file.
      </p>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault()
          submit()
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-file`}>File to upload</label>
          <input id={`${id}-file`} ref={input} type="file" multiple accept=".txt,.md,.markdown,.html,.htm,.pdf,text/*,application/pdf" required />
        </div>
        <div className="field">
          <label htmlFor={`${id}-kb`}>Knowledge base</label>
          <select id={`${id}-kb`} value={kb} onChange={(e) => setKb(e.target.value)}>
            <option value="">none (only the tags below)</option>
            {kbs.map((k) => (
              <option key={k.id} value={k.id}>
                {k.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-tags`}>Tags</label>
          <input
            id={`${id}-tags`}
            value={tagText}
            onChange={(e) => setTagText(e.target.value)}
            placeholder="lang=en, topic=billing"
            aria-invalid={parsed.bad ? true : undefined}
            aria-describedby={parsed.bad ? `${id}-tags-err` : undefined}
          />
        </div>
        <label className="toggle">
          <input type="checkbox" checked={index} onChange={(e) => setIndex(e.target.checked)} /> Index for search
        </label>
        <button type="submit" disabled={upload.isPending || !!parsed.bad}>
          {upload.isPending ? 'Uploading…' : 'Upload'}
        </button>
        {parsed.bad && (
          <p className="field-error" id={`${id}-tags-err`}>
            “{parsed.bad}” is not key=value.
          </p>
        )}
        {upload.error && <ErrorBox error={upload.error} />}
      </form>
      <p role="status" className="ok small">
        {done}
      </p>
      {del.error && <ErrorBox error={del.error} />}
      <QueryState
        query={files}
        what="files"
        isEmpty={(d) => d.files.length === 0}
        empty={<p className="empty">No files yet. Upload a document, and its passages appear here once indexed.</p>}
      >
        {(d) => (
          <ul className="file-list">
            {d.files.map((f) => (
              <li key={f.id}>
                <div className="file-row">
                  <div className="file-main">
                    <strong className="file-key">{f.key}</strong>
                    <span className="muted small">
                      {size(f.size)} · {f.contentType} · {when(f.createdAt)}
                      {Object.keys(f.tags).length > 0 && <> · {formatTags(f.tags)}</>}
                    </span>
                    {f.status === 'indexing_failed' || f.status === 'upload_failed' ? (
                      <span className="field-error">{f.failedStatusReason ?? 'no reason given'}</span>
                    ) : null}
                  </div>
                  <span className={`badge ${statusClass[f.status]}`} aria-label={`Status: ${statusText[f.status]}`}>
                    {statusText[f.status]}
                  </span>
                  <div className="row-actions">
                    {f.status === 'indexing_completed' && (
                      <button
                        type="button"
                        className="secondary"
                        aria-expanded={open === f.id}
                        aria-label={`Passages of ${f.key}`}
                        onClick={() => setOpen(open === f.id ? undefined : f.id)}
                      >
                        {open === f.id ? 'Hide passages' : 'Passages'}
                      </button>
                    )}
                    {confirm === f.id ? (
                      <>
                        <button type="button" className="danger-btn" onClick={() => del.mutate(f.id, { onSettled: () => setConfirm(undefined) })}>
                          Yes, delete
                        </button>
                        <button type="button" className="secondary" onClick={() => setConfirm(undefined)}>
                          Keep
                        </button>
                      </>
                    ) : (
                      <button type="button" className="secondary" aria-label={`Delete ${f.key}`} onClick={() => setConfirm(f.id)}>
                        Delete
                      </button>
                    )}
                  </div>
                </div>
                {open === f.id && <Passages ws={ws} botId={botId} file={f} />}
              </li>
            ))}
          </ul>
        )}
      </QueryState>
    </div>
  )
}
