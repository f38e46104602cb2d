import { useEffect, useId, useRef, useState } from 'react'
import type { TableJob } from '../api/client'
import { ErrorBox } from '../ui/ErrorBox'
import { when } from '../ui/format'
import { QueryState } from '../ui/QueryState'
import { useExport, useImport, useJobs } from './queries'

/**
 * CSV export (exportTable, then its output as a download) and import (the
 * file uploaded with the Files API, then importTable), with the table's
 * jobs (getTableJobs).
 */
export function CsvCard({ ws, botId, table }: { ws: string; botId: string; table: string }) {
  const exp = useExport(ws, botId, table)
  const imp = useImport(ws, botId, table)
  const jobs = useJobs(ws, botId, table)
  const input = useRef<HTMLInputElement>(null)
  const [download, setDownload] = useState<{ url: string; name: string }>()
  const id = useId()

  // The download's object URL lives until the next export or leaving the table.
  useEffect(() => () => download && URL.revokeObjectURL(download.url), [download])

  const startExport = () =>
    exp.mutate(undefined, {
      onSuccess: ({ csv }) => {
        const url = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }))
        const name = `${table}.csv`
        setDownload({ url, name })
        const a = document.createElement('a')
        a.href = url
        a.download = name
        a.click()
      },
    })

  const last = imp.data
  return (
    <div className="card">
      <h3>CSV</h3>
      <div className="grid csv">
        <div>
          <p className="muted small">Export every row, with a header row of the columns (and the row id).</p>
          <div className="actions">
            <button type="button" className="secondary" onClick={startExport} disabled={exp.isPending}>
              {exp.isPending ? 'Exporting…' : 'Export CSV'}
            </button>
            {download && (
              <a href={download.url} download={download.name}>
                Download {download.name} again
              </a>
            )}
          </div>
          {exp.error && <ErrorBox error={exp.error} />}
        </div>
        <form
          onSubmit={(e) => {
            e.preventDefault()
            const f = input.current?.files?.[0]
            if (f) imp.mutate(f, { onSuccess: () => input.current && (input.current.value = '') })
          }}
        >
          <label htmlFor={`${id}-csv`}>CSV file to import</label>
          <p className="muted small" id={`${id}-hint`}>
            A header row naming the columns; rows are added (an id column is ignored). If one row is invalid, none is added.
          </p>
          <div className="actions">
            <input id={`${id}-csv`} ref={input} type="file" accept=".csv,text/csv,.json,application/json" aria-describedby={`${id}-hint`} required />
            <button type="submit" disabled={imp.isPending}>
              {imp.isPending ? 'Importing…' : 'Import CSV'}
            </button>
          </div>
          {imp.error && <ErrorBox error={imp.error} />}
          {last && (
            <p role="status" className={last.status === 'failed' ? 'field-error' : 'ok small'}>
              {last.status === 'failed' ? `Import failed: ${last.error ?? 'no reason given'}` : `Import ${last.status}.`}
            </p>
          )}
        </form>
      </div>
      <h4>Jobs</h4>
      <QueryState query={jobs} what="jobs" isEmpty={(j) => j.length === 0} empty={<p className="empty small">No imports or exports yet.</p>}>
        {(list) => (
          <ul className="job-list">
            {[...list].reverse().slice(0, 10).map((j) => (
              <JobLine key={j.id} job={j} />
            ))}
          </ul>
        )}
      </QueryState>
    </div>
  )
}

function JobLine({ job }: { job: TableJob }) {
  const cls = job.status === 'completed' ? 'ok' : job.status === 'failed' ? 'error' : 'warn'
  return (
    <li>
      <span className={`badge ${cls}`}>
        {job.type} {job.status}
      </span>{' '}
      <span className="muted small">{when(job.createdAt)}</span>
      {job.error && <span className="field-error"> {job.error}</span>}
    </li>
  )
}
