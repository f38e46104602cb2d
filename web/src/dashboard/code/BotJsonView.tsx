import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { href, paths } from '../routes'
import { QueryState } from '../ui/QueryState'
import { Editor } from './Editor'
import { deployedBotJson } from './deployedCode'

function download(text: string, name: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }))
  const a = Object.assign(document.createElement('a'), { href: url, download: name })
  a.click()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}

/** A workflow bot's deployed bot JSON, read-only, with a download link. */
export function BotJsonView({ ws, bot }: { ws: string; bot: Bot }) {
  const doc = useQuery({
    queryKey: keys.botJson(ws, bot.id),
    queryFn: async () => JSON.stringify(await deployedBotJson(ws, bot.id), null, 2),
  })
  return (
    <div className="card">
      <p className="crumbs">
        <a href={href(paths.bot(ws, bot.id, 'code'))}>← Generated code</a>
      </p>
      <h2>
        <label htmlFor="bot-json-doc">Bot JSON (deployed)</label>
      </h2>
      <QueryState query={doc} what="the bot JSON">
        {(text) => (
          <>
            <p className="muted">
              The workflow document the bot runs (docs/bot-json.md).{' '}
              <button type="button" className="secondary" onClick={() => download(text, `${bot.name || bot.id}.bot.json`)}>
                Download
              </button>
            </p>
            <Editor id="bot-json-doc" label="Bot JSON (read-only)" value={text} readOnly />
          </>
        )}
      </QueryState>
    </div>
  )
}
