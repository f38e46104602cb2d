// Starts the SDK bot as a development bot on 127.0.0.1 (bot.start(port)
// listens on PORT, 0 = any free port) and prints {"port": N} once it is
// listening. BP_API_URL and BP_TOKEN point the bot at Parley.
'use strict'
const bot = require('./bot.cjs').default
bot.start(Number(process.env.PORT || 0)).then((server) => {
  server.on('listening', () => console.log(JSON.stringify({ port: server.address().port })))
  if (server.listening) console.log(JSON.stringify({ port: server.address().port }))
})
