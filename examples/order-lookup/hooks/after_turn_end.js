// Keeps a count of turns per conversation.
conversation.turns = (conversation.turns || 0) + 1
