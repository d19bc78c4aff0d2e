-- idemkit: the PostgreSQL record store (SPEC §4), record format 1.
--
-- Run this with your migration tool, or let the library run the same DDL through
-- `PostgresStore::create_table_if_missing()`. To use another table name, replace every
-- `idemkit_records` below (the library does exactly that with the configured name).
--
-- One row per (tenant, key). `tenant_key` keeps "no tenant" (NULL) apart from the tenant ""
-- without relying on NULLS NOT DISTINCT (PostgreSQL 15+): it is '_' for no tenant and
-- 't' || tenant otherwise. Times are the server's clock (clock_timestamp(), to the
-- millisecond). `outcome` is the remembered outcome as JSON ({"success": ...},
-- {"failure": {"type": ..., "message": ...}} or {"too_large": {"bytes": ...}}); the json type
-- keeps a success result byte for byte. Works on PostgreSQL 12 and later.

CREATE TABLE IF NOT EXISTS idemkit_records (
    tenant       text,
    tenant_key   text        GENERATED ALWAYS AS (CASE WHEN tenant IS NULL THEN '_' ELSE 't' || tenant END) STORED,
    key          text        NOT NULL,
    format       integer     NOT NULL,
    scope        text        NOT NULL,
    state        text        NOT NULL CHECK (state IN ('in_progress', 'completed')),
    token        text        NOT NULL,
    claimed_at   timestamptz NOT NULL,
    lease_end    timestamptz NOT NULL,
    ttl_ms       bigint      NOT NULL,
    expires_at   timestamptz NOT NULL,
    outcome_kind text        CHECK (outcome_kind IN ('success', 'failure', 'too_large')),
    outcome      json,
    PRIMARY KEY (tenant_key, key)
);

-- purge_expired() deletes by expires_at, in batches.
CREATE INDEX IF NOT EXISTS idemkit_records_expires_at_idx ON idemkit_records (expires_at);
