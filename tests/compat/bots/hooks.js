// Hooks and their effects: stop, change and drop, and their order.
function record(state, what) {
  state.conversation.order = (state.conversation.order || []).concat(what)
}

bot.hook('before_incoming_message', async ({ event, state }) => {
  record(state, 'before_incoming:' + event.payload.text)
  if (event.payload.text === 'stop') return { stop: true }
  if (event.payload.text === 'shout') event.payload = { type: 'text', text: 'SHOUT' }
})
bot.hook('after_incoming_message', async ({ state }) => record(state, 'after_incoming'))
bot.hook('before_outgoing_message', async ({ event, state }) => {
  record(state, 'before_outgoing:' + event.payload.text)
  if (event.payload.text === 'echo: secret') return { drop: true }
  if (event.payload.text.startsWith('echo: ')) event.payload = { type: 'text', text: event.payload.text + ' (checked)' }
})
bot.hook('after_turn_end', async ({ state }) => record(state, 'after_turn_end'))

bot.on.message('text', async ({ event, message, client, state }) => {
  record(state, 'handler:' + event.payload.text)
  if (event.payload.text === 'order?') {
    await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: JSON.stringify(state.conversation.order) } })
    return
  }
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'echo: ' + event.payload.text } })
})
