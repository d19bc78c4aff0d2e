-- idemkit: the PostgreSQL record store, third migration (idemkit 1.1).
--
-- An EFFECTFUL tool whose body failed has its failure held: the record is completed with
-- outcome_kind 'indeterminate' (outcome {"indeterminate": {"type": ..., "message": ...}}), and
-- every repeat gets the indeterminate error until an operator resolves it. This widens the check
-- on outcome_kind made by 001. It only touches the catalog when the check does not yet allow
-- 'indeterminate', and adds it NOT VALID (the rows already there satisfy it), so running it again
-- on every start is cheap. `create_table_if_missing()` runs it too. To use another table name,
-- replace every `idemkit_records` below.

DO $idemkit$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_constraint
    WHERE conrelid = 'idemkit_records'::regclass
      AND conname = 'idemkit_records_outcome_kind_check'
      AND pg_get_constraintdef(oid) LIKE '%indeterminate%'
  ) THEN
    ALTER TABLE idemkit_records DROP CONSTRAINT IF EXISTS idemkit_records_outcome_kind_check;
    ALTER TABLE idemkit_records ADD CONSTRAINT idemkit_records_outcome_kind_check
      CHECK (outcome_kind IN ('success', 'failure', 'too_large', 'indeterminate')) NOT VALID;
  END IF;
END
$idemkit$;
