// The "hello bot" the @botpress/chat e2e tests assume (the upstream client's e2e suite),
// written with Parley's code API.
bot.on.message('*', async ({ message, client }) => {
  const p = message.payload
  const conversationId = message.conversationId
  if (p.type === 'text' && p.text === 'metadata') {
    await client.createMessage({ conversationId, payload: { type: 'text', text: 'metadata' }, metadata: message.metadata })
  } else if (p.type === 'text' && p.text === 'bloc') {
    await client.createMessage({
      conversationId,
      payload: {
        type: 'bloc',
        items: [
          { type: 'text', text: 'Hello, world!' },
          { type: 'image', imageUrl: 'https://example.com/image.png' },
          { type: 'audio', audioUrl: 'https://example.com/audio.mp3' },
        ],
      },
    })
  } else if (p.type === 'text') {
    await client.createMessage({ conversationId, payload: { type: 'text', text: `Hi! You said: "${p.text.toLowerCase()}"` } })
  } else {
    await client.createMessage({ conversationId, payload: { type: 'text', text: 'I only understand text messages' } })
  }
})

bot.on.event('chat:custom', async ({ event, client }) => {
  await client.createEvent({ conversationId: event.conversationId, payload: event.payload })
})
