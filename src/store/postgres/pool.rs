//! The connections of a PostgreSQL store: up to [`CONNECTIONS`] sessions, each a connection
//! with every statement prepared on it, opened as concurrent callers need them and replaced
//! when they break; and one more per caller lane (see `crate::runtime`), made on that lane and
//! used only there, so that a C or Java caller's thread drives its statements itself.
//!
//! Hand-made rather than taken from a pool crate: a tokio-postgres client pipelines the
//! statements of concurrent callers, so at the limit a caller shares the least busy
//! connection instead of waiting for a free one; every connection has all statements prepared
//! on it before use; and a statement whose connection broke is sent once more on a fresh one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::{Client, Config, NoTls, Statement};

use super::errors::error_text;
use super::sql::EachStatement;
use super::tls::SslMode;
use super::PostgresStore;
use crate::error::StoreError;

/// The most connections a store opens, unless configured (`pool_size`). They are opened as
/// concurrent callers need them: a call takes an idle connection, or opens one more, or (at
/// the limit) shares the least busy one, whose statements tokio-postgres then pipelines.
/// Commits on one connection wait for each other's WAL flush, so concurrent callers need
/// connections of their own to commit together.
///
/// Besides these, a store keeps one connection per caller lane that C and Java callers used
/// (`crate::runtime::lanes`, `IDEMKIT_CALLER_LANES`).
pub(super) const CONNECTIONS: usize = 16;
/// How long connecting may take, the server's startup answers included, unless configured
/// (libpq's `connect_timeout`, or `StoreOptions::connect_timeout`).
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one statement may take before the call fails as store-unavailable, unless
/// configured (`statement_timeout_ms`).
pub(super) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// The statements of one connection, prepared when it is made.
pub(super) type Statements = EachStatement<Statement>;

/// One connection and its prepared statements.
pub(super) struct Session {
    pub(super) client: Client,
    pub(super) statements: Statements,
}

#[derive(Default)]
pub(super) struct Slot {
    current: Mutex<Option<Arc<Session>>>,
    connecting: tokio::sync::Mutex<()>,
    /// Whether the slot is in use (it has, or is making, a connection).
    opened: AtomicBool,
    /// Statements in flight on the slot's connection.
    busy: AtomicUsize,
}

impl Slot {
    /// The slot of a caller lane: never picked by [`PostgresStore::pick`], its connection made
    /// on the lane at first use.
    pub(super) fn for_lane() -> Arc<Slot> {
        let slot = Slot::default();
        slot.opened.store(true, Ordering::Relaxed);
        Arc::new(slot)
    }
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

/// Drives a connection in the background until it closes.
fn spawn_connection<F>(connection: F)
where
    F: std::future::Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            log::debug!("idemkit: PostgreSQL connection ended: {e}");
        }
    });
}

/// Whether connecting failed in TLS (negotiation or handshake).
fn is_tls_error(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_none() && e.to_string().starts_with("error performing TLS handshake")
}

impl PostgresStore {
    pub(super) async fn raw_connection(&self) -> Result<Client, StoreError> {
        // tokio-postgres bounds only the TCP connect by `connect_timeout`: a server that
        // accepts and then never answers the startup would hold the caller forever.
        let connecting = tokio::time::timeout(self.connect_timeout, self.connect_once());
        connecting.await.map_err(|_| {
            StoreError::unavailable(format!(
                "cannot connect to {}: no answer within {} ms (the connect timeout; set connect_timeout=<seconds> in the URL or StoreOptions::connect_timeout)",
                self.url,
                self.connect_timeout.as_millis()
            ))
        })?
    }

    /// Connects as `sslmode` says; with `prefer`, a TLS handshake that fails is followed by
    /// one try in plain text, as libpq does.
    async fn connect_once(&self) -> Result<Client, StoreError> {
        let Some(tls) = &self.tls else {
            return self.plain_connection(&self.config).await;
        };
        match self.config.connect(tls.clone()).await {
            Ok((client, connection)) => {
                spawn_connection(connection);
                Ok(client)
            }
            Err(e) if self.ssl_mode == SslMode::Prefer && is_tls_error(&e) => {
                log::debug!(
                    "idemkit: TLS to {} failed ({}); sslmode=prefer connects in plain text",
                    self.url,
                    error_text(&e)
                );
                let mut plain = self.config.clone();
                plain.ssl_mode(tokio_postgres::config::SslMode::Disable);
                self.plain_connection(&plain).await
            }
            Err(e) => Err(self.connect_error(e)),
        }
    }

    async fn plain_connection(&self, config: &Config) -> Result<Client, StoreError> {
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| self.connect_error(e))?;
        spawn_connection(connection);
        Ok(client)
    }

    /// A failed connect: a TLS failure the configuration must fix (the server has no TLS but
    /// `sslmode` asks for it, or its certificate does not check out) is a configuration error
    /// that says what to change; anything else means the server could not be reached.
    fn connect_error(&self, e: tokio_postgres::Error) -> StoreError {
        let text = error_text(&e);
        if !is_tls_error(&e) {
            // The driver's error stays the source.
            return StoreError::driver_message(
                format!("cannot connect to {}: {text}", self.url),
                e,
            );
        }
        let mode = self.ssl_mode.name();
        let fix = if text.contains("server does not support TLS") {
            format!("the server does not offer TLS, and sslmode={mode} needs it; turn ssl on in the server, or use sslmode=prefer or disable")
        } else if text.contains("certificate") {
            format!("the server's certificate did not check out under sslmode={mode}: give sslrootcert=<PEM file> holding the CA that signed it, and connect by the host name (or IP address) the certificate is made out to; verify-ca checks only the CA")
        } else {
            format!("the TLS handshake failed under sslmode={mode}")
        };
        StoreError::Configuration(format!(
            "cannot connect to {} over TLS: {text}; {fix}",
            self.url
        ))
    }
    async fn new_session(&self) -> Result<Session, StoreError> {
        let client = self.raw_connection().await?;
        let statements = match self.prepare_all(&client, &self.sql).await {
            Err((_, e)) if super::errors::lacks_claim_function(&e) => {
                // A table made before the claim function: the claim statement is sent as it
                // is, which costs a repeat more server time but answers the same. (A missing
                // table has no function either: that is said below, not warned here.)
                let plain = self
                    .prepare_all(&client, &self.sql_without_claim_function)
                    .await;
                let no_table = matches!(&plain, Err((_, e)) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE));
                if !no_table {
                    log::warn!(
                        "idemkit: table {} in {} has no claim function, so every claim runs the full claim statement; apply {} or call {}",
                        self.table,
                        self.url,
                        super::sql::CLAIM_FUNCTION_FILE,
                        super::sql::CREATE_TABLE_CALL
                    );
                }
                plain
            }
            other => other,
        };
        let statements = match statements {
            Err((_, e)) if super::errors::lacks_fingerprint(&e) => {
                // A table made by idemkit 1.0: it keeps working, without fingerprints (its
                // records never mismatch, SPEC v1.1 rule 9), until the migration is applied.
                log::warn!(
                    "idemkit: table {} in {} has no fingerprint column, so payload mismatches cannot be detected; apply {} or call {}",
                    self.table,
                    self.url,
                    super::sql::FINGERPRINT_FILE,
                    super::sql::CREATE_TABLE_CALL
                );
                self.prepare_all(&client, &self.sql_without_fingerprint)
                    .await
            }
            other => other,
        };
        let statements = statements.map_err(|(text, e)| {
            if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
                StoreError::Configuration(format!(
                    "table {} does not exist in {}; create it with sql/postgres/001_idemkit_records.sql or {}",
                    self.table,
                    self.url,
                    super::sql::CREATE_TABLE_CALL
                ))
            } else {
                let message = format!(
                    "cannot prepare the {text} statement on {}: {}",
                    self.url,
                    error_text(&e)
                );
                StoreError::driver_message(message, e)
            }
        })?;
        Ok(Session { statements, client })
    }

    /// Prepares every statement of `sql` on `client`; an error names the statement.
    async fn prepare_all(
        &self,
        client: &Client,
        sql: &super::sql::Sql,
    ) -> Result<Statements, (&'static str, tokio_postgres::Error)> {
        let prepare = |text: &'static str, sql: &str| {
            let sql = sql.to_owned();
            async move { client.prepare(&sql).await.map_err(|e| (text, e)) }
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
        Ok(Statements {
            claim,
            complete,
            release,
            get,
            list,
            newest,
            resolve,
            forget,
            purge,
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
            if least.is_none_or(|(fewest, _)| busy < fewest) {
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
    pub(super) async fn run<T, F, Fut>(&self, repeatable: bool, op: F) -> Result<T, StoreError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        // A C or Java caller's thread drives its lane's own connection (see `crate::runtime`).
        let lane_slot = self.lane_slots.get(Slot::for_lane);
        let slot = match &lane_slot {
            Some(slot) => slot,
            None => self.pick(),
        };
        let _busy = Busy::new(slot);
        let mut tries = if repeatable { 2 } else { 1 };
        loop {
            tries -= 1;
            let session = self.session(slot).await?;
            match tokio::time::timeout(self.statement_timeout, op(session.clone())).await {
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
                        "PostgreSQL at {} did not answer within {} ms (the statement timeout; statement_timeout_ms in the URL or StoreOptions::statement_timeout)",
                        self.url,
                        self.statement_timeout.as_millis()
                    )));
                }
            }
        }
    }
}
