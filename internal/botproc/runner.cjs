// Parley's runner for a deployed bot bundle (package botproc). It loads the
// CommonJS bundle named by argv[2], serves its `handler` (the
// @botpress/sdk handler: { method, path, query, headers, body } ->
// { status, headers, body }) on 127.0.0.1 at a random port, and reports the
// port on its first line of stdout. GET /health answers 200.
'use strict'
const http = require('node:http')

const bundle = require(process.argv[2])
const handler =
  (typeof bundle.handler === 'function' && bundle.handler) ||
  (bundle.default && typeof bundle.default.handler === 'function' && bundle.default.handler)
if (!handler) {
  console.error('parley runner: the bundle exports no handler (expected module.exports.handler or module.exports.default.handler)')
  process.exit(78)
}
const timeoutMs = Number(process.env.PARLEY_CALL_TIMEOUT_MS || 60000)

const server = http.createServer((req, res) => {
  let body = ''
  req.setEncoding('utf8')
  req.on('data', (c) => (body += c))
  req.on('end', async () => {
    const url = new URL(req.url || '/', 'http://127.0.0.1')
    if (url.pathname === '/health') {
      res.writeHead(200).end('ok')
      return
    }
    const headers = {}
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers[req.rawHeaders[i].toLowerCase()] = req.rawHeaders[i + 1]
    let timer
    const limit = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ status: 504, body: JSON.stringify({ error: 'the bot handler timed out' }) }), timeoutMs)
    })
    try {
      const out = await Promise.race([
        handler({ method: req.method, path: url.pathname, query: url.search.replace(/^\?/, ''), headers, body: body || undefined }),
        limit,
      ])
      res.writeHead((out && out.status) || 200, (out && out.headers) || {}).end((out && out.body) || '{}')
    } catch (err) {
      res.writeHead(500).end(JSON.stringify({ error: String((err && err.message) || err) }))
    } finally {
      clearTimeout(timer)
    }
  })
})
server.keepAliveTimeout = 120000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ parleyRunner: { port: server.address().port } }) + '\n')
})
