//! The Store interface every backend implements: atomic claims, owner-checked outcomes, expiry.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::error::StoreError;
/// The NFC form of a tenant (SPEC v1.1 rule 1: records are made under it).
pub(crate) use crate::key::nfc;
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

/// [`crate::policy::MAX_SPAN`] in milliseconds: the Redis and PostgreSQL stores cap every lease
/// and TTL they are sent at it, so that times stay exact (in Lua's doubles too).
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) const MAX_SPAN_MS: u64 = crate::policy::MAX_SPAN.as_millis() as u64;

/// Where a record lives: its tenant and key. Records are tenant-scoped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordId<'a> {
    /// The tenant, in NFC (`None`: no tenant).
    pub tenant: Option<&'a str>,
    /// The key.
    pub key: &'a Key,
}

/// One atomic claim of a key.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The record to claim.
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
    /// The call's payload fingerprint (SPEC v1.1 rule 9, [`crate::key::fingerprint`]), kept in
    /// the record a successful claim makes; `None` when the call has no input.
    pub fingerprint: Option<&'a str>,
    /// Whether the policy refuses a repeat with another payload (SPEC v1.1 rule 9). With
    /// `retry_failure`, a remembered failure whose fingerprint differs from `fingerprint` (both
    /// present) is then not replaced but answered as [`Claim::Completed`], in the same atomic
    /// operation, so that the executor refuses the call and nothing runs
    /// ([`ClaimRequest::replaces_failure`]).
    pub payload_checked: bool,
}

impl ClaimRequest<'_> {
    /// Whether this claim replaces the live, remembered `record` (`RETURN_CACHED_IF_SUCCESS`):
    /// it asks to (`retry_failure`), the record holds a failure, and — when the payload is
    /// checked — the record's fingerprint is not another payload's (a record or a call without
    /// one never differs). Every store's claim decides by this rule, inside its atomic step.
    pub fn replaces_failure(&self, record: &Record) -> bool {
        self.retry_failure
            && record.state == crate::record::RecordState::Completed
            && matches!(record.outcome, Some(Outcome::Failure(_)))
            && !self.payload_differs(record)
    }

    /// Whether the payload is checked and the record was made by another payload.
    fn payload_differs(&self, record: &Record) -> bool {
        self.payload_checked
            && matches!(
                (self.fingerprint, record.fingerprint.as_deref()),
                (Some(ours), Some(theirs)) if ours != theirs
            )
    }
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key was free (no record, an expired one, a replaced failure) or already held by this
    /// token: the caller runs the body.
    Acquired {
        /// When the new claim's lease ends, on the store's clock.
        lease_end: i64,
    },
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
    /// The store's clock when it claimed, in milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// What the claim found.
    pub claim: Claim,
}

/// What `complete` did.
#[derive(Debug, Clone, PartialEq, Eq)]
// `NotOwner` is rare (an operator acted meanwhile) and boxing its record would change the
// public type for no measurable gain: one `Completion` per settled call.
#[allow(clippy::large_enum_variant)]
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
    Complete {
        /// The outcome to record.
        outcome: Outcome,
        /// How long to keep it, in milliseconds.
        ttl_ms: u64,
    },
}

/// What `resolve` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// Released or recorded as asked.
    Done,
    /// No live record under that id.
    NotFound,
    /// The record holds another token than the operator expected (it changed meanwhile).
    TokenMismatch(Record),
    /// The record is completed; resolving it would override a known outcome.
    AlreadyCompleted(Record),
}

/// What [`Store::delete_held`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// The record holding the expected token was deleted.
    Done,
    /// No live record under that id.
    NotFound,
    /// The live record holds another token (it was claimed again meanwhile); it was kept.
    Changed(Box<Record>),
    /// This store cannot delete by token; nothing was deleted.
    Unsupported,
}

/// The take-over of an abandoned claim (SPEC v1.1 rule 12): only for tools whose upstream
/// honours the `Idempotency-Key`, whose request is then sent again under the same key.
#[derive(Debug, Clone, Copy)]
pub struct TakeOverRequest<'a> {
    /// The record to take over.
    pub id: RecordId<'a>,
    /// The token of the abandoned claim, as a claim found it.
    pub expected: Token,
    /// The new owner's token.
    pub token: Token,
    /// `lease_end = now + lease_ms`.
    pub lease_ms: u64,
    /// `expires_at = lease_end + ttl_ms`.
    pub ttl_ms: u64,
}

/// What `take_over` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakeOver {
    /// The claim now holds the new token, with a fresh lease ending at `lease_end` (store
    /// clock); the record keeps its key, tenant, scope and fingerprint.
    Acquired {
        /// When the new lease ends, on the store's clock.
        lease_end: i64,
    },
    /// Nothing changed: the record is no longer an abandoned claim of the expected token
    /// (another caller took it over, or it was completed, released or expired). The record as
    /// found, if there is a live one.
    Lost(Option<Record>),
    /// The store does not implement take-over; the claim stays abandoned.
    Unsupported,
}

/// What [`settle_key`] did with one key's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySettled {
    /// Released or recorded as asked.
    Done,
    /// No live record under that key (and tenant).
    NotFound,
    /// The record is completed with a known outcome; nothing changed.
    Completed(Record),
    /// The record is in progress and its lease has not ended (its owner may still be running);
    /// nothing changed. Pass `force` to settle it anyway.
    Live(Record),
    /// The record changed while it was being settled; nothing changed.
    Changed,
}

impl KeySettled {
    /// A sentence for a face to show: what happened to `key`.
    pub fn describe(&self, key: &str) -> String {
        match self {
            KeySettled::Done => format!("the record of key {key} was settled"),
            KeySettled::NotFound => format!(
                "there is no record of key {key} (under this tenant) to settle: it expired, was released, or never existed"
            ),
            KeySettled::Completed(_) => format!(
                "the record of key {key} is completed with a known outcome; releasing or resolving it would override that outcome, so nothing changed"
            ),
            KeySettled::Live(_) => format!(
                "the record of key {key} is in progress and its lease has not ended: its owner may still be running. Wait until it is abandoned, or force it"
            ),
            KeySettled::Changed => format!(
                "the record of key {key} changed while it was being settled (another call claimed or completed it); nothing changed, look at it again"
            ),
        }
    }
}

/// The operator action on one key, in-process (SPEC v1.1 rule 12): releases the unfinished
/// record of `id` (abandoned, a held failure, or with `force` one still in progress) so that
/// the next call runs, or records an outcome for it (`resolution`). A completed record with a
/// known outcome is never overridden. Acts by the record's token, so a record that changes
/// meanwhile is left alone ([`KeySettled::Changed`]).
pub async fn settle_key(
    store: &dyn Store,
    id: RecordId<'_>,
    resolution: &Resolution,
    force: bool,
) -> Result<KeySettled, StoreError> {
    let (record, now) = store.get(id).await?;
    let Some(record) = record else {
        return Ok(KeySettled::NotFound);
    };
    match record.status(now) {
        Status::Completed if !record.is_held() => return Ok(KeySettled::Completed(record)),
        Status::InProgress if !force => return Ok(KeySettled::Live(record)),
        _ => {}
    }
    Ok(match store.resolve(id, record.token, resolution).await? {
        Resolved::Done => KeySettled::Done,
        Resolved::NotFound => KeySettled::NotFound,
        Resolved::AlreadyCompleted(r) => KeySettled::Completed(r),
        Resolved::TokenMismatch(_) => KeySettled::Changed,
    })
}

/// Which records `list` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// `None`: every tenant; `Some(None)`: records without a tenant; `Some(Some(t))`: tenant `t`.
    pub tenant: Option<Option<String>>,
    /// Only records in this status (`None`: any).
    pub status: Option<Status>,
    /// At most this many records per page (the store may return fewer; 0 means its default).
    pub limit: usize,
}

impl ListFilter {
    /// Whether a live record at store time `now` passes the filter.
    pub fn matches(&self, record: &Record, now: i64) -> bool {
        if let Some(tenant) = &self.tenant {
            if record.tenant.as_deref() != tenant.as_deref().map(nfc).as_deref() {
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
    /// The records of this page.
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

    /// Live records passing `filter`, a page at a time, in the store's own order.
    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError>;

    /// The `filter.limit` (0: 100) newest live records passing `filter`, newest first (see
    /// [`newest_first`]), out of every record in the store however many there are; one page,
    /// without a cursor.
    ///
    /// The default reads every page of [`Store::list`] and keeps the newest. Stores override
    /// it with an index (PostgreSQL) or a leaner scan (Redis).
    async fn newest(&self, filter: &ListFilter) -> Result<Page, StoreError> {
        let limit = if filter.limit == 0 { 100 } else { filter.limit };
        let pages = ListFilter {
            limit: 500,
            ..filter.clone()
        };
        let mut cursor: Option<String> = None;
        let mut now_ms = 0;
        let mut records = Vec::new();
        loop {
            let page = self.list(&pages, cursor.as_deref()).await?;
            now_ms = now_ms.max(page.now_ms);
            records.extend(page.records);
            if records.len() >= 2 * limit + 500 {
                records.sort_by(newest_first);
                records.truncate(limit);
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        records.sort_by(newest_first);
        records.truncate(limit);
        Ok(Page {
            records,
            next_cursor: None,
            now_ms,
        })
    }

    /// Settles an in-progress or abandoned record whose token is `expected` (operators).
    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError>;

    /// Moves an abandoned claim (in progress, `lease_end <= now`, not expired) that holds
    /// `request.expected` to `request.token`, with `claimed_at = now`, a fresh lease and
    /// expiry, in one atomic operation: of many concurrent take-overs exactly one wins (SPEC
    /// v1.1 rule 12). Used only for tools whose upstream honours the `Idempotency-Key`.
    ///
    /// The default answers [`TakeOver::Unsupported`]: the claim stays abandoned, as in v1.
    async fn take_over(&self, request: &TakeOverRequest<'_>) -> Result<TakeOver, StoreError> {
        let _ = request;
        Ok(TakeOver::Unsupported)
    }

    /// Deletes the record `id`, whatever its state (operators); answers whether there was a live
    /// one. Every other record, of this key under another tenant too, is left alone.
    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError>;

    /// Deletes the live record `id`, whatever its state, only if it still holds `expected` (the
    /// token an operator was shown), in one atomic operation: a record claimed again since is
    /// kept and answered as [`Deleted::Changed`].
    ///
    /// The default answers [`Deleted::Unsupported`] and deletes nothing. (A delete sent again
    /// after its connection broke, whose first send had landed, answers [`Deleted::NotFound`].)
    async fn delete_held(&self, id: RecordId<'_>, expected: Token) -> Result<Deleted, StoreError> {
        let _ = (id, expected);
        Ok(Deleted::Unsupported)
    }

    /// Deletes every record of `tenant` (`None`: the records without a tenant; a tenant is
    /// taken in its NFC form, as records are made); answers how many.
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

tokio::task_local! {
    /// When the executor stops waiting for the store operation being run on this task.
    static OPERATION_DEADLINE: Instant;
}

/// Runs one store operation whose answer the executor waits for until `until` (SPEC v1.2 §9
/// rule 3), so that the store can read that instant with [`operation_deadline`].
pub(crate) async fn answer_by<F: std::future::Future>(
    until: Option<Instant>,
    operation: F,
) -> F::Output {
    match until {
        Some(until) => OPERATION_DEADLINE.scope(until, operation).await,
        None => operation.await,
    }
}

/// The instant by which the store operation this task is running must end, if bounded: the
/// call's deadline (a claim, a take-over) or the lease end (settling, which may go on after the
/// caller was answered). A store whose I/O
/// ends when its future is dropped needs nothing of this; one that blocks a thread (a store
/// written in Java) bounds its I/O by it, so that the operation does not outlive the wait.
pub fn operation_deadline() -> Option<Instant> {
    OPERATION_DEADLINE.try_with(|until| *until).ok()
}

/// The order of [`Store::newest`]: `claimed_at` descending, then key ascending.
pub fn newest_first(a: &Record, b: &Record) -> std::cmp::Ordering {
    b.claimed_at
        .cmp(&a.claimed_at)
        .then_with(|| a.key.cmp(&b.key))
}

/// What a `resolve` sent a second time (its first attempt's connection broke) answers: when the
/// first attempt landed, the record already holds this very outcome under `expected`, which is
/// the resolution done. (A release that landed reads as `NotFound`: the record is gone.)
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn repeated_resolution(
    answer: Resolved,
    expected: Token,
    resolution: &Resolution,
) -> Resolved {
    match (answer, resolution) {
        (Resolved::AlreadyCompleted(r), Resolution::Complete { outcome, .. })
            if r.token == expected && r.outcome.as_ref() == Some(outcome) =>
        {
            Resolved::Done
        }
        (answer, _) => answer,
    }
}

/// What [`Store::delete_held`] answers when it deleted nothing: what the id holds now (read after
/// the refused delete, for the operator's message).
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn not_deleted(now: Option<Record>) -> Deleted {
    match now {
        None => Deleted::NotFound,
        Some(record) => Deleted::Changed(Box::new(record)),
    }
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

    /// A resolve sent again after a broken connection: finding its own outcome recorded under
    /// the expected token means the first one landed (done); anything else stays as found.
    #[cfg(any(feature = "redis", feature = "postgres"))]
    #[test]
    fn a_repeated_resolve_that_finds_its_own_outcome_is_done() {
        let expected = Token::random();
        let outcome = Outcome::success("1").unwrap();
        let record = |token: Token, outcome: Outcome| Record {
            format: crate::record::RECORD_FORMAT,
            key: "ab".repeat(32),
            tenant: None,
            scope: "s".into(),
            state: crate::record::RecordState::Completed,
            token,
            claimed_at: 1,
            lease_end: 2,
            ttl_ms: 3,
            expires_at: 4,
            outcome: Some(outcome),
            fingerprint: None,
        };
        let complete = Resolution::Complete {
            outcome: outcome.clone(),
            ttl_ms: 10,
        };
        let ours = Resolved::AlreadyCompleted(record(expected, outcome.clone()));
        assert_eq!(
            repeated_resolution(ours.clone(), expected, &complete),
            Resolved::Done
        );
        assert_eq!(
            repeated_resolution(ours.clone(), expected, &Resolution::Release),
            ours
        );
        let other_outcome =
            Resolved::AlreadyCompleted(record(expected, Outcome::success("2").unwrap()));
        assert_eq!(
            repeated_resolution(other_outcome.clone(), expected, &complete),
            other_outcome
        );
        let other_token = Resolved::AlreadyCompleted(record(Token::random(), outcome));
        assert_eq!(
            repeated_resolution(other_token.clone(), expected, &complete),
            other_token
        );
        assert_eq!(
            repeated_resolution(Resolved::NotFound, expected, &Resolution::Release),
            Resolved::NotFound
        );
    }

    #[test]
    fn poll_backoff_starts_near_5ms_and_caps_near_200ms() {
        let first = poll_backoff(0);
        assert!(first >= Duration::from_micros(3750) && first <= Duration::from_micros(6250));
        let late = poll_backoff(30);
        assert!(late >= Duration::from_millis(150) && late <= Duration::from_millis(250));
    }
}

/// How to open a store by URL (see [`open`]).
///
/// The connection settings (`connect_timeout`, `response_timeout`, `statement_timeout`,
/// `pool_size`) can also be given as query parameters of the store URL, which then win over
/// these fields: Redis `?connect_timeout_ms=2000&response_timeout_ms=5000`, PostgreSQL
/// `?connect_timeout=2` (libpq's, in seconds) `&statement_timeout_ms=5000&pool_size=16`.
/// `None` means the default.
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
    /// Redis and PostgreSQL: how long opening one connection may take, the server's first
    /// answers (authentication, startup) included (default 2 s). URL: Redis
    /// `connect_timeout_ms`, PostgreSQL `connect_timeout` (seconds, as in libpq).
    pub connect_timeout: Option<Duration>,
    /// Redis: how long one command may wait for its answer before the call fails as
    /// store-unavailable (default 5 s). URL: `response_timeout_ms`.
    pub response_timeout: Option<Duration>,
    /// PostgreSQL: how long one statement may take before the call fails as store-unavailable
    /// (default 5 s; measured by the client, the server's `statement_timeout` is not changed).
    /// URL: `statement_timeout_ms`.
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL: the most connections the store opens for Rust callers (default 16; from 1 to
    /// 1024). URL: `pool_size`. Besides these it opens one connection per caller lane that C
    /// and Java calls used with it: up to `IDEMKIT_CALLER_LANES` more (default 8), so at most
    /// `pool_size` + 8 by default.
    pub pool_size: Option<usize>,
}

/// The longest timeout a store takes: one day.
#[cfg(any(feature = "redis", feature = "postgres"))]
const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);
/// The most connections a PostgreSQL store may be told to open.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) const MAX_POOL_SIZE: usize = 1024;

/// idemkit's own query parameters of a store URL, taken out before the driver reads the URL.
#[cfg(any(feature = "redis", feature = "postgres"))]
#[derive(Debug, Default)]
pub(crate) struct UrlSettings {
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) response_timeout: Option<Duration>,
    pub(crate) statement_timeout: Option<Duration>,
    pub(crate) pool_size: Option<usize>,
    /// PostgreSQL: libpq's `sslmode`, as given.
    pub(crate) ssl_mode: Option<String>,
    /// PostgreSQL: libpq's `sslrootcert`, percent-decoded.
    pub(crate) ssl_root_cert: Option<String>,
}

/// Which store a URL parameter belongs to. (`sslmode` and `sslrootcert` are libpq's; they are
/// taken here because tokio-postgres knows neither `verify-ca`/`verify-full` nor `sslrootcert`.)
#[cfg(any(feature = "redis", feature = "postgres"))]
const URL_PARAMETERS: [(&str, &str); 6] = [
    ("connect_timeout_ms", "Redis"),
    ("response_timeout_ms", "Redis"),
    ("statement_timeout_ms", "PostgreSQL"),
    ("pool_size", "PostgreSQL"),
    ("sslmode", "PostgreSQL"),
    ("sslrootcert", "PostgreSQL"),
];

/// Takes idemkit's own query parameters out of `url` for the store `store` (`"Redis"` or
/// `"PostgreSQL"`): answers the URL without them, for the driver, and their values. A
/// parameter of the other store, a repeated one, or a bad value is refused with a message
/// naming the parameter and the fix. Nothing inside the userinfo is read.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn take_url_settings(
    url: &str,
    store: &str,
) -> Result<(String, UrlSettings), StoreError> {
    let shown = redact_url(url);
    let secrets = secret_spans(url);
    let mut settings = UrlSettings::default();
    let mut seen: Vec<&str> = Vec::new();
    let mut kept = String::with_capacity(url.len());
    let bytes = url.as_bytes();
    let mut copied = 0;
    // Whether the next parameter kept needs a `?` (the ones before it were all taken out).
    let mut need_question = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let in_secret = secrets.iter().any(|&(a, b)| i >= a && i < b);
        if !matches!(c, b'?' | b'&') || in_secret {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = url[start..]
            .find(['&', '#'])
            .map_or(url.len(), |n| start + n);
        let (name, value) = match url[start..end].split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (&url[start..end], None),
        };
        let lowered = name.to_ascii_lowercase();
        let ours = URL_PARAMETERS.iter().find(|(n, _)| *n == lowered);
        match ours {
            Some(&(name, owner)) => {
                if owner != store {
                    let hint = if name == "connect_timeout_ms" {
                        "; PostgreSQL takes libpq's connect_timeout, in seconds (e.g. connect_timeout=2)"
                    } else {
                        ""
                    };
                    return Err(StoreError::Configuration(format!(
                        "store URL {shown}: the parameter `{name}` applies to {owner} stores only; remove it{hint}"
                    )));
                }
                if seen.contains(&name) {
                    return Err(StoreError::Configuration(format!(
                        "store URL {shown}: the parameter `{name}` is given twice; give it once"
                    )));
                }
                seen.push(name);
                let value = value.unwrap_or("");
                match name {
                    "pool_size" => settings.pool_size = Some(parse_pool_size(value, &shown)?),
                    "sslmode" => settings.ssl_mode = Some(percent_decode(value)),
                    "sslrootcert" => settings.ssl_root_cert = Some(percent_decode(value)),
                    _ => {
                        let timeout = Some(parse_timeout_ms(name, value, &shown)?);
                        match name {
                            "connect_timeout_ms" => settings.connect_timeout = timeout,
                            "response_timeout_ms" => settings.response_timeout = timeout,
                            _ => settings.statement_timeout = timeout,
                        }
                    }
                }
                // Leave the parameter out; its separator goes with it.
                kept.push_str(&url[copied..i]);
                if c == b'?' {
                    need_question = true;
                }
                copied = end;
            }
            None => {
                kept.push_str(&url[copied..i]);
                kept.push(if need_question { '?' } else { c as char });
                need_question = false;
                copied = i + 1;
            }
        }
        i = end;
    }
    kept.push_str(&url[copied..]);
    Ok((kept, settings))
}

#[cfg(any(feature = "redis", feature = "postgres"))]
fn parse_timeout_ms(name: &str, value: &str, shown: &str) -> Result<Duration, StoreError> {
    let max = MAX_TIMEOUT.as_millis() as u64;
    match value.parse::<u64>() {
        Ok(ms) if (1..=max).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(StoreError::Configuration(format!(
            "store URL {shown}: `{name}={value}` is not a timeout; give whole milliseconds from 1 to {max} (e.g. {name}=5000)"
        ))),
    }
}

#[cfg(any(feature = "redis", feature = "postgres"))]
fn parse_pool_size(value: &str, shown: &str) -> Result<usize, StoreError> {
    let max = MAX_POOL_SIZE;
    match value.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(StoreError::Configuration(format!(
            "store URL {shown}: `pool_size={value}` is not a pool size; give a whole number of connections from 1 to {max} (e.g. pool_size=16)"
        ))),
    }
}

/// A timeout given in [`StoreOptions`], checked: more than zero and at most a day.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn checked_timeout(
    field: &str,
    value: Option<Duration>,
) -> Result<Option<Duration>, StoreError> {
    match value {
        Some(t) if t.is_zero() || t > MAX_TIMEOUT => Err(StoreError::Configuration(format!(
            "StoreOptions.{field} is {t:?}; give a duration above zero and at most one day (e.g. Duration::from_secs(5)), or None for the default"
        ))),
        other => Ok(other),
    }
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
        _ if !is_scheme(&scheme) => Err(crate::Error::Configuration(format!(
            "cannot open store {}: not a store URL; use memory:, redis://host:port/, redis+cluster://host:port,host:port/ or postgres://user@host/database (a libpq `key=value` string is not accepted: write it as a postgres:// URL)",
            redact_url(url)
        ))),
        _ => Err(crate::Error::Configuration(format!(
            "cannot open store {}: unknown or disabled scheme `{scheme}`; use memory:, redis://, rediss://, redis+cluster://, rediss+cluster://, postgres:// or postgresql:// (Redis and PostgreSQL need the cargo features `redis` and `postgres`)",
            redact_url(url)
        ))),
    }
}

/// Whether `text` has the shape of a URL scheme (letters, digits, `+ - .`).
fn is_scheme(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// A store that could not be opened: a configuration error stays one; anything else means the
/// server could not be reached or answered an error. Either way without the URL's secrets,
/// should a driver have echoed one.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn opening_failed(url: &str, error: StoreError) -> crate::Error {
    match error {
        StoreError::Configuration(message) => {
            crate::Error::Configuration(scrub_secrets(&message, url))
        }
        other => {
            let message = scrub_secrets(&other.to_string(), url);
            // Owned, so that the driver's error moves into the scrubbed copy.
            let source = match other {
                StoreError::Unavailable { source, .. } => source,
                _ => None,
            };
            crate::Error::StoreOperation {
                operation: crate::error::StoreOperation::Open {
                    store: redact_url(url),
                },
                message,
                source: source.map(|e| e.scrubbed(&|text| scrub_secrets(text, url))),
            }
        }
    }
}

/// The store URL or connection string with every password or token replaced by `***`, for
/// messages (SPEC v1.1 rule 11).
///
/// URLs (`scheme://...`): the password in the userinfo, read both as tokio-postgres reads it
/// (up to the first `@`, so `/ ? #` may stand unencoded in it) and as the WHATWG parser of the
/// redis crate does (up to the last `@`), and the value of every query parameter named like a
/// secret (`password`, `pass`, `pwd`, anything with `pass`, `token`, `secret`, `auth` or `key`
/// in its name). libpq `key=value` strings (`host=h password='p w'`): the values of the same
/// keys, quoted or not. In doubt more is hidden, never less.
pub fn redact_url(url: &str) -> String {
    let mut shown = String::with_capacity(url.len());
    let mut at = 0;
    for (start, end) in secret_spans(url) {
        shown.push_str(&url[at..start]);
        shown.push_str("***");
        at = end;
    }
    shown.push_str(&url[at..]);
    shown
}

/// `message` (say, a driver's error about `url`) with every secret of `url` hidden, in case
/// the driver echoed one.
#[cfg(any(feature = "redis", feature = "postgres"))]
pub(crate) fn scrub_secrets(message: &str, url: &str) -> String {
    let mut secrets: Vec<String> = Vec::new();
    for (start, end) in secret_spans(url) {
        let raw = &url[start..end];
        secrets.push(raw.to_owned());
        let decoded = percent_decode(raw);
        if decoded != raw {
            secrets.push(decoded);
        }
    }
    // Longest first, so that a secret containing another is hidden whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = message.to_owned();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), "***");
    }
    out
}

/// Whether a parameter name (lowercase) names a secret.
fn secret_name(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    [
        "pass",
        "pwd",
        "token",
        "secret",
        "auth",
        "key",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte ranges of `url` that hold secrets, sorted and merged.
fn secret_spans(url: &str) -> Vec<(usize, usize)> {
    let mut spans = match url.find("://") {
        Some(scheme_end) => url_secret_spans(url, scheme_end + 3),
        None => key_value_secret_spans(url),
    };
    spans.retain(|(start, end)| start < end);
    spans.sort();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn url_secret_spans(url: &str, rest: usize) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let tail = &url[rest..];
    // The userinfo's password, up to the first `@` (tokio-postgres) and up to the last one
    // (WHATWG, which also ends the authority at `/ ? #`: a password holding those is misread
    // by it, but still meant as a password).
    for at in [tail.find('@'), tail.rfind('@')].into_iter().flatten() {
        if let Some(colon) = tail[..at].find(':') {
            spans.push((rest + colon + 1, rest + at));
        }
    }
    // Query parameters: `?` or `&`, a name, `=`, a value up to the next `&`.
    let bytes = url.as_bytes();
    let mut i = rest;
    while i < bytes.len() {
        if matches!(bytes[i], b'?' | b'&') {
            let name_start = i + 1;
            let name_end = url[name_start..]
                .find(['=', '&'])
                .map_or(url.len(), |n| name_start + n);
            if name_end < url.len() && bytes[name_end] == b'=' {
                let value_start = name_end + 1;
                let value_end = url[value_start..]
                    .find('&')
                    .map_or(url.len(), |n| value_start + n);
                if secret_name(&percent_decode(&url[name_start..name_end])) {
                    spans.push((value_start, value_end));
                }
                i = value_end;
                continue;
            }
        }
        i += 1;
    }
    spans
}

/// libpq `key=value` pairs: blanks around `=` allowed; a value is single-quoted (with `\`
/// escapes) or runs to the next blank.
fn key_value_secret_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    let skip_blanks = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_blanks(i);
        if i >= bytes.len() {
            return spans;
        }
        let name_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let name = &text[name_start..i];
        i = skip_blanks(i);
        if i >= bytes.len() || bytes[i] != b'=' {
            // Not a pair: a word on its own (or not a connection string at all).
            continue;
        }
        i = skip_blanks(i + 1);
        let value_start = i;
        if i < bytes.len() && bytes[i] == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(bytes.len());
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(bytes.len());
        }
        while !text.is_char_boundary(i) {
            i += 1;
        }
        if secret_name(name) {
            spans.push((value_start, i));
        }
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

    /// Every form a driver accepts, each with the secret `Zq7` in it: none survives.
    #[test]
    fn every_form_of_password_is_redacted() {
        let cases = [
            (
                "postgres://app@h/db?password=Zq7xx",
                "postgres://app@h/db?password=***",
            ),
            (
                "postgres://app@h/db?sslmode=disable&password=Zq7%20y&application_name=a",
                "postgres://app@h/db?sslmode=disable&password=***&application_name=a",
            ),
            ("redis://h/?password=Zq7", "redis://h/?password=***"),
            (
                "redis://h:6379/0?pass=Zq7&protocol=3",
                "redis://h:6379/0?pass=***&protocol=3",
            ),
            (
                "rediss://default:Zq7tok@h:6380",
                "rediss://default:***@h:6380",
            ),
            ("postgres://app:pa/Zq7@h/db", "postgres://app:***@h/db"),
            (
                "postgres://app:p#Zq7?x@h:5432/db",
                "postgres://app:***@h:5432/db",
            ),
            ("redis://:a/b?c#Zq7@h:6379/0", "redis://:***@h:6379/0"),
            (
                "postgres://app@h/db?password=x@Zq7",
                "postgres://app@h/db?password=***",
            ),
            (
                "redis+cluster://:Zq7@h:7001,h:7002/",
                "redis+cluster://:***@h:7001,h:7002/",
            ),
            (
                "host=h user=app password=Zq7 dbname=db",
                "host=h user=app password=*** dbname=db",
            ),
            (
                "host=h password = 'Zq7 \\' x' dbname=db",
                "host=h password = *** dbname=db",
            ),
            ("host=h PASSWORD=Zq7", "host=h PASSWORD=***"),
            (
                "jdbc:postgresql://h/db?user=app&password=Zq7",
                "jdbc:postgresql://h/db?user=app&password=***",
            ),
        ];
        for (url, shown) in cases {
            assert_eq!(redact_url(url), shown, "{url}");
            assert!(!redact_url(url).contains("Zq7"), "{url}");
        }
        // Not secrets: shown as they are.
        for plain in [
            "postgres://app@h:5432/db?sslmode=disable&application_name=x",
            "host=h user=app dbname=db",
            "redis://h:6379/2?protocol=3",
        ] {
            assert_eq!(redact_url(plain), plain);
        }
        // Odd input never panics and hides what follows a secret name.
        for odd in [
            "password=",
            "password='Zq7",
            "host=h password=Zq7\\",
            "é password=Zq7é",
        ] {
            assert!(!redact_url(odd).contains("Zq7"), "{odd}");
        }
    }

    /// idemkit's own parameters are taken out of the URL the driver reads; the others, and the
    /// userinfo, stay as they were.
    #[cfg(any(feature = "redis", feature = "postgres"))]
    #[test]
    fn own_url_parameters_are_taken_out_for_the_driver() {
        use super::take_url_settings;
        use std::time::Duration;
        let cases = [
            (
                "postgres://u@h/db?pool_size=4&application_name=a",
                "postgres://u@h/db?application_name=a",
            ),
            (
                "postgres://u@h/db?application_name=a&pool_size=4",
                "postgres://u@h/db?application_name=a",
            ),
            ("postgres://u@h/db?pool_size=4", "postgres://u@h/db"),
            (
                "postgres://u@h/db?pool_size=4&sslmode=verify-full&application_name=a&x=1&sslrootcert=%2Ftmp%2Fca.pem",
                "postgres://u@h/db?application_name=a&x=1",
            ),
            (
                "postgres://u:p?pool_size=3@h/db?application_name=a",
                "postgres://u:p?pool_size=3@h/db?application_name=a",
            ),
        ];
        for (url, driver) in cases {
            let (kept, _) = take_url_settings(url, "PostgreSQL").unwrap();
            assert_eq!(kept, driver, "{url}");
        }
        let (kept, settings) = take_url_settings(
            "redis://h:6379/0?protocol=3&response_timeout_ms=250&connect_timeout_ms=1500",
            "Redis",
        )
        .unwrap();
        assert_eq!(kept, "redis://h:6379/0?protocol=3");
        assert_eq!(settings.response_timeout, Some(Duration::from_millis(250)));
        assert_eq!(settings.connect_timeout, Some(Duration::from_millis(1500)));
        let (_, settings) = take_url_settings(
            "postgres://u@h/db?pool_size=7&statement_timeout_ms=800",
            "PostgreSQL",
        )
        .unwrap();
        assert_eq!(settings.pool_size, Some(7));
        assert_eq!(settings.statement_timeout, Some(Duration::from_millis(800)));
        let (_, settings) = take_url_settings(
            "postgres://u@h/db?sslmode=verify-ca&sslrootcert=%2Ftmp%2Fca.pem",
            "PostgreSQL",
        )
        .unwrap();
        assert_eq!(settings.ssl_mode.as_deref(), Some("verify-ca"));
        assert_eq!(settings.ssl_root_cert.as_deref(), Some("/tmp/ca.pem"));
    }

    #[cfg(any(feature = "redis", feature = "postgres"))]
    #[test]
    fn secrets_a_driver_echoes_are_scrubbed() {
        let url = "postgres://app:p%40Zq7@h/db?password=Zq8";
        let message = "cannot parse postgres://app:p%40Zq7@h/db: password p@Zq7 or Zq8 is wrong";
        let scrubbed = super::scrub_secrets(message, url);
        assert!(
            !scrubbed.contains("Zq7") && !scrubbed.contains("Zq8"),
            "{scrubbed}"
        );
        assert!(scrubbed.contains("is wrong"), "{scrubbed}");
    }

    /// A store that cannot be opened names the operation in words and its URL without the
    /// password, not as a tool name ("store unavailable for `opening ...`").
    #[cfg(feature = "redis")]
    #[tokio::test]
    async fn a_store_that_cannot_be_opened_says_so_without_its_password() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("redis://:hunter2@127.0.0.1:{port}/0");
        let Err(e) = crate::store::open(&url, &crate::store::StoreOptions::default()).await else {
            panic!("{url} opened");
        };
        assert_eq!(e.kind(), crate::ErrorKind::StoreUnavailable);
        let message = e.to_string();
        assert!(
            message.starts_with(&format!("cannot open redis://:***@127.0.0.1:{port}/0: ")),
            "{message}"
        );
        assert!(!message.contains("hunter2"), "{message}");
        assert!(!message.contains('`'), "{message}");
    }
}
