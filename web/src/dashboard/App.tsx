// The dashboard: the sign-in form until a token is stored, then the shell
// (top bar and the page the URL names). Each screen lives in its feature
// folder; shared parts in ui/, the API clients in api/.
import { useState } from 'react'
import { useLocation } from 'wouter'
import { forgetClients } from './api/client'
import { queryClient } from './api/queryClient'
import { session } from './api/session'
import { paths } from './routes'
import { Shell } from './shell/Shell'
import { SignIn } from './shell/SignIn'

export function App() {
  const [signedIn, setSignedIn] = useState(() => !!session.token)
  const [, navigate] = useLocation()
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />
  return (
    <Shell
      onSignOut={() => {
        session.token = ''
        forgetClients()
        queryClient.clear()
        navigate(paths.home)
        setSignedIn(false)
      }}
    />
  )
}
