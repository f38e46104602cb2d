export function Logo() {
  return (
    <svg aria-hidden="true" width="26" height="26" viewBox="0 0 32 32">
      <rect width="32" height="32" rx="8" fill="#4f46e5" />
      <path d="M9 10h14a3 3 0 0 1 3 3v6a3 3 0 0 1-3 3h-7l-5 4v-4H9a3 3 0 0 1-3-3v-6a3 3 0 0 1 3-3z" fill="#fff" />
    </svg>
  )
}
