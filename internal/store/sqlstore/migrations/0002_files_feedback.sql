-- Files uploaded to bots (the webchat's attachments) and message feedback.
-- file_blobs holds file contents only where the database is the file store
-- (PostgreSQL); with SQLite, contents live on disk under the data directory.

CREATE TABLE files (
    bot_id          TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    file_key        TEXT NOT NULL,
    size            BIGINT NOT NULL DEFAULT 0,
    content_type    TEXT NOT NULL DEFAULT '',
    tags            TEXT NOT NULL DEFAULT '{}',
    access_policies TEXT NOT NULL DEFAULT '[]',
    indexed         INTEGER NOT NULL DEFAULT 0,
    status          TEXT NOT NULL,
    failed_reason   TEXT NOT NULL DEFAULT '',
    conversation_id TEXT NOT NULL DEFAULT '',
    user_id         TEXT NOT NULL DEFAULT '',
    expires_at      BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id)
);

CREATE TABLE file_blobs (
    bot_id  TEXT NOT NULL,
    file_id TEXT NOT NULL,
    data    BYTEA NOT NULL,
    PRIMARY KEY (bot_id, file_id),
    FOREIGN KEY (bot_id, file_id) REFERENCES files (bot_id, id) ON DELETE CASCADE
);

CREATE TABLE message_feedback (
    bot_id     TEXT NOT NULL,
    message_id TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    value      TEXT NOT NULL,
    comment    TEXT NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (bot_id, message_id, user_id),
    FOREIGN KEY (bot_id, message_id) REFERENCES messages (bot_id, id) ON DELETE CASCADE
);
