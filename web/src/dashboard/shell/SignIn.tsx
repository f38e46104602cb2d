import { useState, type FormEvent } from 'react'
import { useMutation } from '@tanstack/react-query'
import { adminClient } from '../api/client'
import { keys } from '../api/keys'
import { queryClient } from '../api/queryClient'
import { session } from '../api/session'
import { ErrorBox } from '../ui/ErrorBox'
import { Logo } from '../ui/Logo'

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('')
  const signIn = useMutation({
    // getAccount with the pasted token: it answers only for a valid one.
    mutationFn: (t: string) => adminClient(undefined, t).getAccount({}),
    onSuccess: (me, t) => {
      session.token = t
      queryClient.setQueryData(keys.account, me)
      onSignedIn()
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    signIn.mutate(token.trim())
  }
  const error = signIn.error
  return (
    <main className="signin">
      <form onSubmit={submit} className="card" aria-labelledby="signin-title">
        <div className="brand big">
          <Logo /> Parley
        </div>
        <h1 id="signin-title">Sign in</h1>
        <p className="muted">
          Paste an access token: the admin token printed at first start (also in <code>parley-data/admin-token</code>), or
          one made with <code>parley token create</code>.
        </p>
        <label htmlFor="token">Access token</label>
        <input
          id="token"
          type="password"
          autoComplete="current-password"
          value={token}
          onChange={(e) => setToken(e.target.value)}
          required
          autoFocus
        />
        {error && <ErrorBox error={error.message.includes('invalid token') ? new Error('This token is not valid.') : error} />}
        <button type="submit" disabled={signIn.isPending || !token.trim()}>
          {signIn.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  )
}
