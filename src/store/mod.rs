//! The Store interface every backend implements: atomic claims, owner-checked outcomes, expiry.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::error::StoreError;
use crate::key::Key;
use crate::record::{Outcome, Record, Status, Token};

pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;

pub use memory::{Clock, ManualClock, MemoryStore, SystemClock};

/// The default largest success result (serialised JSON) a store keeps: 1 MiB.
pub const DEFAULT_MAX_OUTCOME_BYTES: usize = 1 << 20;

/// Where a record lives: its tenant and key. Records are tenant-scoped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordId<'a> {
    pub tenant: Option<&'a str>,
    pub key: &'a Key,
}

/// One atomic claim of a key.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    pub id: RecordId<'a>,
    /// The tool or action name, kept in the record for operators.
    pub scope: &'a str,
    /// The caller's owner token.
    pub token: Token,
    /// `lease_end = now + lease_ms`.
    pub lease_ms: u64,
    /// `expires_at = lease_end + ttl_ms` while in progress.
    pub ttl_ms: u64,
    /// `RETURN_CACHED_IF_SUCCESS`: a remembered failure is replaced by this claim in the same
    /// atomic operation.
    pub retry_failure: bool,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key was free (no record, an expired one, a replaced failure) or already held by this
    /// token: the caller runs the body.
    Acquired { lease_end: i64 },
    /// A remembered outcome exists.
    Completed(Record),
    /// Another token holds a live claim.
    InProgress(Record),
    /// A claim whose lease ended without an outcome. Never taken over.
    Abandoned(Record),
}

/// A claim's answer with the store's clock at the time it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimReply {
    pub now_ms: i64,
    pub claim: Claim,
}

/// What `complete` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The outcome is recorded (or was already recorded under the same token).
    Recorded,
    /// The record is gone or holds another token (an operator resolved or forgot it); nothing changed.
    NotOwner(Option<Record>),
}

/// How an operator settles an in-progress or abandoned record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Delete the claim: the next call runs the body.
    Release,
    /// Record this outcome: the next call gets it. Kept for `ttl_ms` from now.
    Complete { outcome: Outcome, ttl_ms: u64 },
}

/// What `resolve` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Done,
    NotFound,
    /// The record holds another token than the operator expected (it changed meanwhile).
    TokenMismatch(Record),
    /// The record is completed; resolving it would override a known outcome.
    AlreadyCompleted(Record),
}

/// Which records `list` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// `None`: every tenant; `Some(None)`: records without a tenant; `Some(Some(t))`: tenant `t`.
    pub tenant: Option<Option<String>>,
    pub status: Option<Status>,
    /// At most this many records per page (the store may return fewer; 0 means its default).
    pub limit: usize,
}

impl ListFilter {
    /// Whether a live record at store time `now` passes the filter.
    pub fn matches(&self, record: &Record, now: i64) -> bool {
        if let Some(tenant) = &self.tenant {
            if record.tenant.as_deref() != tenant.as_deref() {
                return false;
            }
        }
        match self.status {
            Some(s) => record.status(now) == s,
            None => true,
        }
    }
}

/// One page of `list`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub records: Vec<Record>,
    /// Pass back to get the next page; `None` when the scan is done.
    pub next_cursor: Option<String>,
    /// The store's clock when the page was read (for working out `abandoned`).
    pub now_ms: i64,
}

/// The store interface (SPEC §4). Every implementation — including one a user writes — must pass
/// the conformance suite in `idemkit::testing` (feature `testing`).
///
/// *now* is always the store's own clock. Expired records (`now >= expires_at`) are invisible to
/// every read and may be taken over by a claim.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Claims `request.id` in one atomic operation.
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError>;

    /// Records `outcome` on a record holding `token`; `expires_at = now + ttl_ms`. Succeeds after
    /// the lease ended, and answers `Recorded` again for a record already completed with `token`.
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        outcome: &Outcome,
        ttl_ms: u64,
    ) -> Result<Completion, StoreError>;

    /// Deletes an in-progress record holding `token`; answers whether it did.
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError>;

    /// The live record, if any, and the store's clock.
    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError>;

    /// Live records passing `filter`, a page at a time.
    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError>;

    /// Settles an in-progress or abandoned record whose token is `expected` (operators).
    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError>;

    /// Deletes the record `id`, whatever its state (operators); answers whether there was a live
    /// one. Every other record, of this key under another tenant too, is left alone.
    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError>;

    /// Deletes every record of `tenant` (`None`: the records without a tenant); answers how many.
    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError>;

    /// Deletes expired records (in batches); answers how many.
    async fn purge_expired(&self) -> Result<u64, StoreError>;

    /// Waits until the record `id`, held by `holder`, may have changed, or until `until`.
    ///
    /// The default polls: it sleeps a capped, jittered backoff (≈5 ms doubling to ≈200 ms) for
    /// the `attempt`-th wait. Stores that can push a notification override it.
    async fn wait_for_change(
        &self,
        id: RecordId<'_>,
        holder: Token,
        until: Instant,
        attempt: u32,
    ) -> Result<(), StoreError> {
        let _ = (id, holder);
        let pause = poll_backoff(attempt);
        let now = Instant::now();
        let pause = pause.min(until.saturating_duration_since(now));
        tokio::time::sleep(pause).await;
        Ok(())
    }

    /// The largest success result (serialised JSON, bytes) this store keeps.
    fn max_outcome_bytes(&self) -> usize {
        DEFAULT_MAX_OUTCOME_BYTES
    }

    /// A short description for messages (`memory`, `redis://127.0.0.1:6379/`, ...), without secrets.
    fn describe(&self) -> String;
}

/// The polling pause before the `attempt`-th re-check: ≈5 ms doubling to a 200 ms cap, with
/// ±25 % jitter so that many waiters do not poll in step.
pub fn poll_backoff(attempt: u32) -> Duration {
    let base_ms = (5u64 << attempt.min(6)).min(200);
    let mut byte = [0u8; 1];
    let jitter = if getrandom::fill(&mut byte).is_ok() {
        byte[0] as f64 / 255.0
    } else {
        0.5
    };
    Duration::from_secs_f64(base_ms as f64 * (0.75 + 0.5 * jitter) / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_backoff_starts_near_5ms_and_caps_near_200ms() {
        let first = poll_backoff(0);
        assert!(first >= Duration::from_micros(3750) && first <= Duration::from_micros(6250));
        let late = poll_backoff(30);
        assert!(late >= Duration::from_millis(150) && late <= Duration::from_millis(250));
    }
}

/// How to open a store by URL (see [`open`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// Redis: the key prefix (default `idemkit:`).
    pub key_prefix: Option<String>,
    /// PostgreSQL: the table name, validated as an SQL identifier (default `idemkit_records`).
    pub table: Option<String>,
    /// Redis: open even if the server's `maxmemory-policy` may evict keys (breaks the guarantee).
    pub allow_evicting: bool,
    /// The largest success result kept (default 1 MiB).
    pub max_outcome_bytes: Option<usize>,
}

/// Opens a store by URL: `memory:` (a new in-memory store), `redis://`/`rediss://` and
/// `redis+cluster://`/`rediss+cluster://` (feature `redis`), `postgres://`/`postgresql://`
/// (feature `postgres`). Must be called inside a tokio
/// runtime. Errors name the URL without its password.
pub async fn open(
    url: &str,
    options: &StoreOptions,
) -> Result<std::sync::Arc<dyn Store>, crate::Error> {
    let scheme = url.split(':').next().unwrap_or("").to_ascii_lowercase();
    match scheme.as_str() {
        "memory" => {
            let mut store = MemoryStore::new();
            if let Some(max) = options.max_outcome_bytes {
                store = store.with_max_outcome_bytes(max);
            }
            Ok(std::sync::Arc::new(store))
        }
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+cluster" | "rediss+cluster" => {
            let store = redis::RedisStore::connect(url, options)
                .await
                .map_err(|e| opening_failed(url, e))?;
            Ok(std::sync::Arc::new(store))
        }
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => {
            let store = postgres::PostgresStore::connect(url, options)
                .await
                .map_err(|e| opening_failed(url, e))?;
            Ok(std::sync::Arc::new(store))
        }
        _ => Err(crate::Error::Configuration(format!(
            "cannot open store {}: unknown or disabled scheme `{scheme}`; use memory:, redis://, rediss://, redis+cluster://, rediss+cluster://, postgres:// or postgresql:// (Redis and PostgreSQL need the cargo features `redis` and `postgres`)",
            redact_url(url)
        ))),
    }
}

/// A store that could not be opened: a configuration error stays one; anything else means the
/// server could not be reached or answered an error.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn opening_failed(url: &str, error: StoreError) -> crate::Error {
    match error {
        StoreError::Configuration(message) => crate::Error::Configuration(message),
        other => crate::Error::StoreUnavailable {
            tool: format!("opening {}", redact_url(url)),
            message: other.to_string(),
        },
    }
}

/// The URL with any password replaced by `***`, for messages.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            let user = match userinfo.find(':') {
                Some(colon) => format!("{}:***", &userinfo[..colon]),
                None => userinfo.to_owned(),
            };
            format!("{}{}{}", &url[..scheme_end + 3], user, &rest[at..])
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod url_tests {
    use super::redact_url;

    #[test]
    fn passwords_are_redacted_from_urls() {
        assert_eq!(
            redact_url("redis://:s3cret@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(
            redact_url("postgres://app:pw@localhost/db?sslmode=disable"),
            "postgres://app:***@localhost/db?sslmode=disable"
        );
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        assert_eq!(redact_url("memory:"), "memory:");
    }
}
