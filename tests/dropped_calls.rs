//! A dropped call (SPEC v1.1 rule 5), against memory, Redis and PostgreSQL:
//! - a call future dropped while its claim is on the way to the store (the claim lands after the
//!   caller left) releases that claim, so a retry runs the body — it is not left in progress to
//!   become indeterminate;
//! - a call future dropped while it waits for another holder leaves nothing behind;
//! - a call future dropped while its body runs is a cancellation: the claim stays in progress
//!   and reads as abandoned (indeterminate) once its lease ends (rule 3);
//! - a call future dropped after its body finished, while the outcome is being recorded, still
//!   has its outcome recorded.
//!
//! The claim is held on its way by a gate in front of a memory store (the claim lands, its
//! reply waits), a private `redis-server` paused with SIGSTOP, and a PostgreSQL table locked
//! against writes by another session.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use idemkit::store::{
    ClaimReply, ClaimRequest, Completion, ListFilter, Page, RecordId, Resolution, Resolved,
    StoreOptions,
};
use idemkit::testing::random_tenant;
use idemkit::{
    CallContext, CallError, ErrorKind, Executor, Key, KeyInput, KeyStrategy, ManualClock,
    MemoryStore, Outcome, Policy, Record, RecordState, Step, Store, StoreError, Token, Tool,
};
use tokio::sync::watch;

mod common;

fn redis_url() -> Option<String> {
    common::env_url("IDEMKIT_REDIS_URL")
}

fn postgres_url() -> Option<String> {
    common::env_url("IDEMKIT_POSTGRES_URL")
}

/// An `EXPLICIT` tool with this lease and no deadline.
fn tool(lease: Duration) -> Tool {
    Tool::new(
        "book_room",
        Policy::new(KeyStrategy::Explicit).with_lease(lease),
    )
    .unwrap()
}

async fn record(store: &Arc<dyn Store>, tenant: &str, key: &Key) -> Option<Record> {
    let id = RecordId {
        tenant: Some(tenant),
        key,
    };
    store.get(id).await.unwrap().0
}

/// One call of `tool` under `key` whose body counts its runs and answers `"booked"`.
async fn book(
    executor: &Executor,
    tool: &Tool,
    context: &CallContext,
    key: &str,
    runs: &AtomicUsize,
) -> Result<String, CallError<std::io::Error>> {
    executor
        .call(tool, context, KeyInput::Explicit(key), |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("booked".to_string())
        })
        .await
}

/// Drops a call of `key` after 300 ms while its claim is held on its way (the caller holds it
/// before calling this, having warmed the store up with [`warm_up`]), then lets the claim
/// through (`let_go`): the claim that lands after the caller left is released, and a
/// retry runs the body — once.
async fn a_call_dropped_while_claiming_releases_its_claim(
    executor: &Executor,
    store: &Arc<dyn Store>,
    key: &str,
    let_go: impl std::future::Future<Output = ()>,
) {
    let tool = tool(Duration::from_secs(30));
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = AtomicUsize::new(0);
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        book(executor, &tool, &context, key, &runs),
    )
    .await;
    assert!(dropped.is_err(), "the call answered: {dropped:?}");
    let_go.await;
    let record_key = common::explicit_key(&tool, &tenant, key);
    common::eventually(
        store,
        &tenant,
        &record_key,
        Duration::from_secs(5),
        "the claim that landed after the caller left is released",
        |r| r.is_none(),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        book(executor, &tool, &context, key, &runs).await.unwrap(),
        "booked"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        book(executor, &tool, &context, key, &runs).await.unwrap(),
        "booked"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Drops a call while another holder has the key: nothing is left behind; once the holder lets
/// go, a retry runs the body.
async fn a_call_dropped_while_waiting_leaves_nothing(executor: &Executor, store: &Arc<dyn Store>) {
    let tool = tool(Duration::from_secs(30));
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let mut holder = executor
        .prepare(&tool, &context, KeyInput::Explicit("room-2"))
        .unwrap();
    assert_eq!(
        executor.advance(&mut holder, None).await.unwrap(),
        Step::Run
    );
    let runs = AtomicUsize::new(0);
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        book(executor, &tool, &context, "room-2", &runs),
    )
    .await;
    assert!(dropped.is_err(), "the waiter answered: {dropped:?}");
    let record_key = common::explicit_key(&tool, &tenant, "room-2");
    let held = record(store, &tenant, &record_key).await.unwrap();
    assert_eq!(
        held.token,
        holder.token(),
        "the holder's claim is untouched"
    );
    executor.release_unrun(&mut holder).await;
    assert_eq!(
        book(executor, &tool, &context, "room-2", &runs)
            .await
            .unwrap(),
        "booked"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Drops a call while its body runs: the claim stays in progress (a repeat waits and gets the
/// in-progress error at its deadline), and once the lease ends (`after_lease`) a repeat gets the
/// indeterminate error; the body never runs again.
async fn a_call_dropped_while_its_body_runs_is_a_cancellation(
    executor: &Executor,
    store: &Arc<dyn Store>,
    lease: Duration,
    after_lease: impl std::future::Future<Output = ()>,
) {
    let tool = tool(lease);
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = AtomicUsize::new(0);
    let started = tokio::sync::Notify::new();
    let call = executor.call(&tool, &context, KeyInput::Explicit("room-3"), |_| async {
        runs.fetch_add(1, Ordering::SeqCst);
        started.notify_one();
        std::future::pending::<Result<String, std::io::Error>>().await
    });
    tokio::select! {
        answer = call => panic!("the body never finishes, yet the call answered {answer:?}"),
        _ = started.notified() => {}
    }
    // The call future is dropped here, its body in the middle of running.
    let record_key = common::explicit_key(&tool, &tenant, "room-3");
    let left = record(store, &tenant, &record_key).await.unwrap();
    assert_eq!(left.state, RecordState::InProgress);
    let waiter = Tool::with_timeout(
        tool.name(),
        tool.policy().clone(),
        Some(Duration::from_millis(200)),
    )
    .unwrap();
    let repeat = book(executor, &waiter, &context, "room-3", &runs).await;
    assert_eq!(
        repeat.unwrap_err().idempotency().map(|e| e.kind()),
        Some(ErrorKind::InProgress)
    );
    after_lease.await;
    let repeat = book(executor, &tool, &context, "room-3", &runs).await;
    assert_eq!(
        repeat.unwrap_err().idempotency().map(|e| e.kind()),
        Some(ErrorKind::Indeterminate)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// One call on a key of its own, so that the store's connections are open and its scripts or
/// statements ready: what is held afterwards is the claim itself.
async fn warm_up(executor: &Executor) {
    let runs = AtomicUsize::new(0);
    let context = CallContext::new().tenant(random_tenant());
    book(
        executor,
        &tool(Duration::from_secs(30)),
        &context,
        "warm-up",
        &runs,
    )
    .await
    .unwrap();
}

// ---- memory -----------------------------------------------------------------------------------

/// A memory store behind a gate. While it is shut, a claim lands at once but its reply waits (a
/// request that reached the store, its answer not yet back), and a complete waits before it
/// reaches the store.
struct Gated {
    inner: MemoryStore,
    shut_claims: AtomicBool,
    shut_completes: AtomicBool,
    open: watch::Sender<u64>,
}

impl Gated {
    fn new(inner: MemoryStore) -> Arc<Gated> {
        Arc::new(Gated {
            inner,
            shut_claims: AtomicBool::new(false),
            shut_completes: AtomicBool::new(false),
            open: watch::channel(0).0,
        })
    }

    /// Waits for the next opening if `shut` is set.
    async fn pass(&self, shut: &AtomicBool) {
        if shut.load(Ordering::SeqCst) {
            let mut opened = self.open.subscribe();
            let seen = *opened.borrow_and_update();
            let _ = opened.wait_for(|n| *n > seen).await;
        }
    }

    fn open(&self) {
        self.shut_claims.store(false, Ordering::SeqCst);
        self.shut_completes.store(false, Ordering::SeqCst);
        self.open.send_modify(|n| *n += 1);
    }
}

#[async_trait]
impl Store for Gated {
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        let reply = self.inner.claim(request).await;
        self.pass(&self.shut_claims).await;
        reply
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        outcome: &Outcome,
        ttl_ms: u64,
    ) -> Result<Completion, StoreError> {
        self.pass(&self.shut_completes).await;
        self.inner.complete(id, token, outcome, ttl_ms).await
    }
    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError> {
        self.inner.release(id, token).await
    }
    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
        self.inner.get(id).await
    }
    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError> {
        self.inner.list(filter, cursor).await
    }
    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError> {
        self.inner.resolve(id, expected, resolution).await
    }
    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        self.inner.delete(id).await
    }
    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
        self.inner.forget(tenant).await
    }
    async fn purge_expired(&self) -> Result<u64, StoreError> {
        self.inner.purge_expired().await
    }
    async fn wait_for_change(
        &self,
        id: RecordId<'_>,
        holder: Token,
        until: Instant,
        attempt: u32,
    ) -> Result<(), StoreError> {
        self.inner.wait_for_change(id, holder, until, attempt).await
    }
    fn describe(&self) -> String {
        "gated memory".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_call_dropped_while_claiming_releases_its_claim() {
    let gated = Gated::new(MemoryStore::new());
    let store: Arc<dyn Store> = gated.clone();
    let executor = Executor::new(store.clone());
    gated.shut_claims.store(true, Ordering::SeqCst);
    let opener = gated.clone();
    a_call_dropped_while_claiming_releases_its_claim(&executor, &store, "room-1", async move {
        opener.open();
    })
    .await;
}

/// The claim landed before the caller left (its reply was on the way): the store shows it in
/// progress until the reply arrives and the claim is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_claim_that_landed_before_the_drop_is_released_when_its_reply_arrives() {
    let gated = Gated::new(MemoryStore::new());
    let store: Arc<dyn Store> = gated.clone();
    let executor = Executor::new(store.clone());
    let tool = tool(Duration::from_secs(30));
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = AtomicUsize::new(0);
    gated.shut_claims.store(true, Ordering::SeqCst);
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        book(&executor, &tool, &context, "room-4", &runs),
    )
    .await;
    assert!(dropped.is_err());
    let key = common::explicit_key(&tool, &tenant, "room-4");
    let landed = record(&store, &tenant, &key).await.unwrap();
    assert_eq!(landed.state, RecordState::InProgress);
    gated.open();
    common::eventually(
        &store,
        &tenant,
        &key,
        Duration::from_secs(5),
        "released",
        |r| r.is_none(),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_call_dropped_while_waiting_leaves_nothing() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let executor = Executor::new(store.clone());
    a_call_dropped_while_waiting_leaves_nothing(&executor, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_call_dropped_while_its_body_runs_is_a_cancellation() {
    let clock = ManualClock::new(1_700_000_000_000);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let executor = Executor::new(store.clone());
    a_call_dropped_while_its_body_runs_is_a_cancellation(
        &executor,
        &store,
        Duration::from_secs(30),
        async move { clock.advance(Duration::from_secs(31)) },
    )
    .await;
}

/// The body finished and its outcome is on its way to the store when the caller's future is
/// dropped: the outcome is still recorded, and a repeat gets it without running the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_call_dropped_while_recording_still_records_the_outcome() {
    let gated = Gated::new(MemoryStore::new());
    let store: Arc<dyn Store> = gated.clone();
    let executor = Executor::new(store.clone());
    let tool = tool(Duration::from_secs(30));
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = AtomicUsize::new(0);
    gated.shut_completes.store(true, Ordering::SeqCst);
    let dropped = tokio::time::timeout(
        Duration::from_millis(50),
        book(&executor, &tool, &context, "room-5", &runs),
    )
    .await;
    assert!(dropped.is_err(), "the call answered: {dropped:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    gated.open();
    let key = common::explicit_key(&tool, &tenant, "room-5");
    common::eventually(
        &store,
        &tenant,
        &key,
        Duration::from_secs(5),
        "the outcome is recorded",
        |r| r.is_some_and(|r| r.state == RecordState::Completed),
    )
    .await;
    assert_eq!(
        book(&executor, &tool, &context, "room-5", &runs)
            .await
            .unwrap(),
        "booked"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

// ---- Redis ------------------------------------------------------------------------------------

/// A private redis-server (to pause) and an executor on it; `None` without the binary.
async fn private_redis() -> Option<(Arc<common::PausedRedis>, Arc<dyn Store>, Executor)> {
    redis_url()?;
    let server = Arc::new(common::PausedRedis::start()?);
    let store = idemkit::store::open(&server.url(), &StoreOptions::default())
        .await
        .unwrap();
    Some((server, store.clone(), Executor::new(store)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_call_dropped_while_claiming_releases_its_claim() {
    let Some((server, store, executor)) = private_redis().await else {
        return;
    };
    warm_up(&executor).await;
    server.signal("-STOP");
    a_call_dropped_while_claiming_releases_its_claim(&executor, &store, "room-1", async {
        server.signal("-CONT");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_call_dropped_while_waiting_leaves_nothing() {
    let Some((_server, store, executor)) = private_redis().await else {
        return;
    };
    a_call_dropped_while_waiting_leaves_nothing(&executor, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_call_dropped_while_its_body_runs_is_a_cancellation() {
    let Some((_server, store, executor)) = private_redis().await else {
        return;
    };
    a_call_dropped_while_its_body_runs_is_a_cancellation(
        &executor,
        &store,
        Duration::from_millis(1500),
        tokio::time::sleep(Duration::from_millis(1600)),
    )
    .await;
}

// ---- PostgreSQL -------------------------------------------------------------------------------

/// A table of its own on the shared server (dropped at the end), and a store over it.
async fn postgres_table(url: &str) -> (common::PgTable, Arc<dyn Store>) {
    let (table, store) = common::PgTable::new(url, "idemkit_drop").await;
    (table, Arc::new(store))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_call_dropped_while_claiming_releases_its_claim() {
    let Some(url) = postgres_url() else { return };
    let (table, store) = postgres_table(&url).await;
    let executor = Executor::new(store.clone());
    warm_up(&executor).await;
    // Another session locks the table against writes: the claim (an INSERT) waits behind it.
    let locker = common::pg_client(&url).await.unwrap();
    locker
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {} IN EXCLUSIVE MODE",
            table.name
        ))
        .await
        .unwrap();
    a_call_dropped_while_claiming_releases_its_claim(&executor, &store, "room-1", async {
        locker.batch_execute("COMMIT").await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_call_dropped_while_waiting_leaves_nothing() {
    let Some(url) = postgres_url() else { return };
    let (_table, store) = postgres_table(&url).await;
    let executor = Executor::new(store.clone());
    a_call_dropped_while_waiting_leaves_nothing(&executor, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_call_dropped_while_its_body_runs_is_a_cancellation() {
    let Some(url) = postgres_url() else { return };
    let (_table, store) = postgres_table(&url).await;
    let executor = Executor::new(store.clone());
    a_call_dropped_while_its_body_runs_is_a_cancellation(
        &executor,
        &store,
        Duration::from_millis(1500),
        tokio::time::sleep(Duration::from_millis(1600)),
    )
    .await;
}
