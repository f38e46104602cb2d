// Writes dist/build-info.json: a SHA-256 over the front-end's sources, so
// that a Go test (internal/web) can tell whether the committed dist/ was
// built from the committed sources. The same hash is computed in Go:
// files sorted by path, each contributing "path\0content\0".
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const roots = ['package.json', 'package-lock.json', 'vite.config.ts', 'vite.embed.config.ts', 'index.html', 'chat.html', 'scripts', 'src', 'public']

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
