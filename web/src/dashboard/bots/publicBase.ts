import type { Bot } from '../api/client'

/** The public URL of this Parley, as the bot's webchat webhook names it. */
export function publicBase(bot: Bot): string {
  const wc = bot.integrations.webchat
  if (wc?.webhookUrl) return wc.webhookUrl.replace(/\/webchat\/[^/]+$/, '')
  return location.origin
}

/** The bot's hosted chat page, /w/{clientId}. */
export function hostedPage(bot: Bot): string {
  return `${publicBase(bot)}/w/${bot.integrations.webchat?.webhookId}`
}
