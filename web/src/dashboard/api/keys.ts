// Query keys, one place: a bot's keys start with its bot key, so that
// invalidating a bot reaches everything under it.
export const keys = {
  account: ['account'] as const,
  workspaces: ['workspaces'] as const,
  pats: ['pats'] as const,
  bots: (ws: string) => ['ws', ws, 'bots'] as const,
  members: (ws: string) => ['ws', ws, 'members'] as const,
  bot: (ws: string, botId: string) => ['ws', ws, 'bot', botId] as const,
  code: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'code'] as const,
  conversations: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'conversations'] as const,
  messages: (ws: string, botId: string, conversationId: string) => ['ws', ws, 'bot', botId, 'messages', conversationId] as const,
  logs: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'logs'] as const,
  issues: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'issues'] as const,
  handoffs: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'handoffs'] as const,
  handoff: (ws: string, botId: string, conversationId: string) => ['ws', ws, 'bot', botId, 'handoffs', conversationId] as const,
  analytics: (ws: string, botId: string, range: string) => ['ws', ws, 'bot', botId, 'analytics', range] as const,
  botJson: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'bot-json'] as const,
}
