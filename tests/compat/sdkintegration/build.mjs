// Builds ENTRY (integration.cjs or bot.cjs) into one CommonJS bundle for
// Node.js, the way the Botpress CLI does (esbuild, platform node, format
// cjs), at OUT; prints OUT.
import * as esbuild from 'esbuild'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

const here = path.dirname(fileURLToPath(import.meta.url))
const out = process.env.OUT
await esbuild.build({
  entryPoints: [path.join(here, process.env.ENTRY)],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  logLevel: 'warning',
})
console.log(out)
