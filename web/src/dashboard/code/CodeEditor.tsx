import { useEffect, useState } from 'react'
import { useMutation } from '@tanstack/react-query'
import { adminClient, type Bot } from '../api/client'
import { hostedPage } from '../bots/publicBase'
import { useReloadBot } from '../bots/queries'
import { ErrorBox } from '../ui/ErrorBox'
import { Editor, type CodeError } from './Editor'

/** The compile error's line, from the error body's metadata ({ line, column }). */
function codeError(err: unknown): CodeError | null {
  if (!(err instanceof Error) || !('metadata' in err)) return null
  const m = err.metadata
  if (typeof m !== 'object' || m === null || !('line' in m) || typeof m.line !== 'number') return null
  const column = 'column' in m && typeof m.column === 'number' ? m.column : undefined
  return { line: m.line, ...(column !== undefined ? { column } : {}), message: err.message }
}

/**
 * Warns before leaving with unsaved changes: the browser's prompt on
 * reload or close, a confirm() on the dashboard's own links.
 */
function useUnsavedWarning(dirty: boolean) {
  useEffect(() => {
    if (!dirty) return
    const beforeUnload = (e: BeforeUnloadEvent) => {
      e.preventDefault()
    }
    const click = (e: MouseEvent) => {
      const a = e.target instanceof Element ? e.target.closest('a[href^="#"]') : null
      if (a && !window.confirm('The code has unsaved changes. Leave without deploying them?')) {
        e.preventDefault()
        e.stopPropagation()
      }
    }
    window.addEventListener('beforeunload', beforeUnload)
    document.addEventListener('click', click, true)
    return () => {
      window.removeEventListener('beforeunload', beforeUnload)
      document.removeEventListener('click', click, true)
    }
  }, [dirty])
}

/** The CodeMirror editor of the bot's code and the Deploy button. */
export function CodeEditor({ ws, bot, initial }: { ws: string; bot: Bot; initial: string }) {
  const [code, setCode] = useState(initial)
  const [saved, setSaved] = useState(initial)
  const [deployed, setDeployed] = useState(false)
  const reload = useReloadBot(ws, bot.id)
  const deploy = useMutation({
    mutationFn: (source: string) => adminClient(ws).updateBot({ id: bot.id, code: source }),
    onSuccess: (_, source) => {
      setDeployed(true)
      setSaved(source)
      return reload()
    },
  })
  const dirty = code !== saved
  useUnsavedWarning(dirty)
  const error = codeError(deploy.error)
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault()
        setDeployed(false)
        deploy.mutate(code)
      }}
    >
      <h2>
        <label htmlFor="code">Bot code</label>
      </h2>
      <p className="muted">
        JavaScript run by Parley for each event: register handlers on <code>bot</code>, answer with <code>client</code>.
        Deploying makes a new version live at once.
      </p>
      <Editor id="code" label="Bot code" value={code} onChange={setCode} error={error} describedBy="code-help" />
      <p id="code-help" className="muted small">
        Tab indents; press Escape then Tab to move on.
      </p>
      <div className="actions">
        <button type="submit" disabled={deploy.isPending}>
          {deploy.isPending ? 'Deploying…' : 'Deploy'}
        </button>
        {dirty && (
          <span className="unsaved" role="status">
            Unsaved changes
          </span>
        )}
        {deployed && !dirty && (
          <span className="ok" role="status">
            Deployed ✓ — try it on the{' '}
            <a href={hostedPage(bot)} target="_blank" rel="noopener">
              hosted chat page
            </a>
            .
          </span>
        )}
      </div>
      {deploy.error && <ErrorBox error={deploy.error} />}
    </form>
  )
}
