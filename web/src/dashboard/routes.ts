// The dashboard's URLs. They live in the hash (#/ws/{ws}/bots/...), so the
// Go server only ever serves index.html at the root; wouter reads them.
export const paths = {
  home: '/',
  tokens: '/tokens',
  bots: (ws: string) => `/ws/${ws}/bots`,
  members: (ws: string) => `/ws/${ws}/members`,
  bot: (ws: string, botId: string, tab?: string) => `/ws/${ws}/bots/${botId}${tab ? `/${tab}` : ''}`,
  conversation: (ws: string, botId: string, conversationId: string) =>
    `/ws/${ws}/bots/${botId}/conversations/${encodeURIComponent(conversationId)}`,
}

/** A path as an href for a plain <a> (hash routing). */
export const href = (path: string) => `#${path}`

/** Route patterns (wouter), matching the paths above. */
export const patterns = {
  tokens: '/tokens',
  workspace: '/ws/:ws/*?',
  workspaceHome: '/ws/:ws',
  bots: '/ws/:ws/bots',
  bot: '/ws/:ws/bots/:botId/:tab?/:sub?',
  members: '/ws/:ws/members',
} as const
