-- Fencing of leases (issue 17): every time a lease passes to a holder after
-- it expired or was released, its epoch grows by one. A turn's completion
-- commits only while its node still holds the lease at the epoch it took
-- (store.Leases.Check), so a node resumed after a pause commits nothing for
-- a conversation another node took over. Released leases keep their row
-- (expires_at = 0) so that the epoch never goes back.
ALTER TABLE leases ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
