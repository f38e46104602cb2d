import { useState } from 'react'
import { useMutation } from '@tanstack/react-query'
import { adminClient, type Bot, type Inputs } from '../api/client'
import { useReloadBot } from '../bots/queries'
import { ErrorBox } from '../ui/ErrorBox'

const editable = ['name', 'description', 'tags', 'configuration', 'states', 'events', 'recurringEvents', 'actions', 'user', 'conversation', 'message'] as const

type BotUpdate = Omit<Inputs['updateBot'], 'id'>

/** The editable part of the bot's definition, as updateBot takes it. */
function definition(bot: Bot): string {
  return JSON.stringify(Object.fromEntries(editable.map((k) => [k, bot[k]]).filter(([, v]) => v !== undefined)), null, 2)
}

function parse(text: string): BotUpdate {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (err) {
    throw new Error('The JSON is not valid: ' + (err instanceof Error ? err.message : String(err)), { cause: err })
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('The JSON must be an object.')
  // The server checks the fields; the dashboard passes them on as written.
  return body
}

/** The bot's definition as JSON: edit, save and deploy. */
export function JsonTab({ ws, bot }: { ws: string; bot: Bot }) {
  const [text, setText] = useState(() => definition(bot))
  const [saved, setSaved] = useState(false)
  const reload = useReloadBot(ws, bot.id)
  const save = useMutation({
    mutationFn: (json: string) => adminClient(ws).updateBot({ ...parse(json), id: bot.id }),
    onSuccess: () => {
      setSaved(true)
      return reload()
    },
  })
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault()
        setSaved(false)
        save.mutate(text)
      }}
    >
      <h2>
        <label htmlFor="bot-json">Bot JSON</label>
      </h2>
      <p className="muted">
        The bot's definition as the Admin API's <code>updateBot</code> takes it (maps are merged; <code>null</code> removes a
        key).
      </p>
      <textarea id="bot-json" className="code" spellCheck={false} rows={20} value={text} onChange={(e) => setText(e.target.value)} />
      <div className="actions">
        <button type="submit" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : 'Save and deploy'}
        </button>
        {saved && (
          <span className="ok" role="status">
            Saved ✓
          </span>
        )}
      </div>
      {save.error && <ErrorBox error={save.error} />}
    </form>
  )
}
