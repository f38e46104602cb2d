import { useState } from 'react'
import { useMutation } from '@tanstack/react-query'
import { adminClient, type Bot } from '../api/client'
import { CopyField } from '../ui/CopyField'
import { ErrorBox } from '../ui/ErrorBox'
import { randomKey } from '../ui/format'
import { useReloadBot } from './queries'

/** The Chat API's webhook URL and encryption key (show, rotate). */
export function ChatApiCard({ ws, bot }: { ws: string; bot: Bot }) {
  const [confirmRotate, setConfirmRotate] = useState(false)
  const [showKey, setShowKey] = useState(false)
  const reload = useReloadBot(ws, bot.id)
  const rotate = useMutation({
    mutationFn: () =>
      adminClient(ws).updateBot({ id: bot.id, integrations: { chat: { configuration: { encryptionKey: randomKey() } } } }),
    onSuccess: () => {
      setConfirmRotate(false)
      return reload()
    },
  })
  const chat = bot.integrations.chat
  if (!chat) return null
  const key: unknown = chat.configuration.encryptionKey
  return (
    <div className="card">
      <h2>Chat API</h2>
      <p className="muted">
        For custom channels with <code>@botpress/chat</code>.
      </p>
      <CopyField label="Webhook URL" value={chat.webhookUrl} />
      <div className="copy-field">
        <span className="label">Encryption key</span>
        <div className="copy-row">
          <code className="secret" aria-live="polite">
            {showKey ? (typeof key === 'string' ? key : '') : '••••••••••••••••'}
          </code>
          <button type="button" className="secondary" onClick={() => setShowKey((v) => !v)} aria-pressed={showKey}>
            {showKey ? 'Hide' : 'Show'}
          </button>
        </div>
      </div>
      {!confirmRotate ? (
        <button type="button" className="secondary" onClick={() => setConfirmRotate(true)}>
          Rotate encryption key…
        </button>
      ) : (
        <div role="group" aria-label="Confirm key rotation">
          <p>Every user key signed with the old key stops working (webchat visitors start a new conversation).</p>
          <button type="button" disabled={rotate.isPending} onClick={() => rotate.mutate()}>
            {rotate.isPending ? 'Rotating…' : 'Rotate key'}
          </button>{' '}
          <button type="button" className="secondary" onClick={() => setConfirmRotate(false)}>
            Cancel
          </button>
        </div>
      )}
      {rotate.error && <ErrorBox error={rotate.error} />}
    </div>
  )
}
