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

mod open;
mod redact;
#[cfg(test)]
mod url_tests;

pub use open::*;
pub use redact::*;

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
