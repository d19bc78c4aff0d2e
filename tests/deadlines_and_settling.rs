//! Deadlines and settling against real servers (SPEC v1.1 rules 3 and 4):
//! - a caller still waiting for another holder at its deadline fails with the in-progress error
//!   and a `wait_timed_out` event, never a store error (memory, Redis, PostgreSQL);
//! - recording an outcome and releasing a claim are retried until the lease ends, in the
//!   background once the caller has its answer, through a real outage: a TCP proxy in front of
//!   the shared Redis cuts every connection and closes its port (the shared server is never
//!   stopped), and a private `redis-server` is paused with SIGSTOP.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemkit::store::{RecordId, StoreOptions};
use idemkit::testing::random_tenant;
use idemkit::{
    CallContext, CallError, ErrorKind, EventKind, Executor, KeyInput, KeyStrategy, MemoryStore,
    Policy, RecordState, Store, Tool,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

mod common;

fn redis_url() -> Option<String> {
    common::env_url("IDEMKIT_REDIS_URL")
}

fn postgres_url() -> Option<String> {
    common::env_url("IDEMKIT_POSTGRES_URL")
}

fn explicit(name: &str, lease: Duration, timeout: Option<Duration>) -> Tool {
    Tool::with_timeout(
        name,
        Policy::new(KeyStrategy::Explicit).with_lease(lease),
        timeout,
    )
    .unwrap()
}

// ---- rule 3: a waiter at its deadline -------------------------------------------------------

/// A holder keeps a claim; a caller with a 300 ms deadline waits for it and fails with the
/// in-progress error and `wait_timed_out`, not the store error, and runs nothing.
async fn a_waiter_at_its_deadline_gets_in_progress(store: Arc<dyn Store>) {
    let executor = Executor::new(store);
    let context = CallContext::new().tenant(random_tenant());
    let holder_tool = explicit("send_report", Duration::from_secs(30), None);
    let mut holder = executor
        .prepare(&holder_tool, &context, KeyInput::Explicit("report-7"))
        .unwrap();
    assert_eq!(
        executor.advance(&mut holder, None).await.unwrap(),
        idemkit::Step::Run
    );
    let waiter = explicit(
        "send_report",
        Duration::from_secs(30),
        Some(Duration::from_millis(300)),
    );
    let runs = AtomicUsize::new(0);
    for round in 0..3 {
        let started = Instant::now();
        let result = executor
            .call(
                &waiter,
                &context,
                KeyInput::Explicit("report-7"),
                |_| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(())
                },
            )
            .await;
        let took = started.elapsed();
        match result {
            Err(CallError::Idempotency(e)) => {
                assert_eq!(e.kind(), ErrorKind::InProgress, "round {round}: {e}")
            }
            other => panic!("round {round}: expected in-progress, got {other:?}"),
        }
        assert!(
            took >= Duration::from_millis(300),
            "round {round}: {took:?}"
        );
        assert!(
            took < Duration::from_millis(1500),
            "round {round}: {took:?}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(executor.events().count(EventKind::WaitTimedOut), 3);
    assert_eq!(executor.events().count(EventKind::StoreError), 0);
    // The holder's claim is untouched and still settles normally.
    assert_eq!(
        executor.succeed(&mut holder, "\"ok\"").await,
        idemkit::Recording::Recorded
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_a_waiter_at_its_deadline_gets_in_progress_not_a_store_error() {
    a_waiter_at_its_deadline_gets_in_progress(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_waiter_at_its_deadline_gets_in_progress_not_a_store_error() {
    let Some(url) = redis_url() else { return };
    let prefix = common::unique_prefix("idemkit-deadline");
    let store = idemkit::store::open(&url, &common::prefix_options(&prefix))
        .await
        .unwrap();
    a_waiter_at_its_deadline_gets_in_progress(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_waiter_at_its_deadline_gets_in_progress_not_a_store_error() {
    let Some(url) = postgres_url() else { return };
    let table = format!("idemkit_deadline_{}", &idemkit::Token::random().hex()[..12]);
    let options = StoreOptions {
        table: Some(table.clone()),
        ..StoreOptions::default()
    };
    let store = idemkit::store::postgres::PostgresStore::connect(&url, &options)
        .await
        .unwrap();
    store.create_table_if_missing().await.unwrap();
    a_waiter_at_its_deadline_gets_in_progress(Arc::new(store)).await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "DROP TABLE {table}; DROP FUNCTION IF EXISTS {table}_claim"
        ))
        .await
        .unwrap();
}

// ---- rule 4: settling through an outage -----------------------------------------------------

/// A TCP proxy in front of a server. `stop` cuts every connection and closes the port;
/// `cut_after_next_request` lets the next bytes a client sends reach the server, then stops
/// before any answer comes back (a request that landed, its reply lost).
struct Proxy {
    listen: std::net::SocketAddr,
    target: std::net::SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    cut: Arc<AtomicBool>,
}

impl Proxy {
    async fn start(target: std::net::SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            listen: listener.local_addr().unwrap(),
            target,
            tasks: Arc::default(),
            cut: Arc::default(),
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (target, tasks, cut) = (self.target, self.tasks.clone(), self.cut.clone());
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let (tasks2, cut) = (tasks.clone(), cut.clone());
                let stopper = tasks.clone();
                let pipe = tokio::spawn(async move {
                    if let Ok(outbound) = TcpStream::connect(target).await {
                        if pump(inbound, outbound, &cut).await {
                            stop_all(&stopper);
                        }
                    }
                });
                tasks2.lock().unwrap().push(pipe);
            }
        });
        self.tasks.lock().unwrap().push(accept);
    }

    fn stop(&self) {
        stop_all(&self.tasks);
    }

    fn cut_after_next_request(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    async fn restart(&self) {
        self.cut.store(false, Ordering::SeqCst);
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.listen).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot listen on {} again: {e}", self.listen),
            }
        };
        self.serve(listener);
    }
}

/// Aborts every task of the proxy except the calling one (which returns by itself).
fn stop_all(tasks: &Arc<Mutex<Vec<JoinHandle<()>>>>) {
    for task in tasks.lock().unwrap().drain(..) {
        task.abort();
    }
}

/// Copies both ways; answers true (and stops copying at once, dropping both sockets) when a
/// request was forwarded while `cut` was set.
async fn pump(mut client: TcpStream, mut server: TcpStream, cut: &AtomicBool) -> bool {
    let (mut a, mut b) = ([0u8; 16384], [0u8; 16384]);
    loop {
        tokio::select! {
            read = client.read(&mut a) => match read {
                Ok(0) | Err(_) => return false,
                Ok(n) => {
                    if server.write_all(&a[..n]).await.is_err() {
                        return false;
                    }
                    if cut.swap(false, Ordering::SeqCst) {
                        return true;
                    }
                }
            },
            read = server.read(&mut b) => match read {
                Ok(0) | Err(_) => return false,
                Ok(n) => {
                    if client.write_all(&b[..n]).await.is_err() {
                        return false;
                    }
                }
            },
        }
    }
}

fn redis_address(url: &str) -> std::net::SocketAddr {
    let rest = url.split("://").nth(1).unwrap();
    let authority = rest.split('/').next().unwrap();
    let host_port = authority.rsplit('@').next().unwrap();
    let host_port = host_port.replace("localhost", "127.0.0.1");
    host_port.parse().unwrap()
}

/// An executor on a store that reaches the shared Redis through a proxy, and a store that
/// reaches it directly (to look at records), with one key prefix.
async fn through_a_proxy(url: &str) -> (Proxy, Executor, Arc<dyn Store>) {
    let target = redis_address(url);
    let proxy = Proxy::start(target).await;
    let via = url.replacen(&target.to_string(), &proxy.listen.to_string(), 1);
    assert_ne!(
        via, url,
        "IDEMKIT_REDIS_URL must spell host:port as {target}"
    );
    let prefix = common::unique_prefix("idemkit-settling");
    let options = common::prefix_options(&prefix);
    let proxied = idemkit::store::open(&via, &options).await.unwrap();
    let direct = idemkit::store::open(url, &options).await.unwrap();
    (proxy, Executor::new(proxied), direct)
}

/// Warms every pooled connection up (and loads the scripts) before an outage.
async fn warm_up(executor: &Executor, tool: &Tool, context: &CallContext) {
    for i in 0..8 {
        let key = format!("warm-{i}");
        executor
            .call(tool, context, KeyInput::Explicit(&key), |_| async {
                Ok::<_, std::io::Error>(0)
            })
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outcome_is_recorded_after_a_one_second_outage_and_the_body_runs_once() {
    let Some(url) = redis_url() else { return };
    let (proxy, executor, direct) = through_a_proxy(&url).await;
    let proxy = Arc::new(proxy);
    let tool = explicit("charge_card", Duration::from_secs(5), None);
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    warm_up(&executor, &tool, &context).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |runs: Arc<AtomicUsize>, proxy: Option<Arc<Proxy>>| {
        let (executor, tool, context) = (executor.clone(), tool.clone(), context.clone());
        async move {
            executor
                .call(&tool, &context, KeyInput::Explicit("order-1"), |_| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    if let Some(proxy) = proxy {
                        proxy.stop(); // the store goes away while the body runs
                    }
                    Ok::<_, std::io::Error>(42)
                })
                .await
        }
    };
    let started = Instant::now();
    assert_eq!(call(runs.clone(), Some(proxy.clone())).await.unwrap(), 42);
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "the caller is answered at once: {:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    proxy.restart().await;
    let key = common::explicit_key(&tool, &tenant, "order-1");
    common::eventually(
        &direct,
        &tenant,
        &key,
        Duration::from_secs(4),
        "the outcome is recorded",
        |r| r.is_some_and(|r| r.state == RecordState::Completed),
    )
    .await;
    assert_eq!(call(runs.clone(), None).await.unwrap(), 42);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the body ran once");
    assert_eq!(executor.events().count(EventKind::RecordFailed), 0);
    proxy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_body_is_released_after_a_one_second_outage_and_a_retry_runs() {
    let Some(url) = redis_url() else { return };
    let (proxy, executor, direct) = through_a_proxy(&url).await;
    let proxy = Arc::new(proxy);
    let tool = explicit("charge_card", Duration::from_secs(5), None);
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    warm_up(&executor, &tool, &context).await;
    let during = proxy.clone();
    let result = executor
        .call(
            &tool,
            &context,
            KeyInput::Explicit("order-2"),
            |_| async move {
                during.stop();
                Err::<u32, _>(std::io::Error::other("card declined"))
            },
        )
        .await;
    assert!(matches!(result, Err(CallError::Body(_))), "{result:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    proxy.restart().await;
    let key = common::explicit_key(&tool, &tenant, "order-2");
    common::eventually(
        &direct,
        &tenant,
        &key,
        Duration::from_secs(4),
        "the failed body's claim is released",
        |r| r.is_none(),
    )
    .await;
    let retried = executor
        .call(&tool, &context, KeyInput::Explicit("order-2"), |_| async {
            Ok::<_, std::io::Error>(7)
        })
        .await;
    assert_eq!(retried.unwrap(), 7, "a retry runs again");
    assert_eq!(executor.events().count(EventKind::Released), 1);
    proxy.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_whose_reply_was_lost_is_released_once_the_store_is_back() {
    let Some(url) = redis_url() else { return };
    let (proxy, executor, direct) = through_a_proxy(&url).await;
    let tool = explicit("charge_card", Duration::from_secs(5), None);
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    warm_up(&executor, &tool, &context).await;
    let runs = AtomicUsize::new(0);
    // The claim reaches the server; its reply and everything after it do not.
    proxy.cut_after_next_request();
    let started = Instant::now();
    let result = executor
        .call(&tool, &context, KeyInput::Explicit("order-3"), |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(1)
        })
        .await;
    match result {
        Err(CallError::Idempotency(e)) => assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}"),
        other => panic!("expected store-unavailable, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let key = common::explicit_key(&tool, &tenant, "order-3");
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    let (landed, _) = direct.get(id).await.unwrap();
    assert!(
        landed.is_some_and(|r| r.state == RecordState::InProgress),
        "the claim landed"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    proxy.restart().await;
    common::eventually(
        &direct,
        &tenant,
        &key,
        Duration::from_secs(4),
        "the claim whose body never ran is released",
        |r| r.is_none(),
    )
    .await;
    let retried = executor
        .call(&tool, &context, KeyInput::Explicit("order-3"), |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(1)
        })
        .await;
    assert_eq!(retried.unwrap(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    proxy.stop();
}

// ---- a paused server (SIGSTOP) ----------------------------------------------------------------

/// The server stops answering while the body runs: the caller gets its result by its deadline,
/// and the outcome is recorded once the server answers again (a second later).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paused_server_never_holds_the_caller_and_the_outcome_lands_after_sigcont() {
    if redis_url().is_none() {
        return;
    }
    let Some((server, store, executor, tool)) = on_a_private_redis(400).await else {
        return;
    };
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = Arc::new(AtomicUsize::new(0));
    let (ran, paused) = (runs.clone(), server.clone());
    let started = Instant::now();
    let result = executor
        .call(
            &tool,
            &context,
            KeyInput::Explicit("invoice-9"),
            |_| async move {
                ran.fetch_add(1, Ordering::SeqCst);
                paused.signal("-STOP");
                Ok::<_, std::io::Error>("sent".to_string())
            },
        )
        .await;
    let took = started.elapsed();
    assert_eq!(result.unwrap(), "sent");
    assert!(
        took < Duration::from_secs(1),
        "the caller was held {took:?}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    server.signal("-CONT");
    let key = common::explicit_key(&tool, &tenant, "invoice-9");
    common::eventually(
        &store,
        &tenant,
        &key,
        Duration::from_secs(4),
        "the outcome is recorded",
        |r| r.is_some_and(|r| r.state == RecordState::Completed),
    )
    .await;
    let repeat = executor
        .call(
            &tool,
            &context,
            KeyInput::Explicit("invoice-9"),
            |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>("again".to_string())
            },
        )
        .await;
    assert_eq!(repeat.unwrap(), "sent");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(executor.events().count(EventKind::RecordFailed), 0);
}

/// A claim sent to a paused server: the caller is answered at its deadline (store unavailable,
/// nothing run); the claim lands when the server answers again and is then released, so the
/// next call runs the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_cut_short_by_the_deadline_is_released_once_it_lands() {
    if redis_url().is_none() {
        return;
    }
    let Some((server, store, executor, tool)) = on_a_private_redis(300).await else {
        return;
    };
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = AtomicUsize::new(0);
    let call = || {
        executor.call(
            &tool,
            &context,
            KeyInput::Explicit("invoice-10"),
            |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(10)
            },
        )
    };
    server.signal("-STOP");
    let started = Instant::now();
    common::assert_unavailable_within(call(), Duration::from_millis(650)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.signal("-CONT");
    let key = common::explicit_key(&tool, &tenant, "invoice-10");
    common::eventually(
        &store,
        &tenant,
        &key,
        Duration::from_secs(4),
        "the claim that landed late is released",
        |r| r.is_none(),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(call().await.unwrap(), 10);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A private redis-server (to pause), a store and an executor on it, and an `EXPLICIT` tool with
/// a 5 s lease and a `timeout_ms` deadline; `None` (a loud skip) without the binary.
async fn on_a_private_redis(
    timeout_ms: u64,
) -> Option<(Arc<common::PausedRedis>, Arc<dyn Store>, Executor, Tool)> {
    let server = Arc::new(common::PausedRedis::start()?);
    let url = format!("redis://127.0.0.1:{}/0", server.port);
    let store = idemkit::store::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    let executor = Executor::new(store.clone());
    let tool = explicit(
        "send_invoice",
        Duration::from_secs(5),
        Some(Duration::from_millis(timeout_ms)),
    );
    Some((server, store, executor, tool))
}
