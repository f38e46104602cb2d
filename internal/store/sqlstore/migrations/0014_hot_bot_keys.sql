-- The rows a turn writes for its bot (its run, its states, its logs) no
-- longer reference the bots row on PostgreSQL. Each such insert checked the
-- key with SELECT ... FOR KEY SHARE on that one row, and concurrent turns
-- of a bot then shared its lock through a MultiXact: turn_runs' foreign
-- key alone cost PostgreSQL 0.55x its CPU per chat message and 1.4x the
-- throughput (README, Performance). bots.Delete deletes these rows itself,
-- on both engines. SQLite keeps the keys: its checks lock nothing, and
-- dropping one would rebuild the table.
-- only postgres
ALTER TABLE turn_runs DROP CONSTRAINT turn_runs_bot_id_fkey;
ALTER TABLE states DROP CONSTRAINT states_bot_id_fkey;
ALTER TABLE bot_logs DROP CONSTRAINT bot_logs_bot_id_fkey;
-- end
