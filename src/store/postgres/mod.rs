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
//! **The claim function** (`sql/postgres/006_idemkit_records_claim_function.sql`,
//! `{table}_claim`) answers as that statement does, in one round trip: it first reads the live
//! record the claim would not take over with one indexed `SELECT` and answers it; only when
//! there is none does it run the statement's `INSERT ... ON CONFLICT` (the same text), and then,
//! if a concurrent claimer's row won, reads that row. A repeat then costs the server a lookup
//! instead of setting up the `INSERT`. On a table without the function the store sends the
//! statement itself (warning once per connection); the answers are the same.
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
//! **TLS**: libpq's `sslmode` (`disable`, `prefer` — the default —, `require`, `verify-ca`,
//! `verify-full`) and `sslrootcert`, over rustls: see the `tls` module for what each mode
//! checks.
//!
//! **Code**: the schema and statements are in `sql`, reading rows and cursors in `codec`, the
//! connections in `pool`, PostgreSQL errors in `errors`; this file holds the [`Store`]
//! operations.

mod codec;
mod errors;
mod pool;
mod sql;
mod tls;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_postgres::Config;

use self::codec::{corrupt, filter_tenant_key, parse_cursor, record_from_row, render_cursor};
use self::errors::error_text;
use self::pool::{Slot, CONNECTIONS, CONNECT_TIMEOUT, STATEMENT_TIMEOUT};
use self::sql::Sql;
pub use self::sql::{
    claim_function_sql, claim_statement, create_table_sql, schema_sql, statements,
    statements_without_fingerprint, validate_table_name, CLAIMED_AT_INDEX_SQL, CLAIM_FUNCTION_FILE,
    CLAIM_FUNCTION_SQL, DEFAULT_TABLE, FINGERPRINT_FILE, FINGERPRINT_SQL, HELD_OUTCOME_SQL,
    HOT_UPDATES_SQL, SCHEMA_SQL,
};
use super::{
    checked_timeout, nfc, not_deleted, redact_url, repeated_resolution, take_url_settings, Claim,
    ClaimReply, ClaimRequest, Completion, Deleted, ListFilter, Page, RecordId, Resolution,
    Resolved, Store, StoreOptions, TakeOver, TakeOverRequest, DEFAULT_MAX_OUTCOME_BYTES,
    MAX_POOL_SIZE, MAX_SPAN_MS,
};
use crate::error::StoreError;
use crate::record::{Outcome, Record, RecordState, Status, Token, RECORD_FORMAT};
use crate::runtime::LaneLocal;

/// How often a claim is sent again when racing claimers made its snapshot stale.
const CLAIM_ATTEMPTS: usize = 8;
/// Rows one `purge_expired` or `forget` statement deletes.
const DELETE_BATCH: i64 = 1000;

/// Records in a PostgreSQL table: see the module documentation.
pub struct PostgresStore {
    config: Config,
    table: String,
    sql: Sql,
    /// The statements for a table made before `006_idemkit_records_claim_function.sql`.
    sql_without_claim_function: Sql,
    /// The statements for a table made before `005_idemkit_records_fingerprint.sql`.
    sql_without_fingerprint: Sql,
    slots: Vec<Slot>,
    /// One connection per caller lane (see `crate::runtime`), beside `slots`.
    lane_slots: LaneLocal<Arc<Slot>>,
    next: AtomicUsize,
    url: String,
    max_outcome_bytes: usize,
    /// How long one statement may take (see [`StoreOptions::statement_timeout`]).
    statement_timeout: Duration,
    /// How long opening a connection may take, startup included.
    connect_timeout: Duration,
    /// libpq's `sslmode`.
    ssl_mode: tls::SslMode,
    /// The TLS connector, unless `sslmode=disable`.
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.url)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user[:password]@host[:port]/database[?sslmode=...]`).
    ///
    /// Connection settings: `options.connect_timeout` (default 2 s; the URL's libpq
    /// `connect_timeout`, in seconds, wins), `options.statement_timeout` (default 5 s; URL
    /// `statement_timeout_ms`) and `options.pool_size` (default 16; URL `pool_size`), plus one
    /// connection per caller lane that C and Java calls used (up to `IDEMKIT_CALLER_LANES`,
    /// default 8).
    ///
    /// Checks the table name and that the server answers; the table itself may be created
    /// afterwards with [`PostgresStore::create_table_if_missing`] (until then calls fail with a
    /// message saying so); a table that does not exist yet is warned about.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<PostgresStore, StoreError> {
        Self::connect_checking(url, options, true).await
    }

    /// Connects to `url` as [`PostgresStore::connect`] does and creates the table if it is
    /// missing ([`PostgresStore::create_table_if_missing`]), then lets the connection go: what a
    /// face's create-table call does without a store of its own (the Java face's
    /// `PostgresIdempotencyStore.createTableIfMissing()` of a store opened by URL). It does not
    /// warn that the table is missing, since it is about to make it.
    pub async fn create_table_at(url: &str, options: &StoreOptions) -> Result<(), StoreError> {
        Self::connect_checking(url, options, false)
            .await?
            .create_table_if_missing()
            .await
    }

    async fn connect_checking(
        url: &str,
        options: &StoreOptions,
        check_table: bool,
    ) -> Result<PostgresStore, StoreError> {
        let shown = redact_url(url);
        let (url, settings) = take_url_settings(url, "PostgreSQL")?;
        let url = url.as_str();
        let statement_timeout = settings
            .statement_timeout
            .or(checked_timeout(
                "statement_timeout",
                options.statement_timeout,
            )?)
            .unwrap_or(STATEMENT_TIMEOUT);
        let pool_size = match settings.pool_size.or(options.pool_size) {
            Some(n) if n == 0 || n > MAX_POOL_SIZE => {
                return Err(StoreError::Configuration(format!(
                    "StoreOptions.pool_size is {n}; give a number of connections from 1 to {MAX_POOL_SIZE}, or None for the default ({CONNECTIONS})"
                )))
            }
            Some(n) => n,
            None => CONNECTIONS,
        };
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
        let ssl_mode = match settings.ssl_mode.as_deref() {
            Some(name) => tls::SslMode::from_name(name, &shown)?,
            None => tls::SslMode::Prefer,
        };
        let tls = tls::connector(ssl_mode, settings.ssl_root_cert.as_deref(), &shown)?;
        config.ssl_mode(ssl_mode.negotiation());
        if config.get_connect_timeout().is_none() {
            let timeout = checked_timeout("connect_timeout", options.connect_timeout)?;
            config.connect_timeout(timeout.unwrap_or(CONNECT_TIMEOUT));
        }
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        if config.get_application_name().is_none() {
            config.application_name("idemkit");
        }
        let store = PostgresStore {
            config,
            sql: Sql::new(&table),
            sql_without_claim_function: Sql::without_claim_function(&table),
            sql_without_fingerprint: Sql::without_fingerprint(&table),
            table,
            slots: (0..pool_size).map(|_| Slot::default()).collect(),
            lane_slots: LaneLocal::default(),
            next: AtomicUsize::new(0),
            url: shown,
            max_outcome_bytes: options
                .max_outcome_bytes
                .unwrap_or(DEFAULT_MAX_OUTCOME_BYTES),
            statement_timeout,
            connect_timeout,
            ssl_mode,
            tls,
        };
        let client = store.raw_connection().await?;
        if !check_table {
            return Ok(store);
        }
        let found: Option<String> = client
            .query_one("SELECT to_regclass($1)::text", &[&store.table])
            .await
            .map_err(|e| store.error(e))?
            .get(0);
        if found.is_none() {
            log::warn!(
                "idemkit: table {} does not exist in {} yet; create it with sql/postgres/001_idemkit_records.sql or {}",
                store.table,
                store.url,
                sql::CREATE_TABLE_CALL
            );
        }
        Ok(store)
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Creates the table and its indexes if they do not exist (the DDL of every file of
    /// `sql/postgres/`, 001 to 006, with this store's table name): on a table made by 001 it
    /// adds the claimed_at index of 002, lets `outcome_kind` hold the held failures of 003,
    /// applies 004 (fillfactor 80, no expires_at index), adds the `fingerprint` column of
    /// 005 and (re)creates the claim function of 006. A table without that column keeps working,
    /// without fingerprints (a warning names the file); connections made after the column is
    /// added keep them. Likewise a table without the function: its claims send the statement.
    ///
    /// The DDL runs as one transaction that first waits for the table's `ACCESS EXCLUSIVE` lock
    /// (when the table exists), holding nothing: taking weaker locks first (`CREATE INDEX IF NOT
    /// EXISTS` holds `SHARE`) and then the exclusive one (`ALTER TABLE`) deadlocked with a claim
    /// on the table. Creators of one table in several processes take turns (an advisory lock).
    pub async fn create_table_if_missing(&self) -> Result<(), StoreError> {
        let ddl = create_table_sql(&self.table)?;
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
                                    &request.fingerprint,
                                    &request.payload_checked,
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
            let now_ms: i64 = row.try_get(13).map_err(corrupt)?;
            if written {
                return Ok(ClaimReply {
                    now_ms,
                    claim: Claim::Acquired {
                        lease_end: record.lease_end,
                    },
                });
            }
            let takeover = record.is_expired(now_ms) || request.replaces_failure(&record);
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
        let (json, kind) = outcome.stored();
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
                let (json, kind) = outcome.stored();
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
                // A held failure waits for an operator like an abandoned claim.
                Some(r) if r.state == RecordState::Completed && !r.is_held() => {
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

    async fn take_over(&self, request: &TakeOverRequest<'_>) -> Result<TakeOver, StoreError> {
        // A rare action (an abandoned claim of a key-honouring tool): one UPDATE, not prepared
        // with the hot statements.
        let sql = sql::take_over_sql(&self.table);
        let key = request.id.key.hex();
        let expected = request.expected.hex();
        let token = request.token.hex();
        let lease_ms = request.lease_ms.min(MAX_SPAN_MS) as i64;
        let ttl_ms = request.ttl_ms.min(MAX_SPAN_MS) as i64;
        let tenant = request.id.tenant;
        let row = self
            .run(true, |s| {
                let (sql, key, expected, token) = (&sql, &key, &expected, &token);
                async move {
                    s.client
                        .query_opt(
                            sql.as_str(),
                            &[&tenant, key, expected, token, &lease_ms, &ttl_ms],
                        )
                        .await
                }
            })
            .await?;
        if let Some(row) = row {
            let lease_end: i64 = row.try_get(0).map_err(corrupt)?;
            return Ok(TakeOver::Acquired { lease_end });
        }
        // Not taken. A statement sent again after a broken connection finds its own take-over
        // landed: the record holds this very token.
        let (record, _) = self.get(request.id).await?;
        Ok(match record {
            Some(r) if r.token == request.token && r.state == RecordState::InProgress => {
                TakeOver::Acquired {
                    lease_end: r.lease_end,
                }
            }
            other => TakeOver::Lost(other),
        })
    }

    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        // An operator's rare action: one DELETE, not prepared with the hot statements. It
        // answers whether the row it removed was live.
        let sql = sql::delete_sql(&self.table);
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

    async fn delete_held(&self, id: RecordId<'_>, expected: Token) -> Result<Deleted, StoreError> {
        let sql = sql::delete_held_sql(&self.table);
        let (key, token) = (id.key.hex(), expected.hex());
        let deleted = self
            .run(true, |s| {
                let (sql, key, token) = (&sql, &key, &token);
                async move {
                    s.client
                        .execute(sql.as_str(), &[&id.tenant, key, token])
                        .await
                }
            })
            .await?;
        if deleted == 1 {
            return Ok(Deleted::Done);
        }
        Ok(not_deleted(self.get(id).await?.0))
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
