// Reports the bot-side event object back to the user, so the test can check
// it field by field through the real @botpress/chat client.
function describe(event) {
  return { event: JSON.parse(JSON.stringify(event)), keys: Object.keys(event).sort(), createdOnIsDate: event.createdOn instanceof Date }
}

bot.hook('before_outgoing_message', async ({ event }) => {
  if (event.payload.type === 'text' && event.payload.text === 'report-outgoing') {
    event.payload = { type: 'text', text: JSON.stringify(describe(event)) }
  }
})

bot.on.message('*', async ({ event, message, client }) => {
  if (event.payload.type === 'text' && event.payload.text === 'outgoing') {
    await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: 'report-outgoing' } })
    return
  }
  const report = describe(event)
  report.message = message
  await client.createMessage({ conversationId: message.conversationId, payload: { type: 'text', text: JSON.stringify(report) } })
})

bot.on.event('chat:custom', async ({ event, client }) => {
  await client.createMessage({ conversationId: event.conversationId, payload: { type: 'text', text: JSON.stringify(describe(event)) } })
})
