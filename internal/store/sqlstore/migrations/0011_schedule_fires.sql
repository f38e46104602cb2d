-- Schedule triggers fire exactly once per scheduled time across nodes
-- (issue 17): each workflow bot's schedule trigger keeps the last
-- scheduled time it fired. The scheduler leader advances it (a
-- conditional update, fenced by its lease epoch) in the transaction that
-- commits the firing's effects; a new leader fires the times after it.
CREATE TABLE schedule_fires (
    bot_id      TEXT NOT NULL REFERENCES bots (id) ON DELETE CASCADE,
    trigger_id  TEXT NOT NULL,
    fired_up_to BIGINT NOT NULL,
    PRIMARY KEY (bot_id, trigger_id)
);
