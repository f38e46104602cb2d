import { useState } from 'react'

/** A read-only value with a Copy button. */
export function CopyField({ label, value, multiline }: { label: string; value: string; multiline?: boolean }) {
  const [copied, setCopied] = useState(false)
  const id = 'copy-' + label.toLowerCase().replace(/[^a-z0-9]+/g, '-')
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value)
      setCopied(true)
      setTimeout(() => setCopied(false), 1500)
    } catch {
      const field = document.getElementById(id)
      if (field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement) field.select()
    }
  }
  return (
    <div className="copy-field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        {multiline ? (
          <textarea id={id} readOnly value={value} rows={3} onFocus={(e) => e.currentTarget.select()} />
        ) : (
          <input id={id} readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
        )}
        <button type="button" className="secondary" onClick={copy} aria-label={`Copy ${label}`}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  )
}
