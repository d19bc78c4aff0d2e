-- idemkit: the PostgreSQL record store, sixth migration.
--
-- The claim as a function: a repeat of a remembered call reads the live record with one
-- indexed SELECT and answers it, writing nothing; only a claim that may write (no live record,
-- an expired one, a remembered failure being retried) runs the claim's INSERT ... ON CONFLICT,
-- as the claim statement does. Without this function the store sends the claim statement
-- itself, as before (a warning names this file). `create_table_if_missing()` runs this file
-- too; running it again replaces the function with the same text. Dropping the table leaves
-- the function: drop it with `DROP FUNCTION idemkit_records_claim`. To use another table name, replace
-- every `idemkit_records` below.

CREATE OR REPLACE FUNCTION idemkit_records_claim(text, text, integer, text, text, bigint, bigint, boolean, text, boolean)
RETURNS TABLE (o_acquired boolean, o_tenant text, o_key text, o_format integer, o_scope text,
  o_state text, o_token text, o_claimed_at bigint, o_lease_end bigint, o_ttl_ms bigint,
  o_expires_at bigint, o_outcome text, o_fingerprint text, o_now bigint)
LANGUAGE plpgsql AS $idemkit_claim$
BEGIN
  -- The live record this claim would not take over: answered as it is.
  RETURN QUERY SELECT false, c.tenant, c.key, c.format, c.scope, c.state, c.token, (extract(epoch from c.claimed_at) * 1000)::bigint, (extract(epoch from c.lease_end) * 1000)::bigint, c.ttl_ms, (extract(epoch from c.expires_at) * 1000)::bigint, c.outcome::text, c.fingerprint, (extract(epoch from now.t) * 1000)::bigint
  FROM (SELECT date_trunc('milliseconds', clock_timestamp()) AS t) AS now, idemkit_records AS c
  WHERE c.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END) AND c.key = $2::text AND c.expires_at > now.t AND NOT ($8::boolean AND c.state = 'completed' AND c.outcome_kind = 'failure' AND NOT ($10::boolean AND $9::text IS NOT NULL AND c.fingerprint IS NOT NULL AND c.fingerprint <> $9::text));
  IF FOUND THEN
    RETURN;
  END IF;
  -- A new record, or the takeover of an expired one or of a failure this claim replaces.
  RETURN QUERY WITH now AS MATERIALIZED (SELECT date_trunc('milliseconds', clock_timestamp()) AS t)
  INSERT INTO idemkit_records AS r
    (tenant, key, format, scope, state, token, claimed_at, lease_end, ttl_ms, expires_at, outcome_kind, outcome, fingerprint)
  SELECT $1::text, $2::text, $3::integer, $4::text, 'in_progress', $5::text, now.t,
    now.t + $6::bigint * interval '1 millisecond', $7::bigint,
    now.t + ($6::bigint + $7::bigint) * interval '1 millisecond', NULL, NULL, $9::text
  FROM now
  ON CONFLICT (tenant_key, key) DO UPDATE SET format = excluded.format, scope = excluded.scope, state = excluded.state, token = excluded.token, claimed_at = excluded.claimed_at, lease_end = excluded.lease_end, ttl_ms = excluded.ttl_ms, expires_at = excluded.expires_at, outcome_kind = excluded.outcome_kind, outcome = excluded.outcome, fingerprint = excluded.fingerprint
  WHERE (r.expires_at <= excluded.claimed_at OR ($8::boolean AND r.state = 'completed' AND r.outcome_kind = 'failure' AND NOT ($10::boolean AND $9::text IS NOT NULL AND r.fingerprint IS NOT NULL AND r.fingerprint <> $9::text)))
  RETURNING true, r.tenant, r.key, r.format, r.scope, r.state, r.token, (extract(epoch from r.claimed_at) * 1000)::bigint, (extract(epoch from r.lease_end) * 1000)::bigint, r.ttl_ms, (extract(epoch from r.expires_at) * 1000)::bigint, r.outcome::text, r.fingerprint, (extract(epoch from r.claimed_at) * 1000)::bigint;
  IF FOUND THEN
    RETURN;
  END IF;
  -- A concurrent claimer's row won the conflict: answered as it is now.
  RETURN QUERY SELECT false, c.tenant, c.key, c.format, c.scope, c.state, c.token, (extract(epoch from c.claimed_at) * 1000)::bigint, (extract(epoch from c.lease_end) * 1000)::bigint, c.ttl_ms, (extract(epoch from c.expires_at) * 1000)::bigint, c.outcome::text, c.fingerprint, (extract(epoch from now.t) * 1000)::bigint
  FROM (SELECT date_trunc('milliseconds', clock_timestamp()) AS t) AS now, idemkit_records AS c
  WHERE c.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END) AND c.key = $2::text;
END
$idemkit_claim$;
