-- Fewer pages written per chat message (issue 18). Every message's turn
-- writes a turns row, deletes it on completion and writes a turn_runs row,
-- in the same transactions as the message and its reply. Counted in the
-- WAL of a closed-loop run on SQLite (35 pages per group commit), these
-- tables' b-trees were 11 of those pages (2 after):
--
-- * turn_runs' primary key (bot_id, conversation_id, seq) put every run on
--   its conversation's page of an index no query reads (analytics read by
--   bot and time, through turn_runs_bot_time). Its use was to record a run
--   once when its completion is committed again (ON CONFLICT DO NOTHING).
--   The key is now (bot_id, ran_at, conversation_id, seq): a run keeps its
--   ran_at when its completion is retried, so the retry is still caught;
--   it is the index analytics read, in time order, so a new run goes on the
--   index's last page; and it replaces turn_runs_bot_time. On SQLite the
--   table is WITHOUT ROWID, clustered on that key: one b-tree in all,
--   where there were three.
-- * turns_created (created_at) served no query: the dispatcher's reads
--   scan the primary key (EXPLAIN QUERY PLAN).
-- * On SQLite, turns becomes WITHOUT ROWID, clustered on its key: an insert
--   and a delete write one b-tree, not the table and its key's index. Its
--   rows are small (a kind, two ids, a time), what WITHOUT ROWID suits;
--   signals, whose rows carry a message's JSON, stay as they are (tried:
--   no gain).
--
-- Nothing references these tables, so SQLite rebuilds them inside this
-- migration's transaction, foreign keys on. The copies leave out rows
-- whose bot or conversation is gone (the keys make them impossible, but
-- one would fail the copy, and the server's start with it).
DROP INDEX turns_created;
DROP INDEX turn_runs_bot_time;
-- only sqlite
CREATE TABLE turn_runs_new (
    bot_id          TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    ran_at          BIGINT NOT NULL,
    duration_ms     BIGINT NOT NULL,
    failed          BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (bot_id, ran_at, conversation_id, seq)
) WITHOUT ROWID;
INSERT INTO turn_runs_new (bot_id, conversation_id, seq, ran_at, duration_ms, failed)
    SELECT bot_id, conversation_id, seq, ran_at, duration_ms, failed FROM turn_runs
    WHERE bot_id IN (SELECT id FROM bots);
DROP TABLE turn_runs;
ALTER TABLE turn_runs_new RENAME TO turn_runs;

CREATE TABLE turns_new (
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
) WITHOUT ROWID;
INSERT INTO turns_new (bot_id, conversation_id, seq, kind, ref_id, user_id, attempts, created_at)
    SELECT bot_id, conversation_id, seq, kind, ref_id, user_id, attempts, created_at FROM turns t
    WHERE EXISTS (SELECT 1 FROM conversations c WHERE c.bot_id = t.bot_id AND c.id = t.conversation_id);
DROP TABLE turns;
ALTER TABLE turns_new RENAME TO turns;
-- end
-- only postgres
ALTER TABLE turn_runs DROP CONSTRAINT turn_runs_pkey;
ALTER TABLE turn_runs ADD PRIMARY KEY (bot_id, ran_at, conversation_id, seq);
-- end
