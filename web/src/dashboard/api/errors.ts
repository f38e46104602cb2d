// One reading of the errors the dashboard shows: the client's ApiError
// (the API's error body, or a network failure wrapped as Unknown), or a
// plain Error raised by the dashboard itself.
import { isApiError } from '@botpress/client'

export type ErrorView = { title: string; message: string }

const unreachable = 'Parley could not be reached. Check your connection and try again.'

function isNetworkFailure(e: unknown): boolean {
  if (!isApiError(e) || e.type !== 'Unknown') return false
  const cause = e.error
  return !!cause && 'code' in cause && (cause.code === 'ERR_NETWORK' || cause.code === 'ECONNABORTED')
}

export function describeError(e: Error): ErrorView {
  if (isNetworkFailure(e)) return { title: 'Network', message: unreachable }
  if (isApiError(e)) return { title: e.type !== 'Unknown' ? e.type : 'Error', message: e.message }
  return { title: 'Error', message: e.message }
}

/** The HTTP status an API error stands for (0 when it is not one). */
export function statusOf(e: unknown): number {
  return isApiError(e) ? e.code : 0
}

/** Whether a failed read is worth retrying: network failures, 429 and 5xx. */
export function retryable(e: unknown): boolean {
  if (isNetworkFailure(e)) return true
  const s = statusOf(e)
  return s === 429 || (s >= 500 && !(isApiError(e) && e.type === 'Unknown'))
}
