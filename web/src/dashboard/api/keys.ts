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
  files: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'files'] as const,
  passages: (ws: string, botId: string, fileId: string) => ['ws', ws, 'bot', botId, 'files', fileId, 'passages'] as const,
  knowledgeBases: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'knowledgeBases'] as const,
  search: (ws: string, botId: string, query: string, kb: string) => ['ws', ws, 'bot', botId, 'search', query, kb] as const,
  tables: (ws: string, botId: string) => ['ws', ws, 'bot', botId, 'tables'] as const,
  table: (ws: string, botId: string, table: string) => ['ws', ws, 'bot', botId, 'tables', table] as const,
  rows: (ws: string, botId: string, table: string, query: unknown) => ['ws', ws, 'bot', botId, 'tables', table, 'rows', query] as const,
  jobs: (ws: string, botId: string, table: string) => ['ws', ws, 'bot', botId, 'tables', table, 'jobs'] as const,
}
