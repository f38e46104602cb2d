// Builds an integration of this folder the way the Botpress CLI builds one:
// esbuild bundles <dir>/src/index.js with @botpress/sdk into one CommonJS
// file for Node.js (dist/index.cjs: `handler` and `default` exported, what
// Parley's supervisor runs), and the definition becomes dist/definition.json,
// the body of the Admin API's createIntegration (name, version,
// configuration, channels, actions, events, states, user; JSON schemas).
// Each integration's build.mjs calls it with its own folder.
//
// Packages come from the integration's node_modules (`npm install`), else
// from the repository's tests/compat/node_modules (what the test suite
// installs). Prints the bundle's path. OUT_DIR overrides dist/.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'

export async function buildIntegration(here) {
  const outDir = process.env.OUT_DIR || path.join(here, 'dist')
  const fallback = path.join(here, '..', '..', 'tests', 'compat', 'node_modules')
  const nodePaths = [path.join(here, 'node_modules'), fallback].filter((p) => fs.existsSync(path.join(p, '@botpress', 'sdk')))
  if (!nodePaths.length) {
    console.error('build: @botpress/sdk not found: run `npm install` here (or `npm ci` in tests/compat)')
    process.exit(2)
  }
  const require = createRequire(path.join(nodePaths[0], 'x.js'))
  const esbuild = require('esbuild')

  fs.mkdirSync(outDir, { recursive: true })
  const bundle = path.join(outDir, 'index.cjs')
  await esbuild.build({
    entryPoints: [path.join(here, 'src', 'index.js')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    nodePaths,
    logLevel: 'warning',
  })

  // The definition, as JSON schemas (zui's toJSONSchema, as the CLI does),
  // read from the bundle (which carries the SDK).
  const { definition } = require(bundle)
  const schema = (s) => s.toJSONSchema()
  const mapValues = (o, fn) => Object.fromEntries(Object.entries(o || {}).map(([k, v]) => [k, fn(v)]))
  const body = {
    name: definition.name,
    version: definition.version,
    title: definition.title,
    description: definition.description,
    readme: fs.readFileSync(path.join(here, 'README.md'), 'utf8'),
    configuration: { schema: schema(definition.configuration.schema) },
    channels: mapValues(definition.channels, (c) => ({
      title: c.title,
      messages: mapValues(c.messages, (m) => ({ schema: schema(m.schema) })),
      message: c.message,
      conversation: c.conversation,
    })),
    actions: mapValues(definition.actions, (a) => ({
      title: a.title,
      description: a.description,
      input: { schema: schema(a.input.schema) },
      output: { schema: schema(a.output.schema) },
    })),
    events: {},
    states: {},
    user: definition.user,
  }
  fs.writeFileSync(path.join(outDir, 'definition.json'), JSON.stringify(body, null, 2) + '\n')
  console.log(bundle)
}
