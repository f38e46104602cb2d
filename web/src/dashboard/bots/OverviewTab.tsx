import type { Bot } from '../api/client'
import { ChatApiCard } from './ChatApiCard'
import { SettingsCard } from './SettingsCard'
import { WebchatCard } from './WebchatCard'

/** The bot's settings, and how to reach it: webchat and the Chat API. */
export function OverviewTab({ ws, bot }: { ws: string; bot: Bot }) {
  return (
    <div className="grid">
      <SettingsCard ws={ws} bot={bot} />
      {bot.integrations.webchat && <WebchatCard bot={bot} />}
      {bot.integrations.chat && <ChatApiCard ws={ws} bot={bot} />}
    </div>
  )
}
