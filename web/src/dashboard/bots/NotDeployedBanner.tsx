import type { Bot } from '../api/client'
import { href, paths } from '../routes'

/**
 * "Deployed: never", said where it cannot be missed: a bot with no code
 * does not answer (each message it gets is counted as an issue).
 */
export function NotDeployedBanner({ ws, bot }: { ws: string; bot: Bot }) {
  if (bot.deployedAt) return null
  return (
    <div className="warning-banner" role="status" aria-labelledby="not-deployed-title">
      <p id="not-deployed-title">
        <strong>Deployed: never.</strong> This bot has no code yet, so it does not answer: messages sent to it are stored
        and counted in <a href={href(paths.bot(ws, bot.id, 'issues'))}>Issues</a>, and nobody replies.
      </p>
      <p>
        To make it answer, write its code in the <a href={href(paths.bot(ws, bot.id, 'code'))}>Code</a> tab and
        deploy, publish a workflow in the <a href={href(paths.bot(ws, bot.id, 'json'))}>Bot JSON</a> tab, or run{' '}
        <code>parley bot deploy FOLDER --bot {bot.id}</code>.
      </p>
    </div>
  )
}
