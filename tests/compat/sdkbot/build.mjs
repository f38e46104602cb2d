// Builds the SDK bot into one CommonJS bundle for Node.js, the way the
// Botpress CLI does (esbuild, platform node, format cjs): the bot is
// module.exports.default and `handler` is exported. Prints the bundle's
// path (OUT, default ./dist/bot.cjs).
import * as esbuild from 'esbuild'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

const here = path.dirname(fileURLToPath(import.meta.url))
const out = process.env.OUT || path.join(here, 'dist', 'bot.cjs')
await esbuild.build({
  entryPoints: [path.join(here, 'bot.cjs')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  logLevel: 'warning',
})
console.log(out)
