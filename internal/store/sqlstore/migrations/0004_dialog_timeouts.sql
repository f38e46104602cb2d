-- Workflow bots: when each conversation's dialog times out for inactivity.
-- Written in the transaction that stores the dialog state, removed when the
-- dialog ends; the workflow scheduler (one node) queues a timeout turn for
-- every row due, so timeouts survive restarts and fire on any node.
CREATE TABLE dialog_timeouts (
    bot_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id         TEXT NOT NULL DEFAULT '',
    due_at          BIGINT NOT NULL,
    PRIMARY KEY (bot_id, conversation_id),
    FOREIGN KEY (bot_id, conversation_id) REFERENCES conversations (bot_id, id) ON DELETE CASCADE
);
CREATE INDEX dialog_timeouts_due ON dialog_timeouts (due_at);
