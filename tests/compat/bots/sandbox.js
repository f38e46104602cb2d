// Misbehaving code: the turn must end cleanly and the bot keep answering.
bot.on.message('text', async ({ event, message, client, logger, state }) => {
  const text = event.payload.text
  const reply = (t) => client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: t } })
  if (text === 'loop') {
    for (;;) {}
  }
  if (text === 'throw') throw new Error('boom from bot code')
  if (text === 'reject') return Promise.reject(new Error('rejected from bot code'))
  if (text === 'escape') {
    const probes = ['require', 'process', 'fetch', 'setTimeout', 'XMLHttpRequest', 'module', 'Buffer']
    return reply(probes.map((p) => p + ':' + typeof globalThis[p]).join(' '))
  }
  if (text === 'count') {
    state.user.count = (state.user.count || 0) + 1
    logger.info('count is now', state.user.count)
    return reply('count=' + state.user.count)
  }
  return reply('ok: ' + text)
})
