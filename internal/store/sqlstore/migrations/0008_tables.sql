-- Tables (issue 15): a bot's tables, their rows as JSON documents (TEXT,
-- read with json_extract on SQLite and ::jsonb on PostgreSQL), and their
-- jobs (export, import, duplicate). Row ids count per table from 1
-- (bot_tables.next_row_id). Timestamps are Unix milliseconds.

CREATE TABLE bot_tables (
    id          TEXT PRIMARY KEY,
    bot_id      TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    schema      TEXT NOT NULL,
    key_column  TEXT NOT NULL DEFAULT '',
    frozen      BOOLEAN NOT NULL DEFAULT FALSE,
    factor      INTEGER NOT NULL DEFAULT 1,
    tags        TEXT NOT NULL DEFAULT '{}',
    next_row_id BIGINT NOT NULL DEFAULT 1,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    UNIQUE (bot_id, name)
);

CREATE TABLE table_rows (
    table_id   TEXT NOT NULL REFERENCES bot_tables (id) ON DELETE CASCADE,
    id         BIGINT NOT NULL,
    data       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (table_id, id)
);

CREATE TABLE table_jobs (
    id         TEXT PRIMARY KEY,
    bot_id     TEXT NOT NULL,
    table_id   TEXT NOT NULL REFERENCES bot_tables (id) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    status     TEXT NOT NULL,
    progress   INTEGER NOT NULL DEFAULT 0,
    input_file TEXT NOT NULL DEFAULT '',
    output     TEXT NOT NULL DEFAULT '',
    format     TEXT NOT NULL DEFAULT '',
    error      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX table_jobs_table ON table_jobs (table_id, created_at);
