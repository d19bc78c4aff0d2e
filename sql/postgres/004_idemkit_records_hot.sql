-- idemkit: the PostgreSQL record store, fourth migration (idemkit 1.1).
--
-- Completing a claim rewrites state, outcome, ttl_ms and expires_at of its row. With no index
-- on any of those columns the rewrite is a HOT update (heap only: no new index entries, about
-- half the WAL of an executed call), provided the row's page has room for the new version:
-- fillfactor 80 keeps a fifth of every page free for it. purge_expired() finds expired rows
-- along the claimed_at index of 002 (oldest first) instead of an index of its own.
--
-- fillfactor applies to pages written from now on (`VACUUM FULL idemkit_records` rewrites the
-- old ones, under an exclusive lock). Tables without this migration keep working.
-- To use another table name, replace every `idemkit_records` below.

ALTER TABLE idemkit_records SET (fillfactor = 80);
DROP INDEX IF EXISTS idemkit_records_expires_at_idx;
