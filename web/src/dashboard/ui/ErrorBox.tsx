import { describeError } from '../api/errors'

/** An error as the API (or the dashboard) worded it, with an optional retry. */
export function ErrorBox({ error, retry }: { error: Error; retry?: () => void }) {
  const { title, message } = describeError(error)
  return (
    <div className="error" role="alert">
      <p>
        <strong>{title}:</strong> {message}
      </p>
      {retry && (
        <button type="button" className="secondary" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  )
}
