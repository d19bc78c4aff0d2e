//! The in-memory store: the default, sharded, with notification for waiters and an injectable clock.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::pin::pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use tokio::sync::Notify;

use super::{
    Claim, ClaimReply, ClaimRequest, Completion, Deleted, ListFilter, Page, RecordId, Resolution,
    Resolved, Store, TakeOver, TakeOverRequest, DEFAULT_MAX_OUTCOME_BYTES,
};
use crate::error::StoreError;
use crate::key::Key;
use crate::record::{Outcome, Record, RecordState, Token, RECORD_FORMAT};

/// The store's clock: milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    /// The time now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to: for tests of TTL expiry and leases.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: i64) -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(start_ms)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
    }

    /// Sets the clock to `now_ms` (it may go back: a test of a clock step).
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

const SHARDS: usize = 64;

struct Entry {
    record: Record,
    /// Present while somebody waits for this in-progress record to change.
    waiters: Option<Arc<Notify>>,
}

impl Entry {
    fn wake(&mut self) {
        if let Some(n) = self.waiters.take() {
            n.notify_waiters();
        }
    }
}

/// Keys are SHA-256 digests, already uniformly distributed: the map hashes a key by eight of its
/// bytes instead of running SipHash over all 32. Bytes 8..16, because byte 0 picks the shard
/// and so is nearly the same for every key of one shard.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(middle) = bytes.get(8..16) {
            let middle: [u8; 8] = middle.try_into().expect("eight bytes");
            self.0 ^= u64::from_le_bytes(middle);
        } else {
            for &b in bytes {
                self.0 = self.0.rotate_left(8) ^ u64::from(b);
            }
        }
    }
}

type DigestMap<V> = HashMap<Key, V, BuildHasherDefault<DigestHasher>>;

#[derive(Default)]
struct Shard {
    /// Keys are SHA-256 digests that include the tenant, so a key almost always has one entry;
    /// the vector keeps records of different tenants apart all the same.
    map: DigestMap<Vec<Entry>>,
    len: usize,
    sweep_at: usize,
}

impl Shard {
    fn find(&mut self, id: RecordId<'_>) -> Option<&mut Entry> {
        self.map
            .get_mut(id.key)?
            .iter_mut()
            .find(|e| e.record.tenant.as_deref() == id.tenant)
    }

    /// The live entry for `id`; an expired one is removed first.
    fn live(&mut self, id: RecordId<'_>, now: i64) -> Option<&mut Entry> {
        if self.find(id).is_some_and(|e| e.record.is_expired(now)) {
            self.remove(id);
        }
        self.find(id)
    }

    fn remove(&mut self, id: RecordId<'_>) -> Option<Entry> {
        let entries = self.map.get_mut(id.key)?;
        let at = entries
            .iter()
            .position(|e| e.record.tenant.as_deref() == id.tenant)?;
        let mut entry = entries.swap_remove(at);
        if entries.is_empty() {
            self.map.remove(id.key);
        }
        self.len -= 1;
        entry.wake();
        Some(entry)
    }

    fn insert(&mut self, key: Key, record: Record, now: i64) {
        self.map.entry(key).or_default().push(Entry {
            record,
            waiters: None,
        });
        self.len += 1;
        if self.len >= self.sweep_at {
            self.purge(now);
            self.sweep_at = (self.len * 2).max(1024);
        }
    }

    /// Removes expired entries matching `pred`; answers how many.
    fn retain(&mut self, mut keep: impl FnMut(&Record) -> bool) -> u64 {
        let mut removed = 0u64;
        self.map.retain(|_, entries| {
            entries.retain_mut(|e| {
                let k = keep(&e.record);
                if !k {
                    e.wake();
                    removed += 1;
                }
                k
            });
            !entries.is_empty()
        });
        self.len -= removed as usize;
        removed
    }

    fn purge(&mut self, now: i64) -> u64 {
        self.retain(|r| !r.is_expired(now))
    }
}

/// The in-memory store: records live in this process only.
///
/// Sharded 64 ways by key (no global lock on the hot path); expired records are invisible at
/// once and swept lazily as shards grow (or by [`Store::purge_expired`]); waiters are woken by
/// notification when an outcome lands or a claim is released.
pub struct MemoryStore {
    shards: Box<[Mutex<Shard>]>,
    clock: Arc<dyn Clock>,
    max_outcome_bytes: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> MemoryStore {
        MemoryStore::with_clock(Arc::new(SystemClock))
    }

    /// An empty store reading `clock` (e.g. a [`ManualClock`] in tests).
    pub fn with_clock(clock: Arc<dyn Clock>) -> MemoryStore {
        MemoryStore {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            clock,
            max_outcome_bytes: DEFAULT_MAX_OUTCOME_BYTES,
        }
    }

    /// Sets the largest success result kept (default 1 MiB).
    pub fn with_max_outcome_bytes(mut self, bytes: usize) -> MemoryStore {
        self.max_outcome_bytes = bytes;
        self
    }

    /// How many records (live or expired but not yet swept) the store holds.
    /// How many records it holds, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len).sum()
    }

    /// Whether it holds no record at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, key: &Key) -> MutexGuard<'_, Shard> {
        lock(&self.shards[key.as_bytes()[0] as usize % SHARDS])
    }

    fn new_record(&self, request: &ClaimRequest<'_>, now: i64) -> Record {
        let lease_end = now.saturating_add(request.lease_ms as i64);
        Record {
            format: RECORD_FORMAT,
            key: request.id.key.hex(),
            tenant: request.id.tenant.map(str::to_owned),
            scope: request.scope.to_owned(),
            state: RecordState::InProgress,
            token: request.token,
            claimed_at: now,
            lease_end,
            ttl_ms: request.ttl_ms as i64,
            expires_at: lease_end.saturating_add(request.ttl_ms as i64),
            outcome: None,
            fingerprint: request.fingerprint.map(str::to_owned),
        }
    }
}

fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    // A panic while a shard was locked cannot leave a record half-written (every update is one
    // assignment), so a poisoned lock is still safe to use.
    shard.lock().unwrap_or_else(|p| p.into_inner())
}

#[async_trait]
impl Store for MemoryStore {
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(request.id.key);
        let claim = match shard.live(request.id, now) {
            None => {
                let record = self.new_record(request, now);
                let lease_end = record.lease_end;
                shard.insert(*request.id.key, record, now);
                Claim::Acquired { lease_end }
            }
            Some(entry) => {
                let record = &entry.record;
                // A failure is replaced unless another payload made it (SPEC v1.1 rule 9).
                let retry = request.replaces_failure(record);
                if record.state == RecordState::InProgress && record.token == request.token {
                    Claim::Acquired {
                        lease_end: record.lease_end,
                    }
                } else if retry {
                    entry.record = self.new_record(request, now);
                    Claim::Acquired {
                        lease_end: entry.record.lease_end,
                    }
                } else {
                    match record.state {
                        RecordState::Completed => Claim::Completed(record.clone()),
                        RecordState::InProgress if now < record.lease_end => {
                            Claim::InProgress(record.clone())
                        }
                        RecordState::InProgress => Claim::Abandoned(record.clone()),
                    }
                }
            }
        };
        Ok(ClaimReply { now_ms: now, claim })
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        outcome: &Outcome,
        ttl_ms: u64,
    ) -> Result<Completion, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(id.key);
        let Some(entry) = shard.live(id, now) else {
            return Ok(Completion::NotOwner(None));
        };
        if entry.record.token != token {
            return Ok(Completion::NotOwner(Some(entry.record.clone())));
        }
        if entry.record.state == RecordState::InProgress {
            entry.record.state = RecordState::Completed;
            entry.record.outcome = Some(outcome.clone());
            entry.record.ttl_ms = ttl_ms as i64;
            entry.record.expires_at = now.saturating_add(ttl_ms as i64);
            entry.wake();
        }
        Ok(Completion::Recorded)
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(id.key);
        let owned = shard
            .live(id, now)
            .is_some_and(|e| e.record.token == token && e.record.state == RecordState::InProgress);
        if owned {
            shard.remove(id);
        }
        Ok(owned)
    }

    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(id.key);
        Ok((shard.live(id, now).map(|e| e.record.clone()), now))
    }

    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError> {
        let now = self.clock.now_ms();
        let offset: usize = match cursor {
            None => 0,
            Some(c) => c.parse().map_err(|_| {
                StoreError::Configuration(format!("bad list cursor {c:?} for the memory store"))
            })?,
        };
        let mut records: Vec<Record> = Vec::new();
        for shard in self.shards.iter() {
            let shard = lock(shard);
            records.extend(
                shard
                    .map
                    .values()
                    .flatten()
                    .map(|e| &e.record)
                    .filter(|r| !r.is_expired(now) && filter.matches(r, now))
                    .cloned(),
            );
        }
        records.sort_by(|a, b| b.claimed_at.cmp(&a.claimed_at).then(a.key.cmp(&b.key)));
        let limit = if filter.limit == 0 {
            1000
        } else {
            filter.limit
        };
        let total = records.len();
        let page: Vec<Record> = records.into_iter().skip(offset).take(limit).collect();
        let next = offset + page.len();
        Ok(Page {
            records: page,
            next_cursor: (next < total).then(|| next.to_string()),
            now_ms: now,
        })
    }

    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(id.key);
        let Some(entry) = shard.live(id, now) else {
            return Ok(Resolved::NotFound);
        };
        if entry.record.state == RecordState::Completed && !entry.record.is_held() {
            return Ok(Resolved::AlreadyCompleted(entry.record.clone()));
        }
        if entry.record.token != expected {
            return Ok(Resolved::TokenMismatch(entry.record.clone()));
        }
        match resolution {
            Resolution::Release => {
                shard.remove(id);
            }
            Resolution::Complete { outcome, ttl_ms } => {
                entry.record.state = RecordState::Completed;
                entry.record.outcome = Some(outcome.clone());
                entry.record.ttl_ms = *ttl_ms as i64;
                entry.record.expires_at = now.saturating_add(*ttl_ms as i64);
                entry.wake();
            }
        }
        Ok(Resolved::Done)
    }

    async fn take_over(&self, request: &TakeOverRequest<'_>) -> Result<TakeOver, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(request.id.key);
        let Some(entry) = shard.live(request.id, now) else {
            return Ok(TakeOver::Lost(None));
        };
        let record = &mut entry.record;
        if record.state != RecordState::InProgress
            || record.token != request.expected
            || now < record.lease_end
        {
            return Ok(TakeOver::Lost(Some(record.clone())));
        }
        let lease_end = now.saturating_add(request.lease_ms as i64);
        record.token = request.token;
        record.claimed_at = now;
        record.lease_end = lease_end;
        record.ttl_ms = request.ttl_ms as i64;
        record.expires_at = lease_end.saturating_add(request.ttl_ms as i64);
        entry.wake();
        Ok(TakeOver::Acquired { lease_end })
    }

    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(id.key);
        Ok(shard.live(id, now).is_some() && shard.remove(id).is_some())
    }

    async fn delete_held(&self, id: RecordId<'_>, expected: Token) -> Result<Deleted, StoreError> {
        let now = self.clock.now_ms();
        let mut shard = self.shard(id.key);
        match shard.live(id, now) {
            None => Ok(Deleted::NotFound),
            Some(e) if e.record.token != expected => {
                Ok(Deleted::Changed(Box::new(e.record.clone())))
            }
            Some(_) => {
                shard.remove(id);
                Ok(Deleted::Done)
            }
        }
    }

    async fn newest(&self, filter: &ListFilter) -> Result<Page, StoreError> {
        // `list` is already newest first: its first page is the answer.
        let first = ListFilter {
            limit: if filter.limit == 0 { 100 } else { filter.limit },
            ..filter.clone()
        };
        let mut page = self.list(&first, None).await?;
        page.next_cursor = None;
        Ok(page)
    }

    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
        let tenant = tenant.map(super::nfc);
        let tenant = tenant.as_deref();
        let mut removed = 0;
        for shard in self.shards.iter() {
            removed += lock(shard).retain(|r| r.tenant.as_deref() != tenant);
        }
        Ok(removed)
    }

    async fn purge_expired(&self) -> Result<u64, StoreError> {
        let now = self.clock.now_ms();
        let mut removed = 0;
        for shard in self.shards.iter() {
            removed += lock(shard).purge(now);
        }
        Ok(removed)
    }

    async fn wait_for_change(
        &self,
        id: RecordId<'_>,
        holder: Token,
        until: Instant,
        _attempt: u32,
    ) -> Result<(), StoreError> {
        let still_held = |shard: &mut Shard| {
            let now = self.clock.now_ms();
            shard.live(id, now).is_some_and(|e| {
                e.record.token == holder && e.record.state == RecordState::InProgress
            })
        };
        let notify = {
            let mut shard = self.shard(id.key);
            if !still_held(&mut shard) {
                return Ok(());
            }
            let entry = shard.find(id).expect("checked above");
            entry
                .waiters
                .get_or_insert_with(|| Arc::new(Notify::new()))
                .clone()
        };
        let mut notified = pin!(notify.notified());
        notified.as_mut().enable();
        // The record may have changed between taking the handle and enabling it.
        {
            let mut shard = self.shard(id.key);
            if !still_held(&mut shard) {
                return Ok(());
            }
        }
        let _ = tokio::time::timeout_at(until.into(), notified).await;
        Ok(())
    }

    fn max_outcome_bytes(&self) -> usize {
        self.max_outcome_bytes
    }

    fn describe(&self) -> String {
        "memory".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{derive_key, KeyInput, KeyScope};

    /// `delete_held` deletes the record holding the token shown, and keeps one claimed again.
    #[tokio::test]
    async fn delete_held_deletes_only_the_record_holding_the_token() {
        let store = MemoryStore::new();
        let (_, first) = claim_for("t", 1);
        store.claim(&first).await.unwrap();
        let second = ClaimRequest {
            token: Token::random(),
            ..first
        };
        assert_eq!(
            store.delete_held(first.id, second.token).await.unwrap(),
            Deleted::Changed(Box::new(store.get(first.id).await.unwrap().0.unwrap()))
        );
        assert!(store.get(first.id).await.unwrap().0.is_some());
        assert_eq!(
            store.delete_held(first.id, first.token).await.unwrap(),
            Deleted::Done
        );
        assert_eq!(
            store.delete_held(first.id, first.token).await.unwrap(),
            Deleted::NotFound
        );
    }

    fn claim_for(tenant: &str, n: usize) -> (Key, ClaimRequest<'static>) {
        let key = derive_key(
            &KeyScope {
                scope: "memory_test",
                tenant: None,
                run: None,
            },
            KeyInput::Explicit(&n.to_string()),
            &[],
        )
        .unwrap();
        let tenant: &'static str = Box::leak(tenant.to_owned().into_boxed_str());
        let key_ref: &'static Key = Box::leak(Box::new(key));
        (
            key,
            ClaimRequest {
                id: RecordId {
                    tenant: Some(tenant),
                    key: key_ref,
                },
                scope: "memory_test",
                token: Token::random(),
                lease_ms: 60_000,
                ttl_ms: 60_000,
                retry_failure: false,
                fingerprint: None,
                payload_checked: false,
            },
        )
    }

    /// SPEC v1.1 rule 1: `forget("e\u{301}")` removes the records made under `"é"`, and a list
    /// filtered by the decomposed spelling finds them.
    #[tokio::test]
    async fn forget_and_list_take_the_tenant_in_nfc_form() {
        let store = MemoryStore::new();
        for n in 0..3 {
            let (_, request) = claim_for("caf\u{e9}", n);
            store.claim(&request).await.unwrap();
        }
        let filter = ListFilter {
            tenant: Some(Some("cafe\u{301}".to_owned())),
            ..ListFilter::default()
        };
        assert_eq!(store.list(&filter, None).await.unwrap().records.len(), 3);
        assert_eq!(store.newest(&filter).await.unwrap().records.len(), 3);
        assert_eq!(store.forget(Some("cafe\u{301}")).await.unwrap(), 3);
        assert_eq!(store.list(&filter, None).await.unwrap().records.len(), 0);
    }

    /// `newest` answers the newest records first, `limit` of them (the trait's default reading
    /// every page agrees).
    #[tokio::test]
    async fn newest_answers_the_newest_first() {
        let clock = ManualClock::new(1_000_000);
        let store = MemoryStore::with_clock(Arc::new(clock.clone()));
        let mut keys = Vec::new();
        for n in 0..1200 {
            clock.advance(Duration::from_millis(1));
            let (key, request) = claim_for("t", n);
            store.claim(&request).await.unwrap();
            keys.push(key.hex());
        }
        keys.reverse();
        let filter = ListFilter {
            limit: 7,
            ..ListFilter::default()
        };
        let newest: Vec<String> = store
            .newest(&filter)
            .await
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(newest, keys[..7]);
        /// A store with only `list` (pages of its own order): the trait's default `newest`.
        struct OnlyList(MemoryStore);
        #[async_trait]
        impl Store for OnlyList {
            async fn claim(&self, r: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
                self.0.claim(r).await
            }
            async fn complete(
                &self,
                id: RecordId<'_>,
                token: Token,
                outcome: &Outcome,
                ttl_ms: u64,
            ) -> Result<Completion, StoreError> {
                self.0.complete(id, token, outcome, ttl_ms).await
            }
            async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError> {
                self.0.release(id, token).await
            }
            async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
                self.0.get(id).await
            }
            async fn list(
                &self,
                filter: &ListFilter,
                cursor: Option<&str>,
            ) -> Result<Page, StoreError> {
                self.0.list(filter, cursor).await
            }
            async fn resolve(
                &self,
                id: RecordId<'_>,
                expected: Token,
                resolution: &Resolution,
            ) -> Result<Resolved, StoreError> {
                self.0.resolve(id, expected, resolution).await
            }
            async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
                self.0.delete(id).await
            }
            async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
                self.0.forget(tenant).await
            }
            async fn purge_expired(&self) -> Result<u64, StoreError> {
                self.0.purge_expired().await
            }
            fn describe(&self) -> String {
                "only list".into()
            }
        }
        let only_list = OnlyList(store);
        let by_default: Vec<String> = only_list
            .newest(&filter)
            .await
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(by_default, keys[..7]);
    }
}
