// Writes dist/build-info.json: a SHA-256 over the front-end's sources, so
// that a Go test (internal/web) can tell whether the committed dist/ was
// built from the committed sources. The same hash is computed in Go:
// files sorted by path, each contributing "path\0content\0".
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const roots = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.node.json', 'eslint.config.js', 'vite.config.ts', 'vite.embed.config.ts', 'index.html', 'chat.html', 'scripts', 'src', 'public']

function walk(p, out) {
  const full = join(root, p)
  if (statSync(full).isDirectory()) {
    for (const name of readdirSync(full)) walk(join(p, name), out)
  } else {
    out.push(relative(root, full).split(sep).join('/'))
  }
}

const files = []
for (const r of roots) walk(r, files)
files.sort()
const h = createHash('sha256')
for (const f of files) {
  h.update(f + '\0')
  h.update(readFileSync(join(root, f)))
  h.update('\0')
}
writeFileSync(join(root, 'dist', 'build-info.json'), JSON.stringify({ sourceHash: h.digest('hex'), files: files.length }, null, 2) + '\n')
console.log('dist/build-info.json written')

// Bundle size per page: the scripts and styles each HTML page loads
// (following the chunks' static imports), raw and gzipped.
const dist = join(root, 'dist')
const kB = (n) => (n / 1000).toFixed(1) + ' kB'
function assetsOf(html) {
  const seen = new Set()
  const queue = [...readFileSync(join(dist, html), 'utf8').matchAll(/(?:src|href)="\.?\/?(assets\/[^"]+)"/g)].map((m) => m[1])
  while (queue.length) {
    const f = queue.shift()
    if (seen.has(f)) continue
    seen.add(f)
    if (f.endsWith('.js')) {
      for (const m of readFileSync(join(dist, f), 'utf8').matchAll(/from\s*"\.\/([^"]+\.js)"/g)) queue.push('assets/' + m[1])
    }
  }
  return [...seen]
}
for (const [name, files] of [['dashboard (index.html)', assetsOf('index.html')], ['hosted chat (chat.html)', assetsOf('chat.html')], ['embed script', ['webchat.js']]]) {
  let raw = 0
  let gz = 0
  for (const f of files) {
    const b = readFileSync(join(dist, f))
    raw += b.length
    gz += gzipSync(b).length
  }
  console.log(`bundle size: ${name}: ${kB(raw)}, ${kB(gz)} gzipped (${files.length} files)`)
}
