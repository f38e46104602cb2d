import { useRef, useState, type KeyboardEvent } from 'react'
import { useMutation } from '@tanstack/react-query'
import { adminClient, type Bot } from '../api/client'
import { hostedPage } from '../bots/publicBase'
import { useReloadBot } from '../bots/queries'
import { ErrorBox } from '../ui/ErrorBox'

/** A plain textarea editor (Tab indents) and the Deploy button. */
export function CodeEditor({ ws, bot, initial }: { ws: string; bot: Bot; initial: string }) {
  const [code, setCode] = useState(initial)
  const [deployed, setDeployed] = useState(false)
  // Escape then Tab leaves the editor (keyboard users).
  const escaped = useRef(false)
  const reload = useReloadBot(ws, bot.id)
  const deploy = useMutation({
    mutationFn: (source: string) => adminClient(ws).updateBot({ id: bot.id, code: source }),
    onSuccess: () => {
      setDeployed(true)
      return reload()
    },
  })
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Tab' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && !escaped.current) {
      e.preventDefault()
      const t = e.currentTarget
      const s = t.selectionStart
      setCode(t.value.slice(0, s) + '  ' + t.value.slice(t.selectionEnd))
      requestAnimationFrame(() => t.setSelectionRange(s + 2, s + 2))
    }
    escaped.current = e.key === 'Escape'
  }
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
      <textarea
        id="code"
        className="code"
        spellCheck={false}
        value={code}
        onChange={(e) => setCode(e.target.value)}
        rows={18}
        onKeyDown={onKeyDown}
        aria-describedby="code-help"
      />
      <p id="code-help" className="muted small">
        Tab indents; press Escape then Tab to move on.
      </p>
      <div className="actions">
        <button type="submit" disabled={deploy.isPending}>
          {deploy.isPending ? 'Deploying…' : 'Deploy'}
        </button>
        {deployed && (
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
