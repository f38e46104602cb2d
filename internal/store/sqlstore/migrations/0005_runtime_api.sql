-- The Runtime API (/v1/chat/...): tags on users, conversations and
-- messages (JSON in the row, mirrored in *_tags tables for filtering and
-- listTagValues), the conversation's integration and channel, updatable
-- messages, event status and schedules, named states with expiry,
-- workflows, tasks (client 1.35.0) and trackAnalytics counters.

ALTER TABLE chat_users ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE conversations ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE conversations ADD COLUMN integration TEXT NOT NULL DEFAULT 'chat';
ALTER TABLE conversations ADD COLUMN channel TEXT NOT NULL DEFAULT 'channel';
ALTER TABLE messages ADD COLUMN updated_at BIGINT NOT NULL DEFAULT 0;

ALTER TABLE events ADD COLUMN message_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN workflow_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN status TEXT NOT NULL DEFAULT 'processed';
ALTER TABLE events ADD COLUMN failure_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN due_at BIGINT NOT NULL DEFAULT 0;
CREATE INDEX events_bot_created ON events (bot_id, created_at, id);
CREATE INDEX events_due ON events (due_at) WHERE due_at > 0;

CREATE TABLE user_tags (
    bot_id  TEXT NOT NULL,
    user_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (bot_id, user_id, key),
    FOREIGN KEY (bot_id, user_id) REFERENCES chat_users (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX user_tags_key_value ON user_tags (bot_id, key, value);

CREATE TABLE conversation_tags (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    key             TEXT NOT NULL,
    value           TEXT NOT NULL,
    PRIMARY KEY (bot_id, conversation_id, key),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX conversation_tags_key_value ON conversation_tags (bot_id, key, value);

CREATE TABLE message_tags (
    bot_id     TEXT NOT NULL,
    message_id TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (bot_id, message_id, key),
    FOREIGN KEY (bot_id, message_id) REFERENCES messages (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX message_tags_key_value ON message_tags (bot_id, key, value);

-- Named states; owner_id is the id of the user, conversation, bot, ... the
-- state is attached to. expires_at is 0 when the state never expires.
CREATE TABLE runtime_states (
    bot_id     TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    owner_id   TEXT NOT NULL,
    name       TEXT NOT NULL,
    id         TEXT NOT NULL,
    payload    TEXT NOT NULL,
    expiry     BIGINT NOT NULL DEFAULT 0,
    expires_at BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (bot_id, type, owner_id, name)
);
CREATE INDEX runtime_states_expiry ON runtime_states (expires_at) WHERE expires_at > 0;

CREATE TABLE workflows (
    bot_id             TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id                 TEXT NOT NULL,
    name               TEXT NOT NULL,
    status             TEXT NOT NULL,
    input              TEXT NOT NULL DEFAULT '{}',
    output             TEXT NOT NULL DEFAULT '{}',
    parent_workflow_id TEXT NOT NULL DEFAULT '',
    conversation_id    TEXT NOT NULL DEFAULT '',
    user_id            TEXT NOT NULL DEFAULT '',
    event_id           TEXT NOT NULL DEFAULT '',
    failure_reason     TEXT NOT NULL DEFAULT '',
    tags               TEXT NOT NULL DEFAULT '{}',
    timeout_at         BIGINT NOT NULL DEFAULT 0,
    completed_at       BIGINT NOT NULL DEFAULT 0,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id)
);
CREATE INDEX workflows_bot_created ON workflows (bot_id, created_at, id);

CREATE TABLE workflow_tags (
    bot_id      TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    PRIMARY KEY (bot_id, workflow_id, key),
    FOREIGN KEY (bot_id, workflow_id) REFERENCES workflows (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX workflow_tags_key_value ON workflow_tags (bot_id, key, value);

CREATE TABLE tasks (
    bot_id          TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    title           TEXT NOT NULL DEFAULT '',
    description     TEXT NOT NULL DEFAULT '',
    type            TEXT NOT NULL DEFAULT '',
    data            TEXT NOT NULL DEFAULT '{}',
    status          TEXT NOT NULL,
    parent_task_id  TEXT NOT NULL DEFAULT '',
    conversation_id TEXT NOT NULL DEFAULT '',
    user_id         TEXT NOT NULL DEFAULT '',
    failure_reason  TEXT NOT NULL DEFAULT '',
    tags            TEXT NOT NULL DEFAULT '{}',
    timeout_at      BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id)
);
CREATE INDEX tasks_bot_created ON tasks (bot_id, created_at, id);

CREATE TABLE task_tags (
    bot_id  TEXT NOT NULL,
    task_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (bot_id, task_id, key),
    FOREIGN KEY (bot_id, task_id) REFERENCES tasks (bot_id, id) ON DELETE CASCADE
);

-- trackAnalytics: one counter per bot, name and UTC day.
CREATE TABLE analytics (
    bot_id TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    day    TEXT NOT NULL,
    count  BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (bot_id, name, day)
);
