-- The Files API (docs/files-api.md): file metadata and upload nonces,
-- passages of indexed files with a full-text index, knowledge bases.
-- Lines between "-- only <engine>" and "-- end" run on that engine only
-- (forDialect in migrate.go): SQLite's FTS5 table, PostgreSQL's tsvector.

ALTER TABLE files ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE files ADD COLUMN upload_nonce TEXT NOT NULL DEFAULT '';
CREATE INDEX files_bot_key ON files (bot_id, file_key);

-- terms: the passage's stemmed words (English and French Snowball stems,
-- computed in Go by files.Terms), which the full-text index holds.
CREATE TABLE file_passages (
    bot_id      TEXT NOT NULL,
    file_id     TEXT NOT NULL,
    id          TEXT NOT NULL,
    position    INTEGER NOT NULL,
    content     TEXT NOT NULL,
    subtype     TEXT NOT NULL DEFAULT 'paragraph',
    page_number INTEGER NOT NULL DEFAULT 0,
    breadcrumb  TEXT NOT NULL DEFAULT '',
    terms       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (bot_id, file_id, position),
    FOREIGN KEY (bot_id, file_id) REFERENCES files (bot_id, id) ON DELETE CASCADE
);

CREATE TABLE knowledge_bases (
    bot_id     TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    id         TEXT NOT NULL,
    name       TEXT NOT NULL,
    tags       TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (bot_id, id)
);

-- only sqlite
CREATE VIRTUAL TABLE file_passages_fts USING fts5 (terms, bot_id UNINDEXED, file_id UNINDEXED, position UNINDEXED, tokenize = 'unicode61 remove_diacritics 0');
-- end

-- only postgres
ALTER TABLE file_passages ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED;
CREATE INDEX file_passages_tsv ON file_passages USING GIN (tsv);
-- end
