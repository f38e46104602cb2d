-- Integrations (issue 16): definitions published in a workspace, what a
-- bot's integration entry installs, integration API keys, integration logs,
-- and how far each integration-owned conversation's bot messages were
-- delivered to its integration (message_created, in signal order).
CREATE TABLE integrations (
    id                 TEXT PRIMARY KEY,
    workspace_id       TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    version            TEXT NOT NULL,
    dev                BOOLEAN NOT NULL DEFAULT FALSE,
    url                TEXT NOT NULL DEFAULT '',
    code               TEXT NOT NULL DEFAULT '',
    signing_secret     TEXT NOT NULL DEFAULT '',
    title              TEXT NOT NULL DEFAULT '',
    description        TEXT NOT NULL DEFAULT '',
    icon               TEXT NOT NULL DEFAULT '',
    readme             TEXT NOT NULL DEFAULT '',
    public             BOOLEAN NOT NULL DEFAULT FALSE,
    visibility         TEXT NOT NULL DEFAULT 'private',
    max_execution_time INTEGER NOT NULL DEFAULT 0,
    spec               TEXT NOT NULL DEFAULT '{}',
    secrets            TEXT NOT NULL DEFAULT '{}',
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);
CREATE UNIQUE INDEX integrations_name_version ON integrations (workspace_id, name, version, dev);
CREATE INDEX integrations_created ON integrations (created_at, id);

ALTER TABLE bot_integrations ADD COLUMN integration_id TEXT NOT NULL DEFAULT '';
ALTER TABLE bot_integrations ADD COLUMN configuration_type TEXT NOT NULL DEFAULT '';
ALTER TABLE bot_integrations ADD COLUMN status TEXT NOT NULL DEFAULT '';
ALTER TABLE bot_integrations ADD COLUMN status_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE bot_integrations ADD COLUMN disabled_channels TEXT NOT NULL DEFAULT '[]';
ALTER TABLE bot_integrations ADD COLUMN identifier TEXT NOT NULL DEFAULT '';
CREATE INDEX bot_integrations_integration ON bot_integrations (integration_id);

ALTER TABLE tokens ADD COLUMN integration_id TEXT NOT NULL DEFAULT '';
CREATE INDEX tokens_integration ON tokens (integration_id, created_at, id);

CREATE TABLE integration_logs (
    id              TEXT PRIMARY KEY,
    integration_id  TEXT NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
    bot_id          TEXT NOT NULL DEFAULT '',
    time            BIGINT NOT NULL,
    level           TEXT NOT NULL DEFAULT '',
    message         TEXT NOT NULL DEFAULT '',
    conversation_id TEXT NOT NULL DEFAULT '',
    user_id         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX integration_logs_time ON integration_logs (integration_id, time, id);

-- The outbox's sweep reads an installed integration's conversations.
CREATE INDEX conversations_integration ON conversations (bot_id, integration);

CREATE TABLE integration_deliveries (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    delivered_seq   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (bot_id, conversation_id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
