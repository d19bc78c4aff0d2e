//! The SQL of the PostgreSQL store: the schema (the files of `sql/postgres/`), the table name
//! check, and every statement, written once per table.

use crate::error::StoreError;

/// The default table name.
pub const DEFAULT_TABLE: &str = "idemkit_records";

/// The schema, as shipped for migration tools (table `idemkit_records`).
pub const SCHEMA_SQL: &str = include_str!("../../../sql/postgres/001_idemkit_records.sql");

/// The second migration: the index `newest` reads (`list` newest first).
pub const CLAIMED_AT_INDEX_SQL: &str =
    include_str!("../../../sql/postgres/002_idemkit_records_claimed_at.sql");

/// The third migration: held outcomes of `EFFECTFUL` tools (`outcome_kind` 'indeterminate').
pub const HELD_OUTCOME_SQL: &str =
    include_str!("../../../sql/postgres/003_idemkit_records_held_outcome.sql");

/// The fourth migration: completions become HOT updates (no index on the columns they change,
/// fillfactor 80), purge reads the claimed_at index.
pub const HOT_UPDATES_SQL: &str = include_str!("../../../sql/postgres/004_idemkit_records_hot.sql");

/// The fifth migration: the nullable `fingerprint` column (SPEC v1.1 rule 9).
pub const FINGERPRINT_SQL: &str =
    include_str!("../../../sql/postgres/005_idemkit_records_fingerprint.sql");

/// The file that adds the `fingerprint` column, named by the warning a table without it gets
/// (here and in the Java face's JDBC store).
pub const FINGERPRINT_FILE: &str = "sql/postgres/005_idemkit_records_fingerprint.sql";

/// The sixth migration: the claim as a function that answers a live record with one `SELECT`
/// and runs the claim statement only when the key is free ([`claim_function_sql`] for the
/// default table, as shipped for migration tools).
pub const CLAIM_FUNCTION_SQL: &str =
    include_str!("../../../sql/postgres/006_idemkit_records_claim_function.sql");

/// The file that adds the claim function, named by the warning a table without it gets.
pub const CLAIM_FUNCTION_FILE: &str = "sql/postgres/006_idemkit_records_claim_function.sql";

/// How a message names the call that creates or migrates the table, in each face that has one.
pub(super) const CREATE_TABLE_CALL: &str =
    "PostgresStore::create_table_if_missing() (Java: PostgresIdempotencyStore.createTableIfMissing())";

/// The index of 001 that 004 drops: [`schema_sql`] leaves it out rather than build it only to
/// drop it.
const EXPIRES_AT_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS idemkit_records_expires_at_idx ON idemkit_records (expires_at);";

/// Checks a table name: `name` or `schema.name`, each part letters, digits and underscores,
/// not starting with a digit, at most 63 bytes.
pub fn validate_table_name(name: &str) -> Result<(), StoreError> {
    let parts: Vec<&str> = name.split('.').collect();
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 63
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !p.as_bytes()[0].is_ascii_digit()
    };
    if parts.len() <= 2 && parts.iter().all(|p| part_ok(p)) {
        Ok(())
    } else {
        Err(StoreError::Configuration(format!(
            "table name {name:?} is not an SQL identifier; use letters, digits and underscores (not starting with a digit, at most 63 bytes), optionally schema-qualified as schema.table"
        )))
    }
}

/// The schema DDL for `table` (validated): every file of `sql/postgres/`, in order, without the
/// expires_at index of 001 that 004 drops.
pub fn schema_sql(table: &str) -> Result<String, StoreError> {
    validate_table_name(table)?;
    let bare = table.rsplit('.').next().unwrap_or(table);
    let first = SCHEMA_SQL.replace(EXPIRES_AT_INDEX, "");
    let files = format!(
        "{first}\n{CLAIMED_AT_INDEX_SQL}\n{HELD_OUTCOME_SQL}\n{HOT_UPDATES_SQL}\n{FINGERPRINT_SQL}"
    )
    .replace("idemkit_records_", &format!("{bare}_"))
    .replace("idemkit_records", table);
    // The function is named after the table, schema included (an index takes its table's
    // schema by itself; a function does not).
    Ok(format!("{files}\n{}", claim_function_sql(table)))
}

/// The claim function of [`CLAIM_FUNCTION_FILE`] for `table`: `{table}_claim`, with the claim
/// statement's ten parameters and its row. Three statements, each on its own snapshot (READ
/// COMMITTED), each answering as the claim statement would:
///
/// 1. the live record this claim would not take over, by one indexed `SELECT`: answered, nothing
///    written (a repeat of a remembered call, or a claim in progress elsewhere);
/// 2. else the claim's write (`upsert`, as in the claim statement): a new record, or the takeover
///    of an expired one or of a failure this claim replaces; `DO UPDATE ... WHERE` re-checks the
///    takeover on the row's latest version, so of racing claimers one writes;
/// 3. else (a concurrent claimer's row won the conflict) that row, read again, for the caller to
///    answer; none when it is gone already, which the caller answers by claiming again.
///
/// A repeat thus costs the server a lookup instead of the claim statement, whose `INSERT ... ON
/// CONFLICT` is set up even when it inserts nothing.
pub fn claim_function_sql(table: &str) -> String {
    let now = "(SELECT date_trunc('milliseconds', clock_timestamp()) AS t) AS now";
    let columns = record_columns("c", true);
    let at_now = ms("now.t");
    format!(
        "-- idemkit: the PostgreSQL record store, sixth migration.
--
-- The claim as a function: a repeat of a remembered call reads the live record with one
-- indexed SELECT and answers it, writing nothing; only a claim that may write (no live record,
-- an expired one, a remembered failure being retried) runs the claim's INSERT ... ON CONFLICT,
-- as the claim statement does. Without this function the store sends the claim statement
-- itself, as before (a warning names this file). `create_table_if_missing()` runs this file
-- too; running it again replaces the function with the same text. Dropping the table leaves
-- the function: drop it with `DROP FUNCTION {table}_claim`. To use another table name, replace
-- every `{table}` below.

CREATE OR REPLACE FUNCTION {table}_claim(text, text, integer, text, text, bigint, bigint, boolean, text, boolean)
RETURNS TABLE (o_acquired boolean, o_tenant text, o_key text, o_format integer, o_scope text,
  o_state text, o_token text, o_claimed_at bigint, o_lease_end bigint, o_ttl_ms bigint,
  o_expires_at bigint, o_outcome text, o_fingerprint text, o_now bigint)
LANGUAGE plpgsql AS $idemkit_claim$
BEGIN
  -- The live record this claim would not take over: answered as it is.
  RETURN QUERY SELECT false, {columns}, {at_now}
  FROM {now}, {table} AS c
  WHERE {} AND c.expires_at > now.t AND NOT {};
  IF FOUND THEN
    RETURN;
  END IF;
  -- A new record, or the takeover of an expired one or of a failure this claim replaces.
  RETURN QUERY WITH {NOW_CTE}
  {}
  RETURNING true, {}, {};
  IF FOUND THEN
    RETURN;
  END IF;
  -- A concurrent claimer's row won the conflict: answered as it is now.
  RETURN QUERY SELECT false, {columns}, {at_now}
  FROM {now}, {table} AS c
  WHERE {};
END
$idemkit_claim$;
",
        key_match("c"),
        replaces("c", true),
        upsert(table, true, "now"),
        record_columns("r", true),
        ms("r.claimed_at"),
        key_match("c"),
    )
}

/// What `create_table_if_missing` runs for `table` (validated), as one transaction: the DDL of
/// [`schema_sql`], after waiting — holding nothing — for the table's `ACCESS EXCLUSIVE` lock when
/// it exists, so that the DDL's weaker locks (`CREATE INDEX IF NOT EXISTS` holds `SHARE`) are
/// never held while it asks for the exclusive one (`ALTER TABLE`), which deadlocked with a claim
/// on the table; creators of one table take turns on an advisory lock.
pub fn create_table_sql(table: &str) -> Result<String, StoreError> {
    let schema = schema_sql(table)?;
    Ok(format!(
        "SELECT pg_advisory_xact_lock(hashtext('idemkit schema {table}'));
DO $idemkit_lock$
BEGIN
  IF to_regclass('{table}') IS NOT NULL THEN
    LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE;
  END IF;
END
$idemkit_lock$;
{schema}"
    ))
}

/// The SQL of every statement of the store for `table` (validated), by name, with PostgreSQL's
/// `$n` parameters, for a table with every migration of `sql/postgres/`: `claim`, `complete`,
/// `release`, `get`, `list`, `newest`, `resolve`, `forget`, `purge`, `delete` and `take_over`.
///
/// One text for every driver: the Java face's JDBC store (`PostgresIdempotencyStore(DataSource)`)
/// runs these very statements, so that it and this store share one table and record format.
pub fn statements(table: &str) -> Result<Vec<(&'static str, String)>, StoreError> {
    validate_table_name(table)?;
    Ok(named(table, Sql::new(table)))
}

/// The claim statement for a table without the claim function of [`CLAIM_FUNCTION_FILE`]
/// (migrations 001 to 005), with the parameters and the row of the `claim` of [`statements`]: it
/// answers as the function does (its write is the same text). The native store falls back to it
/// when the function is missing, and so does the Java face's JDBC store.
pub fn claim_statement(table: &str) -> Result<String, StoreError> {
    validate_table_name(table)?;
    Ok(Sql::without_claim_function(table).claim)
}

/// The statements of [`statements`] for a table made without the `fingerprint` column of
/// [`FINGERPRINT_FILE`] (migrations 001 to 004, idemkit 1.0), by the same names and with the same
/// parameters: they keep no fingerprint and read every record as having none, which never
/// mismatches (SPEC v1.1 rule 9). The native store falls back to them when its statements find no
/// such column, and so does the Java face's JDBC store.
pub fn statements_without_fingerprint(
    table: &str,
) -> Result<Vec<(&'static str, String)>, StoreError> {
    validate_table_name(table)?;
    Ok(named(table, Sql::without_fingerprint(table)))
}

fn named(table: &str, sql: Sql) -> Vec<(&'static str, String)> {
    vec![
        ("claim", sql.claim),
        ("complete", sql.complete),
        ("release", sql.release),
        ("get", sql.get),
        ("list", sql.list),
        ("newest", sql.newest),
        ("resolve", sql.resolve),
        ("forget", sql.forget),
        ("purge", sql.purge),
        ("delete", delete_sql(table)),
        ("take_over", take_over_sql(table)),
    ]
}

/// The take-over of an abandoned claim (SPEC v1.1 rule 12): `$1` tenant, `$2` key, `$3` the
/// expected (abandoned) token, `$4` the new token, `$5` lease_ms, `$6` ttl_ms. One UPDATE: of
/// concurrent take-overs the first locks the row; the others re-check the WHERE on its new
/// version (READ COMMITTED), find another token and change nothing. Answers one row, the new
/// `lease_end` and the store's *now* (milliseconds), when it moved the token; none otherwise.
pub(super) fn take_over_sql(table: &str) -> String {
    format!(
        "WITH {NOW_CTE}
UPDATE {table} AS u SET token = $4::text, claimed_at = now.t,
  lease_end = now.t + $5::bigint * interval '1 millisecond', ttl_ms = $6::bigint,
  expires_at = now.t + ($5::bigint + $6::bigint) * interval '1 millisecond'
FROM now
WHERE u.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END)
  AND u.key = $2::text AND u.token = $3::text AND u.state = 'in_progress'
  AND u.lease_end <= now.t AND u.expires_at > now.t
RETURNING {}, {}",
        ms("u.lease_end"),
        ms("now.t"),
    )
}

/// An operator's delete of one record, whatever its state; answers whether the row was live.
pub(super) fn delete_sql(table: &str) -> String {
    format!(
        "DELETE FROM {table} WHERE tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END)
  AND key = $2::text
RETURNING expires_at > date_trunc('milliseconds', clock_timestamp())"
    )
}

/// An operator's delete of one live record only if it still holds the token `$3` (the record
/// they were shown); answers a row if it deleted one.
pub(super) fn delete_held_sql(table: &str) -> String {
    format!(
        "DELETE FROM {table} WHERE tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END)
  AND key = $2::text AND token = $3::text
  AND expires_at > date_trunc('milliseconds', clock_timestamp())
RETURNING 1"
    )
}

/// `x` (a timestamptz) as milliseconds since the epoch.
fn ms(x: &str) -> String {
    format!("(extract(epoch from {x}) * 1000)::bigint")
}

const NOW_CTE: &str =
    "now AS MATERIALIZED (SELECT date_trunc('milliseconds', clock_timestamp()) AS t)";

/// The record columns, as read back (times in milliseconds), with alias `a`; the fingerprint is
/// NULL on a table without that column (`fingerprint` false).
fn record_columns(a: &str, fingerprint: bool) -> String {
    let kept = if fingerprint {
        format!("{a}.fingerprint")
    } else {
        "NULL::text".to_owned()
    };
    format!(
        "{a}.tenant, {a}.key, {a}.format, {a}.scope, {a}.state, {a}.token, {}, {}, {a}.ttl_ms, {}, {a}.outcome::text, {kept}",
        ms(&format!("{a}.claimed_at")),
        ms(&format!("{a}.lease_end")),
        ms(&format!("{a}.expires_at")),
    )
}

/// The claim's condition that the record `a` is a remembered failure this claim replaces:
/// `RETURN_CACHED_IF_SUCCESS` ($8), unless the payload is checked ($10) and another payload made
/// it (SPEC v1.1 rule 9; `ClaimRequest::replaces_failure`). A table without the fingerprint column
/// keeps none, which never differs.
fn replaces(a: &str, fingerprint: bool) -> String {
    let differs = if fingerprint {
        format!("$10::boolean AND $9::text IS NOT NULL AND {a}.fingerprint IS NOT NULL AND {a}.fingerprint <> $9::text")
    } else {
        "$10::boolean AND false".to_owned()
    };
    format!("($8::boolean AND {a}.state = 'completed' AND {a}.outcome_kind = 'failure' AND NOT ({differs}))")
}

/// The row `a` of the record of tenant `$1` and key `$2`.
fn key_match(a: &str) -> String {
    format!("{a}.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END) AND {a}.key = $2::text")
}

/// The claim's write: a new in-progress record from the rows of `source` (which names `now`),
/// or, on the row already there, its takeover when it has expired or is a remembered failure
/// this claim replaces (`DO UPDATE ... WHERE`, re-checked on the row's latest version, so two
/// claimers never both take it). Without a `RETURNING`.
fn upsert(table: &str, fingerprint: bool, source: &str) -> String {
    let take = format!(
        "(r.expires_at <= excluded.claimed_at OR {})",
        replaces("r", fingerprint)
    );
    let sets = [
        "format",
        "scope",
        "state",
        "token",
        "claimed_at",
        "lease_end",
        "ttl_ms",
        "expires_at",
        "outcome_kind",
        "outcome",
        "fingerprint",
    ]
    .iter()
    .filter(|column| fingerprint || **column != "fingerprint")
    .map(|column| format!("{column} = excluded.{column}"))
    .collect::<Vec<_>>()
    .join(", ");
    let (kept_column, kept_value) = if fingerprint {
        (", fingerprint", ", $9::text")
    } else {
        ("", "")
    };
    format!(
        "INSERT INTO {table} AS r
    (tenant, key, format, scope, state, token, claimed_at, lease_end, ttl_ms, expires_at, outcome_kind, outcome{kept_column})
  SELECT $1::text, $2::text, $3::integer, $4::text, 'in_progress', $5::text, now.t,
    now.t + $6::bigint * interval '1 millisecond', $7::bigint,
    now.t + ($6::bigint + $7::bigint) * interval '1 millisecond', NULL, NULL{kept_value}
  FROM {source}
  ON CONFLICT (tenant_key, key) DO UPDATE SET {sets}
  WHERE {take}"
    )
}

/// One of each statement of the store: its SQL ([`Sql`]) or, on a connection, the statement
/// prepared from it (`pool::Statements`).
pub(super) struct EachStatement<T> {
    pub(super) claim: T,
    pub(super) complete: T,
    pub(super) release: T,
    pub(super) get: T,
    pub(super) list: T,
    pub(super) newest: T,
    pub(super) resolve: T,
    pub(super) forget: T,
    pub(super) purge: T,
}

/// The SQL of every statement for `table`.
pub(super) type Sql = EachStatement<String>;

impl Sql {
    /// The statements for a table with every migration of `sql/postgres/`: the claim calls the
    /// function of [`CLAIM_FUNCTION_FILE`].
    pub(super) fn new(table: &str) -> Sql {
        Sql {
            claim: format!(
                "SELECT * FROM {table}_claim($1::text, $2::text, $3::integer, $4::text, $5::text, $6::bigint, $7::bigint, $8::boolean, $9::text, $10::boolean)"
            ),
            ..Sql::build(table, true)
        }
    }

    /// The statements for a table without the claim function of [`CLAIM_FUNCTION_FILE`]
    /// (migrations 001 to 005): the claim is the claim statement, which answers as the function
    /// does.
    pub(super) fn without_claim_function(table: &str) -> Sql {
        Sql::build(table, true)
    }

    /// The statements for a table without the `fingerprint` column of 005 (made by idemkit
    /// 1.0): they keep no fingerprint and read every record as having none, which never
    /// mismatches (SPEC v1.1 rule 9). The claim takes `$9` all the same and ignores it.
    pub(super) fn without_fingerprint(table: &str) -> Sql {
        Sql::build(table, false)
    }

    fn build(table: &str, fingerprint: bool) -> Sql {
        // The current record is read first (this statement's snapshot); the INSERT runs only
        // when there is no live record, or one this claim takes over (expired, or a failure
        // being retried), so a repeat of a remembered call is a plain read: no row lock, no
        // WAL. The INSERT's `DO UPDATE ... WHERE` re-checks the takeover on the latest row
        // version; when a concurrent claimer got there first it returns nothing and the
        // snapshot's row is stale, which `claim` sees and answers by running the statement
        // again (rare: only racing claimers of one key).
        // `RETURN_CACHED_IF_SUCCESS` ($8) replaces a remembered failure of the row `a`, unless
        // the payload is checked ($10) and another payload made it (SPEC v1.1 rule 9;
        // `ClaimRequest::replaces_failure`). A table without the fingerprint column keeps none,
        // which never differs.
        let claim = format!(
            "WITH {NOW_CTE},
cur AS MATERIALIZED (
  SELECT * FROM {table} AS c
  WHERE c.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END) AND c.key = $2::text
),
held AS MATERIALIZED (
  SELECT EXISTS (
    SELECT 1 FROM cur, now WHERE cur.expires_at > now.t
      AND NOT {}
  ) AS yes
),
claimed AS (
  {}
  RETURNING r.*
)
SELECT true, {}, {} FROM claimed c, now
UNION ALL
SELECT false, {}, {} FROM cur c, now WHERE NOT EXISTS (SELECT 1 FROM claimed)",
            replaces("cur", fingerprint),
            upsert(
                table,
                fingerprint,
                "now, held WHERE NOT held.yes AND ($9::text IS NULL OR true)"
            ),
            record_columns("c", fingerprint),
            ms("now.t"),
            record_columns("c", fingerprint),
            ms("now.t"),
        );
        // Not recorded when nothing matched: the current record (as of this statement's
        // snapshot) tells why — gone, another token, or already completed with this token.
        let complete = format!(
            "WITH {NOW_CTE},
done AS (
  UPDATE {table} AS u SET state = 'completed', outcome_kind = $4::text, outcome = ($5::text)::json,
    ttl_ms = $6::bigint, expires_at = now.t + $6::bigint * interval '1 millisecond'
  FROM now
  WHERE {} AND u.token = $3::text
    AND (u.state = 'in_progress' OR u.outcome_kind = 'indeterminate') AND u.expires_at > now.t
  RETURNING 1
)
SELECT (SELECT count(*) FROM done), {} FROM now LEFT JOIN {table} AS c ON {} AND c.expires_at > now.t",
            key_match("u"),
            record_columns("c", fingerprint),
            key_match("c"),
        );
        let release = format!(
            "DELETE FROM {table} AS d
WHERE {} AND d.token = $3::text
    AND (d.state = 'in_progress' OR d.outcome_kind = 'indeterminate')
  AND d.expires_at > date_trunc('milliseconds', clock_timestamp())",
            key_match("d"),
        );
        let get = format!(
            "WITH {NOW_CTE}
SELECT {}, {} FROM now LEFT JOIN {table} AS c ON {} AND c.expires_at > now.t",
            ms("now.t"),
            record_columns("c", fingerprint),
            key_match("c"),
        );
        // Keyset pages in primary-key order. $1: tenant_key or NULL for every tenant;
        // $2: status name or NULL; ($3, $4): the last row of the previous page; $5: limit.
        let list = format!(
            "WITH {NOW_CTE}
SELECT {}, {} FROM now LEFT JOIN LATERAL (
  SELECT * FROM {table} AS l
  WHERE l.expires_at > now.t
    AND ($1::text IS NULL OR l.tenant_key = $1::text)
    AND ($2::text IS NULL
      OR ($2::text = 'completed' AND l.state = 'completed')
      OR ($2::text = 'in-progress' AND l.state = 'in_progress' AND l.lease_end > now.t)
      OR ($2::text = 'abandoned' AND l.state = 'in_progress' AND l.lease_end <= now.t))
    AND (l.tenant_key, l.key) > ($3::text, $4::text)
  ORDER BY l.tenant_key, l.key
  LIMIT $5::bigint
) c ON true
ORDER BY c.tenant_key, c.key",
            ms("now.t"),
            record_columns("c", fingerprint),
        );
        // The newest first, read in the order of the claimed_at index (002). $1, $2: as for
        // list; $3: limit.
        let newest = format!(
            "WITH {NOW_CTE}
SELECT {}, {} FROM now LEFT JOIN LATERAL (
  SELECT * FROM {table} AS l
  WHERE l.expires_at > now.t
    AND ($1::text IS NULL OR l.tenant_key = $1::text)
    AND ($2::text IS NULL
      OR ($2::text = 'completed' AND l.state = 'completed')
      OR ($2::text = 'in-progress' AND l.state = 'in_progress' AND l.lease_end > now.t)
      OR ($2::text = 'abandoned' AND l.state = 'in_progress' AND l.lease_end <= now.t))
  ORDER BY l.claimed_at DESC, l.key
  LIMIT $3::bigint
) c ON true
ORDER BY c.claimed_at DESC, c.key",
            ms("now.t"),
            record_columns("c", fingerprint),
        );
        // $3: expected token; $4: 'release' or 'complete'; $5..$7: outcome kind, JSON, ttl.
        let resolve = format!(
            "WITH {NOW_CTE},
released AS (
  DELETE FROM {table} AS d USING now
  WHERE $4::text = 'release' AND {} AND d.token = $3::text
    AND (d.state = 'in_progress' OR d.outcome_kind = 'indeterminate')
    AND d.expires_at > now.t
  RETURNING 1
),
completed AS (
  UPDATE {table} AS u SET state = 'completed', outcome_kind = $5::text, outcome = ($6::text)::json,
    ttl_ms = $7::bigint, expires_at = now.t + $7::bigint * interval '1 millisecond'
  FROM now
  WHERE $4::text = 'complete' AND {} AND u.token = $3::text
    AND (u.state = 'in_progress' OR u.outcome_kind = 'indeterminate')
    AND u.expires_at > now.t
  RETURNING 1
)
SELECT (SELECT count(*) FROM released) + (SELECT count(*) FROM completed), {}
FROM now LEFT JOIN {table} AS c ON {} AND c.expires_at > now.t",
            key_match("d"),
            key_match("u"),
            record_columns("c", fingerprint),
            key_match("c"),
        );
        let forget = format!(
            "DELETE FROM {table} WHERE ctid IN (
  SELECT ctid FROM {table} WHERE tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END)
  LIMIT $2::bigint)"
        );
        // Oldest first, along the claimed_at index of 002 read backwards (004 drops the
        // expires_at index so that completions are HOT updates).
        let purge = format!(
            "DELETE FROM {table} WHERE ctid IN (
  SELECT ctid FROM {table} WHERE expires_at <= date_trunc('milliseconds', clock_timestamp())
  ORDER BY claimed_at, key DESC
  LIMIT $1::bigint)
AND expires_at <= date_trunc('milliseconds', clock_timestamp())"
        );
        Sql {
            claim,
            complete,
            release,
            get,
            list,
            newest,
            resolve,
            forget,
            purge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_identifiers() {
        for ok in ["idemkit_records", "app.records", "_t1", &"a".repeat(63)] {
            assert!(validate_table_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "1abc",
            "records; DROP TABLE x",
            "a.b.c",
            "app.",
            "\"quoted\"",
            "tâble",
            &"a".repeat(64),
        ] {
            let e = validate_table_name(bad).unwrap_err();
            assert!(
                e.to_string().contains("not an SQL identifier"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_statements_without_fingerprint_match_the_full_ones_by_name_and_never_name_the_column() {
        let full = statements("app.records").unwrap();
        let old = statements_without_fingerprint("app.records").unwrap();
        let names = |s: &[(&'static str, String)]| -> Vec<&'static str> {
            s.iter().map(|(n, _)| *n).collect()
        };
        assert_eq!(names(&full), names(&old));
        assert!(full.iter().any(|(_, text)| text.contains("fingerprint")));
        for (name, text) in &old {
            assert!(!text.contains("fingerprint"), "{name}: {text}");
            assert!(text.contains("app.records"), "{name}");
        }
        // The claim takes the same parameters ($9 and $10 too), so a driver binds both alike.
        let claim = |s: &[(&str, String)]| s.iter().find(|(n, _)| *n == "claim").unwrap().1.clone();
        assert!(claim(&old).contains("$9") && claim(&old).contains("$10"));
        assert!(statements_without_fingerprint("bad name").is_err());
    }

    #[test]
    fn schema_sql_substitutes_the_table_name() {
        let ddl = schema_sql("app.records").unwrap();
        assert!(ddl.contains("CREATE TABLE IF NOT EXISTS app.records ("));
        assert!(SCHEMA_SQL.contains(EXPIRES_AT_INDEX));
        assert!(!ddl.contains("(expires_at)"), "{ddl}");
        assert!(ddl.contains("ALTER TABLE app.records SET (fillfactor = 80)"));
        assert!(ddl.contains("DROP INDEX IF EXISTS records_expires_at_idx"));
        assert!(!ddl.contains("idemkit_records"));
        assert!(schema_sql("bad name").is_err());
    }

    #[test]
    fn the_shipped_claim_function_file_is_the_function_the_store_creates() {
        assert!(
            CLAIM_FUNCTION_SQL == claim_function_sql(DEFAULT_TABLE),
            "{CLAIM_FUNCTION_FILE} differs from claim_function_sql(\"{DEFAULT_TABLE}\"); write that text to the file"
        );
        // The function writes as the claim statement does: the same INSERT ... ON CONFLICT.
        let write = upsert(DEFAULT_TABLE, true, "now");
        assert!(CLAIM_FUNCTION_SQL.contains(&write));
        let source = "FROM now, held WHERE NOT held.yes AND ($9::text IS NULL OR true)\n";
        assert!(claim_statement(DEFAULT_TABLE)
            .unwrap()
            .contains(&write.replace("FROM now\n", source)));
    }

    #[test]
    fn the_claim_function_is_named_after_the_table_schema_included() {
        let ddl = schema_sql("app.records").unwrap();
        assert!(
            ddl.contains("CREATE OR REPLACE FUNCTION app.records_claim("),
            "{ddl}"
        );
        let claim = statements("app.records").unwrap()[0].clone();
        assert_eq!(claim.0, "claim");
        assert!(claim
            .1
            .starts_with("SELECT * FROM app.records_claim($1::text,"));
        for n in 1..=10 {
            assert!(claim.1.contains(&format!("${n}::")), "${n}: {}", claim.1);
        }
        // Without the function, the claim is the statement, with the same parameters.
        let statement = claim_statement("app.records").unwrap();
        assert!(statement.contains("INSERT INTO app.records AS r") && statement.contains("$10"));
        assert!(claim_statement("bad name").is_err());
    }
}
