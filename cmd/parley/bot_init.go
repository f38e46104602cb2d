package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// scaffold is the bot folder `parley bot init` writes.
var scaffold = map[string]string{
	"bot.yaml": `# A Parley workflow bot. See docs/bot-json.md for the format.
# Strings written "file:<path>" are replaced by that file when the bot is built.
name: my-bot
settings:
  inactivityTimeout: 30
  nodeRepetitionLimit: 20
variables:
  - { name: name, scope: user, type: string }
intents:
  greeting:
    utterances: [hello, hi there, good morning]
    keywords: [hey]
triggers:
  - { type: intent, intent: greeting, workflow: main }
hooks:
  before_incoming_message: file:hooks/before_incoming_message.js
actions:
  greet:
    code: file:actions/greet.js
workflows:
  main:
    nodes:
      start:
        type: start
        cards:
          - { type: capture, kind: raw, variable: user.name, prompt: "Hi! What is your name?", skipIfSet: true }
          - { type: action, action: greet, input: { name: "{{ user.name }}" }, output: workflow.greeting }
          - { type: message, payload: "{{ workflow.greeting }}" }
          - { type: code, code: file:code/count.js }
          - { type: message, payload: "You have talked to me {{ user.visits }} time(s)." }
`,
	"hooks/before_incoming_message.js": `// Runs before every incoming message. Return { stop: true } to ignore it.
if (event.preview === '') return { stop: true }
`,
	"actions/greet.js": `// An action: input is the call's input, its result goes to the card's output variable.
return 'Nice to meet you, ' + input.name + '!'
`,
	"code/count.js": `// A code card: event, user, conversation, bot, workflow, session, actions, client and logger are in scope.
user.visits = (user.visits || 0) + 1
logger.info('visit', user.visits)
`,
	"tests/hello.yaml": `name: greets the user by name
conversation:
  - user: hello
  - bot: "Hi! What is your name?"
  - user: Ada
  - bot: "Nice to meet you, Ada!"
  - bot: "You have talked to me 1 time(s)."
  - user: hey
  - bot: "Nice to meet you, Ada!"
  - bot: "You have talked to me 2 time(s)."
`,
}

func botInit(dir string, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, "bot.yaml")); err == nil {
		return fmt.Errorf("%s already holds a bot.yaml", dir)
	}
	for p, content := range scaffold {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "created a workflow bot in %s: edit bot.yaml, then run `parley bot test %s`\n", dir, dir)
	return nil
}
