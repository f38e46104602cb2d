// Botkit's echo bot on its web adapter: a side-by-side target of
// cmd/parley-bench. POST /api/messages {"type":"message","text":...,
// "user":...} is answered synchronously with the bot's replies in the HTTP
// response body ([{"type":"message","text":...}]). Nothing is stored but
// Botkit's in-memory conversation state.
//
//   node echo.js [PORT]    (or PORT=... node echo.js; listens on 127.0.0.1)
//
// Botkit's own web server would listen on every interface, so the bot gets
// an Express app of ours, with the JSON body parser Botkit itself uses,
// bound to loopback; the adapter's websocket server is not attached to it
// (noServer): webhook requests only.
'use strict'
const express = require('express')
const { Botkit } = require('botkit')
const { WebAdapter } = require('botbuilder-adapter-web')

const port = Number(process.argv[2] || process.env.PORT || 3000)
const app = express()
app.use(express.json({ limit: '100kb' }))

const controller = new Botkit({
  adapter: new WebAdapter({ noServer: true }),
  webserver: app,
  disable_console: true
})

controller.on('message', async (bot, message) => {
  await bot.reply(message, message.text)
})

controller.ready(() => {
  const server = app.listen(port, '127.0.0.1')
  // The benchmark's clients keep their connections between rounds (Node
  // closes idle ones after 5 s by default, racing the next request).
  server.keepAliveTimeout = 120000
  const stop = () => { server.close(() => process.exit(0)); server.closeAllConnections() }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
})
