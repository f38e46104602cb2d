// The bot reads shared by the bot screens.
import { useQuery, useQueryClient } from '@tanstack/react-query'
import { adminClient } from '../api/client'
import { keys } from '../api/keys'

export function useBot(ws: string, botId: string) {
  return useQuery({ queryKey: keys.bot(ws, botId), queryFn: () => adminClient(ws).getBot({ id: botId }) })
}

/** Reads the bot again (after a write), and the workspace's bot list with it. */
export function useReloadBot(ws: string, botId: string) {
  const qc = useQueryClient()
  return () =>
    Promise.all([
      qc.invalidateQueries({ queryKey: keys.bot(ws, botId), exact: true }),
      qc.invalidateQueries({ queryKey: keys.bots(ws) }),
    ])
}
