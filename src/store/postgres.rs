//! The PostgreSQL store (feature `postgres`): one row per record, claims as one statement.
//!
//! **Schema**: `sql/postgres/001_idemkit_records.sql`, for migration tools, or
//! [`PostgresStore::create_table_if_missing`], which runs the same DDL. The table name (default
//! `idemkit_records`) is validated as an SQL identifier, optionally schema-qualified.
//!
//! **Time**: *now* is `clock_timestamp()` truncated to the millisecond, read once per statement.
//!
//! **The claim** is one statement. It reads the current record and, only when there is none
//! live or the claim takes it over (expired, or a remembered failure being retried), runs an
//! `INSERT ... ON CONFLICT DO UPDATE ... WHERE <takeover>`; it answers with the row it wrote or
//! else the row it read. A repeat of a remembered call is therefore a plain read — no row lock,
//! no WAL — and concurrent repeats of one key do not queue behind each other. `DO UPDATE` locks
//! the conflicting row and re-checks the takeover on its latest committed version, so two
//! claimers never both win. What the statement cannot see is a row committed by a concurrent
//! claimer after its snapshot began (a data-modifying CTE and its sibling `SELECT` share one
//! snapshot): then it wrote nothing and read nothing live, and the claim simply sends the
//! statement again, which sees that row. Only claimers racing for one key ever need the second
//! statement.
//!
//! **Connections**: a few connections used round-robin (tokio-postgres pipelines the statements
//! of concurrent callers on each), with every statement prepared once per connection, so a call
//! is one round trip. A broken connection is replaced on next use, and a statement that failed
//! because its connection broke or the server ended the session (a restart, an administrator:
//! SQLSTATE 57P01-57P03, class 08) is sent once more on a fresh connection, in every operation
//! (a repeated `resolve` that finds its own outcome recorded answers done), so calls work again
//! as soon as the server is back.
//!
//! **Newest first**: `newest` (the CLI's `list`) reads `ORDER BY claimed_at DESC, key LIMIT n`
//! along the index of `sql/postgres/002_idemkit_records_claimed_at.sql`.
//!
//! TLS is not built in: `sslmode=disable` and `sslmode=prefer` (the default) connect in plain
//! text; `sslmode=require` is refused with a configuration error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use super::{
    nfc, redact_url, repeated_resolution, Claim, ClaimReply, ClaimRequest, Completion, ListFilter,
    Page, RecordId, Resolution, Resolved, Store, StoreOptions, DEFAULT_MAX_OUTCOME_BYTES,
};
use crate::error::StoreError;
use crate::record::{Outcome, Record, RecordState, Status, Token, RECORD_FORMAT};

/// The default table name.
pub const DEFAULT_TABLE: &str = "idemkit_records";

/// The schema, as shipped for migration tools (table `idemkit_records`).
pub const SCHEMA_SQL: &str = include_str!("../../sql/postgres/001_idemkit_records.sql");

/// The second migration: the index `newest` reads (`list` newest first).
pub const CLAIMED_AT_INDEX_SQL: &str =
    include_str!("../../sql/postgres/002_idemkit_records_claimed_at.sql");

/// The most connections a store opens. They are opened as concurrent callers need them: a call
/// takes an idle connection, or opens one more, or (at the limit) shares the least busy one,
/// whose statements tokio-postgres then pipelines. Commits on one connection wait for each
/// other's WAL flush, so concurrent callers need connections of their own to commit together.
const CONNECTIONS: usize = 16;
/// How long connecting may take (unless the URL sets `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one statement may take before the call fails as store-unavailable.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a claim is sent again when racing claimers made its snapshot stale.
const CLAIM_ATTEMPTS: usize = 8;
/// Rows one `purge_expired` or `forget` statement deletes.
const DELETE_BATCH: i64 = 1000;
/// Leases and TTLs are capped at 100 years.
const MAX_SPAN_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

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

/// The schema DDL for `table` (validated): every file of `sql/postgres/`, in order.
pub fn schema_sql(table: &str) -> Result<String, StoreError> {
    validate_table_name(table)?;
    let bare = table.rsplit('.').next().unwrap_or(table);
    Ok(format!("{SCHEMA_SQL}\n{CLAIMED_AT_INDEX_SQL}")
        .replace("idemkit_records_", &format!("{bare}_"))
        .replace("idemkit_records", table))
}

/// `x` (a timestamptz) as milliseconds since the epoch.
fn ms(x: &str) -> String {
    format!("(extract(epoch from {x}) * 1000)::bigint")
}

const NOW_CTE: &str =
    "now AS MATERIALIZED (SELECT date_trunc('milliseconds', clock_timestamp()) AS t)";

/// The record columns, as read back (times in milliseconds), with alias `a`.
fn record_columns(a: &str) -> String {
    format!(
        "{a}.tenant, {a}.key, {a}.format, {a}.scope, {a}.state, {a}.token, {}, {}, {a}.ttl_ms, {}, {a}.outcome::text",
        ms(&format!("{a}.claimed_at")),
        ms(&format!("{a}.lease_end")),
        ms(&format!("{a}.expires_at")),
    )
}

/// Columns 0..=10 of a row made by [`record_columns`]; `None` when the record part is NULL.
fn record_from_row(row: &Row, offset: usize) -> Result<Option<Record>, StoreError> {
    let key: Option<String> = row.try_get(offset + 1).map_err(corrupt)?;
    let Some(key) = key else { return Ok(None) };
    let format: i32 = row.try_get(offset + 2).map_err(corrupt)?;
    if format != RECORD_FORMAT as i32 {
        return Err(StoreError::Corrupt(format!(
            "record {key} has format {format}, not {RECORD_FORMAT}; upgrade idemkit to read it"
        )));
    }
    let state: String = row.try_get(offset + 4).map_err(corrupt)?;
    let state = match state.as_str() {
        "in_progress" => RecordState::InProgress,
        "completed" => RecordState::Completed,
        other => {
            return Err(StoreError::Corrupt(format!(
                "record {key} has state {other:?}"
            )))
        }
    };
    let token: String = row.try_get(offset + 5).map_err(corrupt)?;
    let token = Token::from_hex(&token)
        .ok_or_else(|| StoreError::Corrupt(format!("record {key} has token {token:?}")))?;
    let outcome: Option<String> = row.try_get(offset + 10).map_err(corrupt)?;
    let outcome = match outcome {
        None => None,
        Some(json) => Some(serde_json::from_str::<Outcome>(&json).map_err(|e| {
            StoreError::Corrupt(format!("record {key} has an unreadable outcome: {e}"))
        })?),
    };
    Ok(Some(Record {
        format: RECORD_FORMAT,
        tenant: row.try_get(offset).map_err(corrupt)?,
        scope: row.try_get(offset + 3).map_err(corrupt)?,
        state,
        token,
        claimed_at: row.try_get(offset + 6).map_err(corrupt)?,
        lease_end: row.try_get(offset + 7).map_err(corrupt)?,
        ttl_ms: row.try_get(offset + 8).map_err(corrupt)?,
        expires_at: row.try_get(offset + 9).map_err(corrupt)?,
        outcome,
        key,
    }))
}

fn corrupt(e: tokio_postgres::Error) -> StoreError {
    StoreError::Corrupt(format!("unexpected row shape: {e}"))
}

/// The outcome as stored: its JSON and its kind.
fn outcome_fields(outcome: &Outcome) -> (String, &'static str) {
    let kind = match outcome {
        Outcome::Success(_) => "success",
        Outcome::Failure(_) => "failure",
        Outcome::TooLarge { .. } => "too_large",
    };
    (
        serde_json::to_string(outcome).expect("an outcome always serialises"),
        kind,
    )
}

/// The statements of one connection, prepared when it is made.
struct Statements {
    claim: Statement,
    complete: Statement,
    release: Statement,
    get: Statement,
    list: Statement,
    newest: Statement,
    resolve: Statement,
    forget: Statement,
    purge: Statement,
}

/// The SQL of every statement for `table`.
struct Sql {
    claim: String,
    complete: String,
    release: String,
    get: String,
    list: String,
    newest: String,
    resolve: String,
    forget: String,
    purge: String,
}

impl Sql {
    fn new(table: &str) -> Sql {
        // The current record is read first (this statement's snapshot); the INSERT runs only
        // when there is no live record, or one this claim takes over (expired, or a failure
        // being retried), so a repeat of a remembered call is a plain read: no row lock, no
        // WAL. The INSERT's `DO UPDATE ... WHERE` re-checks the takeover on the latest row
        // version; when a concurrent claimer got there first it returns nothing and the
        // snapshot's row is stale, which `claim` sees and answers by running the statement
        // again (rare: only racing claimers of one key).
        let take = "(r.expires_at <= excluded.claimed_at OR ($8::boolean AND r.state = 'completed' AND r.outcome_kind = 'failure'))";
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
        ]
        .map(|column| format!("{column} = excluded.{column}"))
        .join(", ");
        let claim = format!(
            "WITH {NOW_CTE},
cur AS MATERIALIZED (
  SELECT * FROM {table} AS c
  WHERE c.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END) AND c.key = $2::text
),
held AS MATERIALIZED (
  SELECT EXISTS (
    SELECT 1 FROM cur, now WHERE cur.expires_at > now.t
      AND NOT ($8::boolean AND cur.state = 'completed' AND cur.outcome_kind = 'failure')
  ) AS yes
),
claimed AS (
  INSERT INTO {table} AS r
    (tenant, key, format, scope, state, token, claimed_at, lease_end, ttl_ms, expires_at, outcome_kind, outcome)
  SELECT $1::text, $2::text, $3::integer, $4::text, 'in_progress', $5::text, now.t,
    now.t + $6::bigint * interval '1 millisecond', $7::bigint,
    now.t + ($6::bigint + $7::bigint) * interval '1 millisecond', NULL, NULL
  FROM now, held WHERE NOT held.yes
  ON CONFLICT (tenant_key, key) DO UPDATE SET {sets}
  WHERE {take}
  RETURNING r.*
)
SELECT true, {}, {} FROM claimed c, now
UNION ALL
SELECT false, {}, {} FROM cur c, now WHERE NOT EXISTS (SELECT 1 FROM claimed)",
            record_columns("c"),
            ms("now.t"),
            record_columns("c"),
            ms("now.t"),
        );
        let key_match = |a: &str| {
            format!("{a}.tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END) AND {a}.key = $2::text")
        };
        // Not recorded when nothing matched: the current record (as of this statement's
        // snapshot) tells why — gone, another token, or already completed with this token.
        let complete = format!(
            "WITH {NOW_CTE},
done AS (
  UPDATE {table} AS u SET state = 'completed', outcome_kind = $4::text, outcome = ($5::text)::json,
    ttl_ms = $6::bigint, expires_at = now.t + $6::bigint * interval '1 millisecond'
  FROM now
  WHERE {} AND u.token = $3::text AND u.state = 'in_progress' AND u.expires_at > now.t
  RETURNING 1
)
SELECT (SELECT count(*) FROM done), {} FROM now LEFT JOIN {table} AS c ON {} AND c.expires_at > now.t",
            key_match("u"),
            record_columns("c"),
            key_match("c"),
        );
        let release = format!(
            "DELETE FROM {table} AS d
WHERE {} AND d.token = $3::text AND d.state = 'in_progress'
  AND d.expires_at > date_trunc('milliseconds', clock_timestamp())",
            key_match("d"),
        );
        let get = format!(
            "WITH {NOW_CTE}
SELECT {}, {} FROM now LEFT JOIN {table} AS c ON {} AND c.expires_at > now.t",
            ms("now.t"),
            record_columns("c"),
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
            record_columns("c"),
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
            record_columns("c"),
        );
        // $3: expected token; $4: 'release' or 'complete'; $5..$7: outcome kind, JSON, ttl.
        let resolve = format!(
            "WITH {NOW_CTE},
released AS (
  DELETE FROM {table} AS d USING now
  WHERE $4::text = 'release' AND {} AND d.token = $3::text AND d.state = 'in_progress'
    AND d.expires_at > now.t
  RETURNING 1
),
completed AS (
  UPDATE {table} AS u SET state = 'completed', outcome_kind = $5::text, outcome = ($6::text)::json,
    ttl_ms = $7::bigint, expires_at = now.t + $7::bigint * interval '1 millisecond'
  FROM now
  WHERE $4::text = 'complete' AND {} AND u.token = $3::text AND u.state = 'in_progress'
    AND u.expires_at > now.t
  RETURNING 1
)
SELECT (SELECT count(*) FROM released) + (SELECT count(*) FROM completed), {}
FROM now LEFT JOIN {table} AS c ON {} AND c.expires_at > now.t",
            key_match("d"),
            key_match("u"),
            record_columns("c"),
            key_match("c"),
        );
        let forget = format!(
            "DELETE FROM {table} WHERE ctid IN (
  SELECT ctid FROM {table} WHERE tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END)
  LIMIT $2::bigint)"
        );
        let purge = format!(
            "DELETE FROM {table} WHERE ctid IN (
  SELECT ctid FROM {table} WHERE expires_at <= date_trunc('milliseconds', clock_timestamp())
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

/// One connection and its prepared statements.
struct Session {
    client: Client,
    statements: Statements,
}

#[derive(Default)]
struct Slot {
    current: Mutex<Option<Arc<Session>>>,
    connecting: tokio::sync::Mutex<()>,
    /// Whether the slot is in use (it has, or is making, a connection).
    opened: AtomicBool,
    /// Statements in flight on the slot's connection.
    busy: AtomicUsize,
}

/// Marks a slot busy while a statement runs on it.
struct Busy<'a>(&'a Slot);

impl<'a> Busy<'a> {
    fn new(slot: &'a Slot) -> Busy<'a> {
        slot.busy.fetch_add(1, Ordering::Relaxed);
        Busy(slot)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Records in a PostgreSQL table: see the module documentation.
pub struct PostgresStore {
    config: Config,
    table: String,
    sql: Sql,
    slots: Vec<Slot>,
    next: AtomicUsize,
    url: String,
    max_outcome_bytes: usize,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.url)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// Whether a failed statement may be sent again on a fresh connection: the connection closed or
/// failed, or the server ended it (class 08, or 57P01-57P03: an administrator or a restart
/// terminated the session; the server sends that as an error before it closes).
fn broken_connection(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        None => e.as_db_error().is_none(),
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
    }
}

/// A driver error as psql shows it: the server's own message (severity, SQLSTATE, message,
/// detail and hint) when it answered one, else the error and its causes.
fn error_text(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
        if let Some(detail) = db.detail() {
            text.push_str(&format!(" (DETAIL: {detail})"));
        }
        if let Some(hint) = db.hint() {
            text.push_str(&format!(" (HINT: {hint})"));
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user[:password]@host[:port]/database[?sslmode=...]`).
    ///
    /// Checks the table name and that the server answers; the table itself may be created
    /// afterwards with [`PostgresStore::create_table_if_missing`] (until then calls fail with a
    /// message saying so).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<PostgresStore, StoreError> {
        let shown = redact_url(url);
        let table = options
            .table
            .clone()
            .unwrap_or_else(|| DEFAULT_TABLE.to_owned());
        validate_table_name(&table)?;
        let mut config: Config = url.parse().map_err(|e| {
            StoreError::Configuration(format!(
                "bad PostgreSQL URL {shown}: {}; use postgres://user[:password]@host[:port]/database",
                error_text(&e)
            ))
        })?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(StoreError::Configuration(format!(
                "{shown} asks for sslmode=require, but this build of idemkit connects without TLS; use sslmode=disable or sslmode=prefer, or reach the server through a TLS tunnel"
            )));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("idemkit");
        }
        let store = PostgresStore {
            config,
            sql: Sql::new(&table),
            table,
            slots: (0..CONNECTIONS).map(|_| Slot::default()).collect(),
            next: AtomicUsize::new(0),
            url: shown,
            max_outcome_bytes: options
                .max_outcome_bytes
                .unwrap_or(DEFAULT_MAX_OUTCOME_BYTES),
        };
        let client = store.raw_connection().await?;
        let found: Option<String> = client
            .query_one("SELECT to_regclass($1)::text", &[&store.table])
            .await
            .map_err(|e| store.error(e))?
            .get(0);
        if found.is_none() {
            log::warn!(
                "idemkit: table {} does not exist in {} yet; create it with sql/postgres/001_idemkit_records.sql or PostgresStore::create_table_if_missing()",
                store.table,
                store.url
            );
        }
        Ok(store)
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table and its indexes if they do not exist (the DDL of every file of
    /// `sql/postgres/`, 001 and 002, with this store's table name): on a table made by 001 it
    /// adds the claimed_at index of 002.
    pub async fn create_table_if_missing(&self) -> Result<(), StoreError> {
        let ddl = schema_sql(&self.table)?;
        let client = self.raw_connection().await?;
        let first = client.batch_execute(&ddl).await;
        if let Err(e) = first {
            // Two processes creating the table at once: one loses on the catalog's unique index.
            if e.as_db_error().is_some() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                client
                    .batch_execute(&ddl)
                    .await
                    .map_err(|e| self.error(e))?;
            } else {
                return Err(self.error(e));
            }
        }
        Ok(())
    }

    async fn raw_connection(&self) -> Result<Client, StoreError> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| {
            StoreError::unavailable(format!(
                "cannot connect to {}: {}",
                self.url,
                error_text(&e)
            ))
        })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                log::debug!("idemkit: PostgreSQL connection ended: {e}");
            }
        });
        Ok(client)
    }

    async fn new_session(&self) -> Result<Session, StoreError> {
        let client = self.raw_connection().await?;
        let sql = &self.sql;
        let prepare = |text: &'static str, sql: &str| {
            let client = &client;
            let sql = sql.to_owned();
            async move {
                client.prepare(&sql).await.map_err(|e| {
                    if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
                        StoreError::Configuration(format!(
                            "table {} does not exist in {}; create it with sql/postgres/001_idemkit_records.sql or PostgresStore::create_table_if_missing()",
                            self.table, self.url
                        ))
                    } else {
                        StoreError::unavailable(format!(
                            "cannot prepare the {text} statement on {}: {}",
                            self.url,
                            error_text(&e)
                        ))
                    }
                })
            }
        };
        // Prepared concurrently: the connection pipelines them.
        let (claim, complete, release, get, list, newest, resolve, forget, purge) = tokio::try_join!(
            prepare("claim", &sql.claim),
            prepare("complete", &sql.complete),
            prepare("release", &sql.release),
            prepare("get", &sql.get),
            prepare("list", &sql.list),
            prepare("newest", &sql.newest),
            prepare("resolve", &sql.resolve),
            prepare("forget", &sql.forget),
            prepare("purge", &sql.purge),
        )?;
        Ok(Session {
            statements: Statements {
                claim,
                complete,
                release,
                get,
                list,
                newest,
                resolve,
                forget,
                purge,
            },
            client,
        })
    }

    /// The next slot's live session, connecting it first if needed.
    async fn session(&self, slot: &Slot) -> Result<Arc<Session>, StoreError> {
        let live = |slot: &Slot| {
            let current = slot.current.lock().unwrap_or_else(|p| p.into_inner());
            current.as_ref().filter(|s| !s.client.is_closed()).cloned()
        };
        if let Some(session) = live(slot) {
            return Ok(session);
        }
        let _connecting = slot.connecting.lock().await;
        if let Some(session) = live(slot) {
            return Ok(session);
        }
        let session = match self.new_session().await {
            Ok(session) => Arc::new(session),
            Err(e) => {
                slot.opened.store(false, Ordering::Relaxed);
                return Err(e);
            }
        };
        *slot.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(session.clone());
        Ok(session)
    }

    fn drop_session(slot: &Slot, session: &Arc<Session>) {
        let mut current = slot.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            *current = None;
        }
    }

    /// The slot for the next statement: an idle open one, else a new one, else the least busy.
    fn pick(&self) -> &Slot {
        let n = self.slots.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut least: Option<(usize, &Slot)> = None;
        for i in 0..n {
            let slot = &self.slots[(start + i) % n];
            if !slot.opened.load(Ordering::Relaxed) {
                continue;
            }
            let busy = slot.busy.load(Ordering::Relaxed);
            if busy == 0 {
                return slot;
            }
            if least.map_or(true, |(fewest, _)| busy < fewest) {
                least = Some((busy, slot));
            }
        }
        for slot in &self.slots {
            if slot
                .opened
                .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return slot;
            }
        }
        least.map(|(_, slot)| slot).unwrap_or(&self.slots[start])
    }

    /// Runs `op` on a session (see [`PostgresStore::pick`]), under the statement timeout. A
    /// statement that failed because its connection broke is sent once more on a fresh
    /// connection when `repeatable`.
    async fn run<T, F, Fut>(&self, repeatable: bool, op: F) -> Result<T, StoreError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let slot = self.pick();
        let _busy = Busy::new(slot);
        let mut tries = if repeatable { 2 } else { 1 };
        loop {
            tries -= 1;
            let session = self.session(slot).await?;
            match tokio::time::timeout(STATEMENT_TIMEOUT, op(session.clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) => {
                    let broken = broken_connection(&e);
                    if broken {
                        Self::drop_session(slot, &session);
                    }
                    if !(broken && tries > 0) {
                        return Err(self.error(e));
                    }
                }
                Err(_) => {
                    // The connection may be stuck behind the slow statement: start afresh.
                    Self::drop_session(slot, &session);
                    return Err(StoreError::unavailable(format!(
                        "PostgreSQL at {} did not answer within {} s",
                        self.url,
                        STATEMENT_TIMEOUT.as_secs()
                    )));
                }
            }
        }
    }

    fn error(&self, e: tokio_postgres::Error) -> StoreError {
        if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
            return StoreError::Configuration(format!(
                "table {} does not exist in {}; create it with sql/postgres/001_idemkit_records.sql or PostgresStore::create_table_if_missing()",
                self.table, self.url
            ));
        }
        match e.as_db_error() {
            Some(_) => StoreError::unavailable(format!(
                "PostgreSQL at {} answered {}",
                self.url,
                error_text(&e)
            )),
            None => {
                StoreError::unavailable(format!("PostgreSQL at {}: {}", self.url, error_text(&e)))
            }
        }
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        let key = request.id.key.hex();
        let token = request.token.hex();
        let lease_ms = request.lease_ms.min(MAX_SPAN_MS) as i64;
        let ttl_ms = request.ttl_ms.min(MAX_SPAN_MS) as i64;
        let format = RECORD_FORMAT as i32;
        for _ in 0..CLAIM_ATTEMPTS {
            let rows = self
                .run(true, |s| {
                    let (key, token) = (&key, &token);
                    async move {
                        s.client
                            .query(
                                &s.statements.claim,
                                &[
                                    &request.id.tenant,
                                    key,
                                    &format,
                                    &request.scope,
                                    token,
                                    &lease_ms,
                                    &ttl_ms,
                                    &request.retry_failure,
                                ],
                            )
                            .await
                    }
                })
                .await?;
            let Some(row) = rows.first() else {
                // Nothing written and nothing in the snapshot: a concurrent claimer inserted
                // the record after this statement began. The next statement sees it.
                continue;
            };
            let written: bool = row.try_get(0).map_err(corrupt)?;
            let record = record_from_row(row, 1)?
                .ok_or_else(|| StoreError::Corrupt("the claim returned an empty record".into()))?;
            let now_ms: i64 = row.try_get(12).map_err(corrupt)?;
            if written {
                return Ok(ClaimReply {
                    now_ms,
                    claim: Claim::Acquired {
                        lease_end: record.lease_end,
                    },
                });
            }
            let takeover = record.is_expired(now_ms)
                || (request.retry_failure
                    && record.state == RecordState::Completed
                    && matches!(record.outcome, Some(Outcome::Failure(_))));
            if takeover {
                // The snapshot's record was free to take, but a concurrent claimer took it
                // first (the INSERT's re-check said so): read it again.
                continue;
            }
            let claim = if record.state == RecordState::InProgress && record.token == request.token
            {
                Claim::Acquired {
                    lease_end: record.lease_end,
                }
            } else {
                match record.status(now_ms) {
                    Status::Completed => Claim::Completed(record),
                    Status::InProgress => Claim::InProgress(record),
                    Status::Abandoned => Claim::Abandoned(record),
                }
            };
            return Ok(ClaimReply { now_ms, claim });
        }
        Err(StoreError::unavailable(format!(
            "the record kept changing under {CLAIM_ATTEMPTS} claims in a row in {}; try again",
            self.url
        )))
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        outcome: &Outcome,
        ttl_ms: u64,
    ) -> Result<Completion, StoreError> {
        let key = id.key.hex();
        let token_hex = token.hex();
        let (json, kind) = outcome_fields(outcome);
        let ttl_ms = ttl_ms.min(MAX_SPAN_MS) as i64;
        let row = self
            .run(true, |s| {
                let (key, token_hex, json) = (&key, &token_hex, &json);
                async move {
                    s.client
                        .query_one(
                            &s.statements.complete,
                            &[&id.tenant, key, token_hex, &kind, json, &ttl_ms],
                        )
                        .await
                }
            })
            .await?;
        let mut row = row;
        // A record that is ours and in progress, yet was not updated, changed under this
        // statement's snapshot: sending it once more settles it on the latest version.
        for attempt in 0..2 {
            let updated: i64 = row.try_get(0).map_err(corrupt)?;
            if updated > 0 {
                return Ok(Completion::Recorded);
            }
            match record_from_row(&row, 1)? {
                Some(r) if r.token == token && r.state == RecordState::Completed => {
                    return Ok(Completion::Recorded)
                }
                Some(ours) if ours.token == token && attempt == 0 => {}
                found => return Ok(Completion::NotOwner(found)),
            }
            row = self
                .run(true, |s| {
                    let (key, token_hex, json) = (&key, &token_hex, &json);
                    async move {
                        s.client
                            .query_one(
                                &s.statements.complete,
                                &[&id.tenant, key, token_hex, &kind, json, &ttl_ms],
                            )
                            .await
                    }
                })
                .await?;
        }
        unreachable!("the second attempt always returns")
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError> {
        let key = id.key.hex();
        let token = token.hex();
        let deleted = self
            .run(true, |s| {
                let (key, token) = (&key, &token);
                async move {
                    s.client
                        .execute(&s.statements.release, &[&id.tenant, key, token])
                        .await
                }
            })
            .await?;
        Ok(deleted == 1)
    }

    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
        let key = id.key.hex();
        let row = self
            .run(true, |s| {
                let key = &key;
                async move {
                    s.client
                        .query_one(&s.statements.get, &[&id.tenant, key])
                        .await
                }
            })
            .await?;
        let now: i64 = row.try_get(0).map_err(corrupt)?;
        let record = record_from_row(&row, 1)?.filter(|r| !r.is_expired(now));
        Ok((record, now))
    }

    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError> {
        let (after_tenant, after_key) = match cursor {
            None => (String::new(), String::new()),
            Some(c) => parse_cursor(c).ok_or_else(|| {
                StoreError::Configuration(format!("bad list cursor {c:?} for the PostgreSQL store"))
            })?,
        };
        let tenant_key = filter_tenant_key(filter);
        let status: Option<&str> = filter.status.map(Status::name);
        let limit = if filter.limit == 0 {
            1000
        } else {
            filter.limit
        } as i64;
        let rows = self
            .run(true, |s| {
                let (tenant_key, after_tenant, after_key) =
                    (&tenant_key, &after_tenant, &after_key);
                async move {
                    s.client
                        .query(
                            &s.statements.list,
                            &[tenant_key, &status, after_tenant, after_key, &limit],
                        )
                        .await
                }
            })
            .await?;
        let mut now_ms = 0;
        let mut records = Vec::with_capacity(rows.len());
        let mut last = None;
        for row in &rows {
            now_ms = row.try_get(0).map_err(corrupt)?;
            if let Some(record) = record_from_row(row, 1)? {
                let tenant_key = match &record.tenant {
                    None => "_".to_owned(),
                    Some(t) => format!("t{t}"),
                };
                last = Some((tenant_key, record.key.clone()));
                records.push(record);
            }
        }
        let next_cursor = if records.len() as i64 >= limit {
            last.map(|(t, k)| render_cursor(&t, &k))
        } else {
            None
        };
        Ok(Page {
            records,
            next_cursor,
            now_ms,
        })
    }

    async fn newest(&self, filter: &ListFilter) -> Result<Page, StoreError> {
        let tenant_key = filter_tenant_key(filter);
        let status: Option<&str> = filter.status.map(Status::name);
        let limit = if filter.limit == 0 { 100 } else { filter.limit } as i64;
        let rows = self
            .run(true, |s| {
                let tenant_key = &tenant_key;
                async move {
                    s.client
                        .query(&s.statements.newest, &[tenant_key, &status, &limit])
                        .await
                }
            })
            .await?;
        let mut now_ms = 0;
        let mut records = Vec::with_capacity(rows.len());
        for row in &rows {
            now_ms = row.try_get(0).map_err(corrupt)?;
            if let Some(record) = record_from_row(row, 1)? {
                records.push(record);
            }
        }
        Ok(Page {
            records,
            next_cursor: None,
            now_ms,
        })
    }

    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError> {
        let key = id.key.hex();
        let token = expected.hex();
        let (mode, json, kind, ttl_ms) = match resolution {
            Resolution::Release => ("release", None, None, 0i64),
            Resolution::Complete { outcome, ttl_ms } => {
                let (json, kind) = outcome_fields(outcome);
                (
                    "complete",
                    Some(json),
                    Some(kind),
                    (*ttl_ms).min(MAX_SPAN_MS) as i64,
                )
            }
        };
        // A row that changed between this statement's snapshot and its write is read again.
        // A statement whose connection broke is sent once more (on a fresh connection); should
        // the first one have landed, the second finds the outcome recorded: see
        // `repeated_resolution`.
        let sent = AtomicUsize::new(0);
        for _ in 0..3 {
            let row = self
                .run(true, |s| {
                    let (key, token, json) = (&key, &token, &json);
                    sent.fetch_add(1, Ordering::Relaxed);
                    async move {
                        s.client
                            .query_one(
                                &s.statements.resolve,
                                &[&id.tenant, key, token, &mode, &kind, json, &ttl_ms],
                            )
                            .await
                    }
                })
                .await?;
            let done: i64 = row.try_get(0).map_err(corrupt)?;
            if done > 0 {
                return Ok(Resolved::Done);
            }
            match record_from_row(&row, 1)? {
                None => return Ok(Resolved::NotFound),
                Some(r) if r.state == RecordState::Completed => {
                    let answer = Resolved::AlreadyCompleted(r);
                    return Ok(if sent.load(Ordering::Relaxed) > 1 {
                        repeated_resolution(answer, expected, resolution)
                    } else {
                        answer
                    });
                }
                Some(r) if r.token != expected => return Ok(Resolved::TokenMismatch(r)),
                Some(_) => continue,
            }
        }
        Err(StoreError::unavailable(format!(
            "the record kept changing while it was being resolved in {}; try again",
            self.url
        )))
    }

    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        // An operator's rare action: one DELETE, not prepared with the hot statements. It
        // answers whether the row it removed was live.
        let sql = format!(
            "DELETE FROM {} WHERE tenant_key = (CASE WHEN $1::text IS NULL THEN '_' ELSE 't' || $1::text END)
  AND key = $2::text
RETURNING expires_at > date_trunc('milliseconds', clock_timestamp())",
            self.table
        );
        let key = id.key.hex();
        let row = self
            .run(true, |s| {
                let (sql, key) = (&sql, &key);
                async move { s.client.query_opt(sql.as_str(), &[&id.tenant, key]).await }
            })
            .await?;
        match row {
            Some(row) => row.try_get::<_, bool>(0).map_err(corrupt),
            None => Ok(false),
        }
    }

    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
        let tenant = tenant.map(nfc);
        let tenant = tenant.as_deref();
        let mut removed = 0u64;
        loop {
            let n = self
                .run(true, |s| async move {
                    s.client
                        .execute(&s.statements.forget, &[&tenant, &DELETE_BATCH])
                        .await
                })
                .await?;
            removed += n;
            if (n as i64) < DELETE_BATCH {
                return Ok(removed);
            }
        }
    }

    async fn purge_expired(&self) -> Result<u64, StoreError> {
        let mut removed = 0u64;
        loop {
            let n = self
                .run(true, |s| async move {
                    s.client
                        .execute(&s.statements.purge, &[&DELETE_BATCH])
                        .await
                })
                .await?;
            removed += n;
            if (n as i64) < DELETE_BATCH {
                return Ok(removed);
            }
        }
    }

    fn max_outcome_bytes(&self) -> usize {
        self.max_outcome_bytes
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

/// The `tenant_key` a filter asks for (the NFC form of its tenant), or `None` for every tenant.
fn filter_tenant_key(filter: &ListFilter) -> Option<String> {
    filter.tenant.as_ref().map(|t| match t {
        None => "_".to_owned(),
        Some(t) => format!("t{}", nfc(t)),
    })
}

/// A list cursor: the hex of the last row's tenant_key, a dot, its key.
fn render_cursor(tenant_key: &str, key: &str) -> String {
    let mut out = String::from("p1.");
    for b in tenant_key.bytes() {
        out.push_str(&format!("{b:02x}"));
    }
    out.push('.');
    out.push_str(key);
    out
}

fn parse_cursor(text: &str) -> Option<(String, String)> {
    let rest = text.strip_prefix("p1.")?;
    let (hex, key) = rest.split_once('.')?;
    if hex.len() % 2 != 0 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    let tenant_key = String::from_utf8(bytes?).ok()?;
    Some((tenant_key, key.to_owned()))
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
    fn schema_sql_substitutes_the_table_name() {
        let ddl = schema_sql("app.records").unwrap();
        assert!(ddl.contains("CREATE TABLE IF NOT EXISTS app.records ("));
        assert!(ddl.contains(
            "CREATE INDEX IF NOT EXISTS records_expires_at_idx ON app.records (expires_at)"
        ));
        assert!(!ddl.contains("idemkit_records"));
        assert!(schema_sql("bad name").is_err());
    }

    #[test]
    fn list_cursors_round_trip() {
        let key = "ab".repeat(32);
        for tenant_key in ["_", "t", "tacme", "tJosé.x"] {
            let c = render_cursor(tenant_key, &key);
            assert_eq!(parse_cursor(&c), Some((tenant_key.to_owned(), key.clone())));
        }
        assert_eq!(parse_cursor("junk"), None);
    }
}
