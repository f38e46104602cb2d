// The Telegram integration's definition, written with the unchanged
// @botpress/sdk 5.4.3: its configuration, its one channel and the message
// types it sends, the tags of its users, conversations and messages, and its
// actions. build.mjs turns it into dist/definition.json, the body of the
// Admin API's createIntegration.
'use strict'
const { IntegrationDefinition, z, messages } = require('@botpress/sdk')

const DEFAULT_API_BASE_URL = 'https://api.telegram.org'

const definition = new IntegrationDefinition({
  name: 'telegram',
  version: '1.0.0',
  title: 'Telegram',
  description: 'Talk with Telegram users: text, images, choices as buttons and cards.',
  readme: 'README.md',
  configuration: {
    schema: z.object({
      botToken: z.string().min(1).describe('The bot token @BotFather gave you (123456:ABC-...)'),
      apiBaseUrl: z
        .string()
        .url()
        .optional()
        .describe(`The Telegram Bot API's base URL (default ${DEFAULT_API_BASE_URL}; a local Bot API server, or a test double)`),
    }),
  },
  channels: {
    channel: {
      title: 'Telegram chat',
      messages: {
        text: messages.defaults.text,
        image: messages.defaults.image,
        choice: messages.defaults.choice,
        dropdown: messages.defaults.dropdown,
        card: messages.defaults.card,
        carousel: messages.defaults.carousel,
      },
      message: { tags: { id: { title: 'Telegram message id' }, chatId: { title: 'Telegram chat id' } } },
      conversation: {
        tags: { chatId: { title: 'Telegram chat id' } },
        creation: { enabled: false, requiredTags: [] },
      },
    },
  },
  user: {
    tags: { userId: { title: 'Telegram user id' } },
    creation: { enabled: false, requiredTags: [] },
  },
  actions: {
    sendTyping: {
      title: 'Send typing',
      description: 'Shows "typing…" in the conversation\'s Telegram chat for about 5 seconds.',
      input: { schema: z.object({ conversationId: z.string().min(1) }) },
      output: { schema: z.object({ chatId: z.string() }) },
    },
    getMe: {
      title: 'Get the Telegram bot',
      description: 'The Telegram bot this integration speaks as (Bot API getMe).',
      input: { schema: z.object({}) },
      output: { schema: z.object({ id: z.string(), username: z.string(), firstName: z.string() }) },
    },
  },
  events: {},
  states: {},
})

module.exports = { definition, DEFAULT_API_BASE_URL }
