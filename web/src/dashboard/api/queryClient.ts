// The data cache: every read of the dashboard goes through React Query,
// which holds the loading and error states, retries and polling.
import { QueryClient } from '@tanstack/react-query'
import { retryable } from './errors'

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // Up to two retries, and only for failures that may pass (network,
      // 429, 5xx); a 4xx is shown at once.
      retry: (failures, error) => failures < 2 && retryable(error),
      // Data is read again whenever a screen opens, as before; not on
      // window focus (an editor must not be reset under the user's hands).
      refetchOnWindowFocus: false,
      // Polling (refetchInterval) pauses while the tab is hidden.
      refetchIntervalInBackground: false,
    },
    mutations: { retry: false },
  },
})
