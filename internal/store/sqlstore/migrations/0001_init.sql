-- Portable SQL: runs unchanged on SQLite and PostgreSQL. Ids are strings from
-- model.NewID, timestamps are Unix milliseconds, JSON is TEXT. Bot-owned rows
-- hang off bots with ON DELETE CASCADE so deleting a bot removes its data.

CREATE TABLE accounts (
    id              TEXT PRIMARY KEY,
    email           TEXT NOT NULL,
    display_name    TEXT NOT NULL DEFAULT '',
    profile_picture TEXT NOT NULL DEFAULT '',
    email_verified  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX accounts_email ON accounts (email);

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    account_id   TEXT NOT NULL DEFAULT '',
    bot_id       TEXT NOT NULL DEFAULT '',
    workspace_id TEXT NOT NULL DEFAULT '',
    note         TEXT NOT NULL DEFAULT '',
    hash         TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX tokens_hash ON tokens (hash);
CREATE INDEX tokens_account ON tokens (account_id, created_at, id);
CREATE INDEX tokens_bot ON tokens (bot_id, created_at, id);

CREATE TABLE workspaces (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    owner_id        TEXT NOT NULL,
    spending_limit  DOUBLE PRECISION NOT NULL DEFAULT 0,
    about           TEXT NOT NULL DEFAULT '',
    profile_picture TEXT NOT NULL DEFAULT '',
    contact_email   TEXT NOT NULL DEFAULT '',
    website         TEXT NOT NULL DEFAULT '',
    social_accounts TEXT NOT NULL DEFAULT 'null',
    is_public       BOOLEAN NOT NULL DEFAULT FALSE,
    handle          TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
-- Handles are optional; only non-empty ones must be unique.
CREATE UNIQUE INDEX workspaces_handle ON workspaces (handle) WHERE handle <> '';

CREATE TABLE members (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE UNIQUE INDEX members_workspace_account ON members (workspace_id, account_id);
CREATE INDEX members_workspace_created ON members (workspace_id, created_at, id);
CREATE INDEX members_account ON members (account_id);

CREATE TABLE audit_records (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    recorded_at   BIGINT NOT NULL,
    account_id    TEXT NOT NULL DEFAULT '',
    email         TEXT NOT NULL DEFAULT '',
    action        TEXT NOT NULL,
    resource_id   TEXT NOT NULL DEFAULT '',
    resource_name TEXT NOT NULL DEFAULT '',
    value         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_records_workspace ON audit_records (workspace_id, recorded_at, id);

CREATE TABLE bots (
    id                 TEXT PRIMARY KEY,
    workspace_id       TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name               TEXT NOT NULL DEFAULT '',
    description        TEXT NOT NULL DEFAULT '',
    dev                BOOLEAN NOT NULL DEFAULT FALSE,
    type               TEXT NOT NULL DEFAULT '',
    tags               TEXT NOT NULL DEFAULT 'null',
    spec               TEXT NOT NULL DEFAULT 'null',
    secrets            TEXT NOT NULL DEFAULT 'null',
    code               TEXT NOT NULL DEFAULT '',
    url                TEXT NOT NULL DEFAULT '',
    max_execution_time INTEGER NOT NULL DEFAULT 0,
    always_alive       BOOLEAN NOT NULL DEFAULT FALSE,
    signing_secret     TEXT NOT NULL DEFAULT '',
    created_by         TEXT NOT NULL DEFAULT '',
    version_id         TEXT NOT NULL DEFAULT '',
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    deployed_at        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX bots_workspace_created ON bots (workspace_id, dev, created_at, id);
CREATE INDEX bots_workspace_updated ON bots (workspace_id, dev, updated_at, id);

-- bot_tags mirrors bots.tags for portable tag filtering.
CREATE TABLE bot_tags (
    bot_id TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (bot_id, key)
);
CREATE INDEX bot_tags_key_value ON bot_tags (key, value);

CREATE TABLE bot_integrations (
    bot_id        TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    enabled       BOOLEAN NOT NULL DEFAULT FALSE,
    webhook_id    TEXT NOT NULL DEFAULT '',
    configuration TEXT NOT NULL DEFAULT 'null',
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (bot_id, name)
);
CREATE UNIQUE INDEX bot_integrations_webhook ON bot_integrations (webhook_id) WHERE webhook_id <> '';

CREATE TABLE bot_versions (
    id          TEXT PRIMARY KEY,
    bot_id      TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    name        TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    code        TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL
);
CREATE INDEX bot_versions_bot ON bot_versions (bot_id, created_at, id);

CREATE TABLE bot_logs (
    id              TEXT PRIMARY KEY,
    bot_id          TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    time            BIGINT NOT NULL,
    level           TEXT NOT NULL DEFAULT '',
    message         TEXT NOT NULL DEFAULT '',
    conversation_id TEXT NOT NULL DEFAULT '',
    user_id         TEXT NOT NULL DEFAULT '',
    event_id        TEXT NOT NULL DEFAULT '',
    workflow_id     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX bot_logs_bot_time ON bot_logs (bot_id, time, id);

CREATE TABLE bot_issues (
    id           TEXT PRIMARY KEY,
    bot_id       TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    code         TEXT NOT NULL,
    category     TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    description  TEXT NOT NULL DEFAULT '',
    events_count INTEGER NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX bot_issues_bot_code ON bot_issues (bot_id, code);
CREATE INDEX bot_issues_bot_seen ON bot_issues (bot_id, last_seen_at, id);

CREATE TABLE bot_issue_events (
    id         TEXT PRIMARY KEY,
    issue_id   TEXT NOT NULL REFERENCES bot_issues (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    data       TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX bot_issue_events_issue ON bot_issue_events (issue_id, created_at, id);

CREATE TABLE chat_users (
    bot_id      TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id          TEXT NOT NULL,
    name        TEXT NOT NULL DEFAULT '',
    picture_url TEXT NOT NULL DEFAULT '',
    profile     TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id)
);

CREATE TABLE conversations (
    bot_id     TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id         TEXT NOT NULL,
    owner_id   TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    -- last_seq numbers signals, turn_seq numbers turns; both gapless per
    -- conversation because they are bumped inside the writing transaction.
    last_seq   BIGINT NOT NULL DEFAULT 0,
    turn_seq   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (bot_id, id)
);
CREATE INDEX conversations_bot_created ON conversations (bot_id, created_at, id);
CREATE INDEX conversations_owner_created ON conversations (bot_id, owner_id, created_at, id);

CREATE TABLE participants (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    added_at        BIGINT NOT NULL,
    PRIMARY KEY (bot_id, conversation_id, user_id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bot_id, user_id) REFERENCES chat_users (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX participants_added ON participants (bot_id, conversation_id, added_at, user_id);
CREATE INDEX participants_user ON participants (bot_id, user_id);

CREATE TABLE messages (
    bot_id          TEXT NOT NULL,
    id              TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id         TEXT NOT NULL DEFAULT '',
    payload         TEXT NOT NULL,
    metadata        TEXT,
    tags            TEXT NOT NULL DEFAULT 'null',
    direction       TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX messages_conversation ON messages (bot_id, conversation_id, created_at, id);

-- events.conversation_id is NULL for events outside a conversation, which
-- leaves the composite foreign key unchecked for them.
CREATE TABLE events (
    bot_id          TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    conversation_id TEXT,
    user_id         TEXT NOT NULL DEFAULT '',
    type            TEXT NOT NULL DEFAULT '',
    payload         TEXT NOT NULL DEFAULT 'null',
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX events_conversation ON events (bot_id, conversation_id, created_at, id);

CREATE TABLE signals (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    type            TEXT NOT NULL,
    data            TEXT NOT NULL DEFAULT 'null',
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (bot_id, conversation_id, seq),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);

CREATE TABLE turns (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    kind            TEXT NOT NULL,
    ref_id          TEXT NOT NULL DEFAULT '',
    user_id         TEXT NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (bot_id, conversation_id, seq),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX turns_created ON turns (created_at);

CREATE TABLE states (
    bot_id     TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    owner_id   TEXT NOT NULL,
    data       TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (bot_id, scope, owner_id)
);

CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
