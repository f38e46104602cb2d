-- SDK bots: the turn in flight on each conversation and the replies the bot
-- created during it (store.Deliveries), so that a turn delivered twice
-- gets its stored k-th reply back instead of a new message.
CREATE TABLE turn_deliveries (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    replies         INTEGER NOT NULL DEFAULT 0,
    active          BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (bot_id, conversation_id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE TABLE turn_replies (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    k               INTEGER NOT NULL,
    message_id      TEXT NOT NULL,
    PRIMARY KEY (bot_id, conversation_id, seq, k),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
