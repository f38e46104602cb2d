import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { Webchat } from '@botpress/webchat'
import './chat.css'

// The hosted chat page of one bot, /w/{clientId}. The Go server writes the
// page's configuration into #parley-config: the client id, the Webchat API
// URL of this server and the component's configuration (bot name, ...).
type PageConfig = {
  clientId?: string
  apiUrl?: string
  botName?: string
  configuration?: Record<string, unknown>
}

function readConfig(): PageConfig {
  try {
    return JSON.parse(document.getElementById('parley-config')?.textContent || '{}') as PageConfig
  } catch {
    return {}
  }
}

const cfg = readConfig()
const root = document.getElementById('root')!

if (!cfg.clientId || !cfg.apiUrl) {
  root.innerHTML = ''
  const p = document.createElement('p')
  p.className = 'chat-error'
  p.setAttribute('role', 'alert')
  p.textContent = 'This chat is not available. Check the link and try again.'
  root.appendChild(p)
} else {
  if (cfg.botName) document.title = `${cfg.botName} · Chat`
  // The embed script opens this page in an iframe with ?embed=1 (no frame
  // shadow, full width: the host page's panel is the frame).
  const embedded = new URLSearchParams(location.search).has('embed')
  const configuration = { ...(cfg.configuration ?? {}) }
  createRoot(root).render(
    <StrictMode>
      <main className={embedded ? 'chat-main chat-embedded' : 'chat-main'} aria-label={`Chat with ${cfg.botName ?? 'the bot'}`}>
        <Webchat
          clientId={cfg.clientId}
          apiUrl={cfg.apiUrl}
          configuration={configuration as never}
          style={{ width: '100%', height: '100%' }}
        />
      </main>
    </StrictMode>,
  )
}
