import type { ReactNode } from 'react'
import type { UseQueryResult } from '@tanstack/react-query'
import { ErrorBox } from './ErrorBox'
import { Loading } from './Loading'

type Props<T> = {
  query: UseQueryResult<T>
  /** What is loading, for "Loading {what}…". */
  what: string
  /** When the data counts as empty, and what to show then. */
  isEmpty?: (data: T) => boolean
  empty?: ReactNode
  children: (data: T) => ReactNode
}

/**
 * The loading, error and empty states of a query, in one place: a spinner
 * until the first answer, the error with a retry button (shown above the
 * last good data when a refresh fails), the empty message, or the data.
 */
export function QueryState<T>({ query, what, isEmpty, empty, children }: Props<T>) {
  const { data, error, isPending, refetch } = query
  return (
    <>
      {isPending && <Loading what={what} />}
      {error && <ErrorBox error={error} retry={() => void refetch()} />}
      {data !== undefined && (isEmpty?.(data) ? empty : children(data))}
    </>
  )
}
