-- idemkit: the PostgreSQL record store, fifth migration (idemkit 1.1).
--
-- SPEC v1.1 rule 9: a record keeps the payload fingerprint of the call that claimed it, the
-- lowercase hex SHA-256 of the canonical JSON of its whole input (never the input itself), or
-- NULL when the call had no input. A repeat under the same key with another fingerprint is
-- refused with the payload-mismatch error. Rows written before this migration keep NULL and
-- never mismatch. A nullable column without a default only touches the catalog, so this is
-- instant on a table of any size, and running it again is a no-op. On a table without the
-- column the stores keep working without fingerprints (nothing mismatches) and log a warning
-- naming this file; `create_table_if_missing()` runs this file too.
-- To use another table name, replace every `idemkit_records` below.

ALTER TABLE idemkit_records ADD COLUMN IF NOT EXISTS fingerprint text;
