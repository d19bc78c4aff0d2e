-- idemkit: the PostgreSQL record store, second migration (idemkit 1.1).
--
-- `idemkit list` shows the newest records first: the store reads them in this index's order
-- (`ORDER BY claimed_at DESC, key LIMIT n`) instead of sorting the whole table. Tables made by
-- 001 keep working without it (the same query sorts then); `create_table_if_missing()` adds it.
-- To use another table name, replace every `idemkit_records` below.

CREATE INDEX IF NOT EXISTS idemkit_records_claimed_at_idx ON idemkit_records (claimed_at DESC, key);
