import type { Bot } from '../api/client'
import { CopyField } from '../ui/CopyField'
import { hostedPage, publicBase } from './publicBase'

/** The hosted chat page and the embed snippet. */
export function WebchatCard({ bot }: { bot: Bot }) {
  const wc = bot.integrations.webchat
  if (!wc) return null
  const base = publicBase(bot)
  const page = hostedPage(bot)
  const snippet = `<script src="${base}/webchat.js" data-client-id="${wc.webhookId}" defer></script>`
  return (
    <div className="card">
      <h2>Webchat</h2>
      <p className="muted">A hosted chat page for this bot, and a snippet that puts a chat button on any website.</p>
      <p>
        <a href={page} target="_blank" rel="noopener" className="button-link">
          Open the hosted chat page
        </a>
      </p>
      <CopyField label="Hosted page link" value={page} />
      <CopyField label="Embed snippet" value={snippet} multiline />
      <p className="muted small">
        Client id for the React component (<code>@botpress/webchat</code>): <code>{wc.webhookId}</code>, with{' '}
        <code>apiUrl="{base}/webchat"</code>.
      </p>
    </div>
  )
}
