// Where the dashboard's API lives and who is signed in.

const TOKEN_KEY = 'parley.token'

/** The access token the user signed in with, kept in local storage. */
export const session = {
  get token(): string {
    return localStorage.getItem(TOKEN_KEY) ?? ''
  },
  set token(v: string) {
    if (v) localStorage.setItem(TOKEN_KEY, v)
    else localStorage.removeItem(TOKEN_KEY)
  },
}

// The API base: the dashboard is served by the same Parley at the root of
// its public URL (the <base href> the server writes). Under `npm run dev`
// it is Vite's server, which proxies /v1 to a running `parley serve`.
export const baseURL = new URL('.', document.baseURI).href.replace(/\/$/, '')
