// Builds the Telegram integration (../build-integration.mjs): dist/index.cjs and
// dist/definition.json; prints the bundle's path. OUT_DIR overrides dist/.
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { buildIntegration } from '../build-integration.mjs'

await buildIntegration(path.dirname(fileURLToPath(import.meta.url)))
