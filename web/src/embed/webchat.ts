// Parley's embed script. Paste on any site:
//
//   <script src="https://parley.example.com/webchat.js" data-client-id="CLIENT_ID" defer></script>
//
// It adds a chat button in the corner; the button opens the bot's hosted
// chat page (/w/{clientId}) in a panel (an iframe, so the site's styles and
// the chat's never mix). The chat talks to Parley's Webchat API from
// Parley's own origin. Options (data- attributes): data-open="true" opens
// the panel at load, data-position="left" puts it on the left,
// data-color="#4f46e5" colours the button, data-label names it.
// window.parleyWebchat.open() / .close() / .toggle() drive it from code.

type Api = { open: () => void; close: () => void; toggle: () => void }

declare global {
  interface Window {
    parleyWebchat?: Api
  }
}

const ICON_CHAT =
  '<svg aria-hidden="true" width="28" height="28" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 15a2 2 0 0 1-2 2H7l-4 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"/></svg>'
const ICON_CLOSE =
  '<svg aria-hidden="true" width="26" height="26" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2.2" stroke-linecap="round"><path d="M18 6 6 18M6 6l12 12"/></svg>'

function init(script: HTMLScriptElement) {
  const clientId = script.dataset.clientId
  if (!clientId) {
    console.warn('[parley] webchat.js: the data-client-id attribute is missing')
    return
  }
  const base = script.src.replace(/\/webchat\.js(\?.*)?$/, '')
  const left = script.dataset.position === 'left'
  const color = script.dataset.color || '#4f46e5'
  const label = script.dataset.label || 'Chat with us'
  const side = left ? 'left' : 'right'

  const host = document.createElement('div')
  host.id = 'parley-webchat'
  // A shadow root keeps the site's CSS away from the button and panel.
  const shadow = host.attachShadow({ mode: 'open' })
  shadow.innerHTML = `
    <style>
      :host { all: initial; }
      .fab { position: fixed; bottom: 20px; ${side}: 20px; z-index: 2147483000; width: 60px; height: 60px;
        border: 0; border-radius: 50%; background: ${color}; color: #fff; cursor: pointer; display: grid;
        place-items: center; box-shadow: 0 6px 20px rgba(0,0,0,.25); transition: transform .15s ease; }
      .fab:hover { transform: scale(1.05); }
      .fab:focus-visible { outline: 3px solid #111827; outline-offset: 3px; }
      .panel { position: fixed; bottom: 92px; ${side}: 20px; z-index: 2147483000;
        width: min(400px, calc(100vw - 40px)); height: min(640px, calc(100vh - 112px));
        border-radius: 14px; overflow: hidden; background: #fff; box-shadow: 0 12px 40px rgba(0,0,0,.25); }
      .panel[hidden] { display: none; }
      iframe { border: 0; width: 100%; height: 100%; display: block; }
      @media (max-width: 480px) {
        .panel { bottom: 88px; ${side}: 8px; width: calc(100vw - 16px); height: calc(100vh - 100px); border-radius: 12px; }
      }
      @media (prefers-reduced-motion: reduce) { .fab { transition: none; } }
    </style>
    <div class="panel" id="panel" role="dialog" aria-label="${label.replace(/"/g, '&quot;')}" hidden></div>
    <button class="fab" id="fab" type="button" aria-controls="panel" aria-expanded="false" aria-label="Open chat">${ICON_CHAT}</button>`
  const fab = shadow.getElementById('fab') as HTMLButtonElement
  const panel = shadow.getElementById('panel') as HTMLDivElement
  let frame: HTMLIFrameElement | null = null

  const open = () => {
    if (!frame) {
      frame = document.createElement('iframe')
      frame.title = label
      frame.allow = 'clipboard-write; microphone; autoplay'
      frame.src = `${base}/w/${encodeURIComponent(clientId)}?embed=1`
      panel.appendChild(frame)
    }
    panel.hidden = false
    fab.setAttribute('aria-expanded', 'true')
    fab.setAttribute('aria-label', 'Close chat')
    fab.innerHTML = ICON_CLOSE
    frame.focus()
  }
  const close = () => {
    panel.hidden = true
    fab.setAttribute('aria-expanded', 'false')
    fab.setAttribute('aria-label', 'Open chat')
    fab.innerHTML = ICON_CHAT
  }
  const toggle = () => (panel.hidden ? open() : close())
  fab.addEventListener('click', toggle)
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !panel.hidden) {
      close()
      fab.focus()
    }
  })
  document.body.appendChild(host)
  window.parleyWebchat = { open, close, toggle }
  if (script.dataset.open === 'true') open()
}

const current = document.currentScript as HTMLScriptElement | null
const script =
  current ?? (Array.from(document.querySelectorAll('script[data-client-id]')).pop() as HTMLScriptElement | undefined)
if (script) {
  if (document.body) init(script)
  else document.addEventListener('DOMContentLoaded', () => init(script))
}

export {}
