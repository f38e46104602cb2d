// The Slack integration's definition, written with the unchanged
// @botpress/sdk 5.4.3: its configuration, its one channel and the message
// types it sends, the tags of its users, conversations and messages, and its
// action. build.mjs turns it into dist/definition.json, the body of the
// Admin API's createIntegration.
'use strict'
const { IntegrationDefinition, z, messages } = require('@botpress/sdk')

const DEFAULT_API_BASE_URL = 'https://slack.com/api'

const definition = new IntegrationDefinition({
  name: 'slack',
  version: '1.0.0',
  title: 'Slack',
  description: 'Talk with Slack users: text, images, choices as buttons and cards.',
  readme: 'README.md',
  configuration: {
    schema: z.object({
      botToken: z.string().min(1).describe("The app's Bot User OAuth Token (xoxb-...)"),
      signingSecret: z.string().min(1).describe("The app's Signing Secret (Basic Information → App Credentials)"),
      apiBaseUrl: z
        .string()
        .url()
        .optional()
        .describe(`The Slack Web API's base URL (default ${DEFAULT_API_BASE_URL}; a test double)`),
    }),
  },
  channels: {
    channel: {
      title: 'Slack channel or thread',
      messages: {
        text: messages.defaults.text,
        image: messages.defaults.image,
        choice: messages.defaults.choice,
        dropdown: messages.defaults.dropdown,
        card: messages.defaults.card,
      },
      message: { tags: { ts: { title: 'Slack message ts' }, channelId: { title: 'Slack channel id' } } },
      conversation: {
        tags: {
          channelId: { title: 'Slack channel id' },
          thread: { title: "Slack thread ts, or 'main' for the channel itself" },
        },
        creation: { enabled: false, requiredTags: [] },
      },
    },
  },
  user: {
    tags: { userId: { title: 'Slack user id' } },
    creation: { enabled: false, requiredTags: [] },
  },
  actions: {
    getBotInfo: {
      title: 'Get the Slack bot',
      description: 'The Slack bot user and workspace this integration speaks as (Web API auth.test).',
      input: { schema: z.object({}) },
      output: {
        schema: z.object({ userId: z.string(), botId: z.string(), user: z.string(), teamId: z.string(), team: z.string(), url: z.string() }),
      },
    },
  },
  events: {},
  states: {},
})

module.exports = { definition, DEFAULT_API_BASE_URL }
