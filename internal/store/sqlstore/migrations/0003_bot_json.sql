-- Workflow bots: a bot version may hold the bot JSON document it was
-- published from (empty for code-first versions).
ALTER TABLE bot_versions ADD COLUMN bot_json TEXT NOT NULL DEFAULT '';
