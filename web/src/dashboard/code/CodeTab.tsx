import { useQuery } from '@tanstack/react-query'
import type { Bot } from '../api/client'
import { keys } from '../api/keys'
import { QueryState } from '../ui/QueryState'
import { CodeEditor } from './CodeEditor'
import { deployedCode, sampleCode } from './deployedCode'

/** The bot's code: loads the deployed version, then edits and deploys it. */
export function CodeTab({ ws, bot }: { ws: string; bot: Bot }) {
  const current = useQuery({ queryKey: keys.code(ws, bot.id), queryFn: () => deployedCode(ws, bot.id) })
  return (
    <QueryState query={current} what="the code">
      {(code) => <CodeEditor ws={ws} bot={bot} initial={code || sampleCode} />}
    </QueryState>
  )
}
