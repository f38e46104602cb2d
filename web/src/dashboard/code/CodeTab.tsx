import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { href, paths } from '../routes'
import { QueryState } from '../ui/QueryState'
import { CodeEditor } from './CodeEditor'
import { Editor } from './Editor'
import { deployedCode, sampleCode } from './deployedCode'

/**
 * The bot's code: loads the deployed version, then edits and deploys it. A
 * workflow bot's code is generated from its bot JSON: shown read-only,
 * with a link to the document it comes from.
 */
export function CodeTab({ ws, bot }: { ws: string; bot: Bot }) {
  const current = useQuery({ queryKey: keys.code(ws, bot.id), queryFn: () => deployedCode(ws, bot.id) })
  return (
    <QueryState query={current} what="the code">
      {({ code, fromBotJson }) =>
        fromBotJson ? (
          <div className="card">
            <h2>
              <label htmlFor="code">Generated code</label>
            </h2>
            <p className="muted" id="generated-help">
              This is a workflow bot: its code is generated from its bot JSON each time it is published, so it is read-only here.
              Change the workflows in the bot JSON and publish it again (<code>publishFromBotJson</code> or{' '}
              <code>parley bot deploy</code>). <a href={href(paths.bot(ws, bot.id, 'code/bot-json'))}>View the bot JSON</a>
            </p>
            <Editor id="code" label="Generated code (read-only)" value={code} readOnly describedBy="generated-help" />
          </div>
        ) : (
          <CodeEditor ws={ws} bot={bot} initial={code || sampleCode} />
        )
      }
    </QueryState>
  )
}
