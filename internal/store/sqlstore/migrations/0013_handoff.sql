-- Support teams (issue 19): human handoff and the figures of analytics.
--
-- handoffs: a conversation handed over to humans, waiting (the bot asked)
-- or active (an operator took it over); the row goes on hand back. While a
-- row exists the bot's turns for the conversation are skipped.
CREATE TABLE handoffs (
    bot_id           TEXT NOT NULL,
    conversation_id  TEXT NOT NULL,
    status           TEXT NOT NULL,
    reason           TEXT NOT NULL DEFAULT '',
    requested_by     TEXT NOT NULL DEFAULT '',
    requested_at     BIGINT NOT NULL,
    agent_account_id TEXT NOT NULL DEFAULT '',
    agent_user_id    TEXT NOT NULL DEFAULT '',
    agent_name       TEXT NOT NULL DEFAULT '',
    taken_at         BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (bot_id, conversation_id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX handoffs_bot_requested ON handoffs (bot_id, requested_at, conversation_id);

-- turn_runs: one row per turn a bot ran, written with the turn's
-- completion: its time and whether it failed (analytics' p50/p95 and
-- failures). Kept when the conversation is deleted; goes with the bot.
CREATE TABLE turn_runs (
    bot_id          TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    ran_at          BIGINT NOT NULL,
    duration_ms     BIGINT NOT NULL,
    failed          BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (bot_id, conversation_id, seq)
);
CREATE INDEX turn_runs_bot_time ON turn_runs (bot_id, ran_at);

-- Analytics read a bot's messages and users by time (conversations have
-- their index already).
CREATE INDEX messages_bot_created ON messages (bot_id, created_at);
CREATE INDEX chat_users_bot_created ON chat_users (bot_id, created_at);
