//! The Redis store against a real server (`IDEMKIT_REDIS_URL`, set by `scripts/test.sh` after
//! `scripts/services.sh start`), plus private `redis-server` processes for fault tests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit::store::redis::{tenant_segment, RedisStore};
use idemkit::store::{Claim, ClaimRequest, RecordId, StoreOptions};
use idemkit::testing::{random_key, random_tenant};
use idemkit::{CallContext, CallError, ErrorKind, Executor, KeyInput, Outcome, Store, Token};

mod common;

use common::{
    check_a_killed_holders_claim, claim_and_hang, free_port, kill_a_claim_holder,
    make_certificates, prefix_options as options, tool,
};

fn redis_url() -> Option<String> {
    common::env_url("IDEMKIT_REDIS_URL")
}

fn unique_prefix() -> String {
    common::unique_prefix("idemkit-test")
}

/// A raw connection for looking at what the store wrote.
async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

fn request<'a>(id: RecordId<'a>, token: Token, lease_ms: u64, ttl_ms: u64) -> ClaimRequest<'a> {
    common::claim_request(id, "redis_test", token, lease_ms, ttl_ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_store_passes_the_conformance_suite() {
    let Some(url) = redis_url() else { return };
    let store = idemkit::store::open(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    assert!(store.describe().starts_with("redis://"));
    common::check_conformance(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_live_under_prefix_tenant_hex_and_key_with_native_expiry() {
    let Some(url) = redis_url() else { return };
    let store = RedisStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    assert_eq!(store.prefix(), "idemkit:");
    let mut conn = raw(&url).await;
    let key = random_key();
    let acme = random_tenant();
    let tenants: [Option<&str>; 4] = [None, Some(""), Some(&acme), Some("Zürich ☃")];
    for tenant in tenants {
        let id = RecordId { tenant, key: &key };
        let token = Token::random();
        store
            .claim(&request(id, token, 60_000, 120_000))
            .await
            .unwrap();
        let expected = match tenant {
            None => format!("idemkit:_:{}", key.hex()),
            Some(t) => format!("idemkit:t{}:{}", hex(t.as_bytes()), key.hex()),
        };
        assert_eq!(store.record_key(id), expected);
        let kind: String = redis::cmd("TYPE")
            .arg(&expected)
            .query_async(&mut conn)
            .await
            .unwrap();
        // Record v2: one string per record (see the store's module documentation).
        assert_eq!(kind, "string", "{expected}");
        let (record, _) = store.get(id).await.unwrap();
        let record = record.unwrap();
        assert_eq!(record.tenant.as_deref(), tenant);
        // Records expire natively exactly at expires_at.
        let expire_at: i64 = redis::cmd("PEXPIRETIME")
            .arg(&expected)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(expire_at, record.expires_at, "{expected}");
        assert_eq!(record.lease_end, record.expires_at - 120_000);
        let value: String = redis::cmd("GET")
            .arg(&expected)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            value,
            format!(
                "2p|{}||60000|120000|||{}|{}",
                token.hex(),
                "redis_test".len(),
                "redis_test"
            ),
            "{expected}"
        );
        store
            .complete(
                id,
                token,
                &Outcome::success(r#"{"n":12345678901234567890}"#).unwrap(),
                90_000,
            )
            .await
            .unwrap();
        let value: String = redis::cmd("GET")
            .arg(&expected)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            value.starts_with(&format!("2s|{}|", token.hex()))
                && value.ends_with(r#"|10|redis_test{"success":{"n":12345678901234567890}}"#),
            "{value}"
        );
        let (record, _) = store.get(id).await.unwrap();
        let expire_at: i64 = redis::cmd("PEXPIRETIME")
            .arg(&expected)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(expire_at, record.unwrap().expires_at);
    }
    assert_eq!(tenant_segment(Some("acme")), "t61636d65");
    for tenant in tenants {
        let _: i64 = redis::cmd("DEL")
            .arg(store.record_key(RecordId { tenant, key: &key }))
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forget_scans_only_its_own_glob_escaped_prefix() {
    let Some(url) = redis_url() else { return };
    let run = &Token::random().hex()[..8];
    // `*`, `?` and `[...]` in the prefix must match themselves only.
    let special = format!("it-{run}*[ab]?:");
    let lookalike = format!("it-{run}X[ab]?:");
    let lookalike2 = format!("it-{run}*aZ:");
    let mut stores = Vec::new();
    for prefix in [&special, &lookalike, &lookalike2] {
        stores.push(RedisStore::connect(&url, &options(prefix)).await.unwrap());
    }
    let tenant = random_tenant();
    let key = random_key();
    for store in &stores {
        for t in [Some(tenant.as_str()), None] {
            let id = RecordId {
                tenant: t,
                key: &key,
            };
            store
                .claim(&request(id, Token::random(), 60_000, 60_000))
                .await
                .unwrap();
        }
    }
    assert_eq!(stores[0].forget(Some(&tenant)).await.unwrap(), 1);
    assert_eq!(stores[0].forget(None).await.unwrap(), 1);
    for store in &stores[1..] {
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        assert!(
            store.get(id).await.unwrap().0.is_some(),
            "{} lost a record",
            store.prefix()
        );
        assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 1);
        assert_eq!(store.forget(None).await.unwrap(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forget_deletes_many_records_in_batches() {
    let Some(url) = redis_url() else { return };
    let store = Arc::new(
        RedisStore::connect(&url, &options(&unique_prefix()))
            .await
            .unwrap(),
    );
    let tenant = random_tenant();
    common::claim_many(
        store.clone(),
        "redis_test",
        &tenant,
        8,
        150,
        (60_000, 60_000),
    )
    .await;
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 1200);
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn purge_finds_records_expired_but_still_present() {
    let Some(url) = redis_url() else { return };
    let store = RedisStore::connect(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    let mut conn = raw(&url).await;
    let tenant = random_tenant();
    let (stuck, live) = (random_key(), random_key());
    for (key, ttl) in [(&stuck, 200), (&live, 600_000)] {
        let id = RecordId {
            tenant: Some(&tenant),
            key,
        };
        let token = Token::random();
        store.claim(&request(id, token, 100, ttl)).await.unwrap();
    }
    // Someone removed the native expiry: only the record's own expires_at still counts.
    let stuck_key = store.record_key(RecordId {
        tenant: Some(&tenant),
        key: &stuck,
    });
    let persisted: i64 = redis::cmd("PERSIST")
        .arg(&stuck_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(persisted, 1);
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(
        store
            .get(RecordId {
                tenant: Some(&tenant),
                key: &stuck
            })
            .await
            .unwrap()
            .0,
        None,
        "expired records are invisible"
    );
    assert_eq!(store.purge_expired().await.unwrap(), 1);
    let exists: i64 = redis::cmd("EXISTS")
        .arg(&stuck_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(exists, 0);
    assert!(store
        .get(RecordId {
            tenant: Some(&tenant),
            key: &live
        })
        .await
        .unwrap()
        .0
        .is_some());
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 1);
}

/// Exactly one of many concurrent claimers takes over an expired record or a failure being
/// retried; everyone else sees the winner's claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn takeovers_have_exactly_one_winner_under_contention() {
    let Some(url) = redis_url() else { return };
    let store: Arc<dyn Store> = Arc::new(
        RedisStore::connect(&url, &options(&unique_prefix()))
            .await
            .unwrap(),
    );
    contend_for_takeovers(store).await;
}

async fn contend_for_takeovers(store: Arc<dyn Store>) {
    let tenant = random_tenant();
    for round in 0..6 {
        let key = random_key();
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        let first = Token::random();
        let retry_failure = round % 2 == 1;
        if retry_failure {
            store
                .claim(&request(id, first, 60_000, 60_000))
                .await
                .unwrap();
            let failure = Outcome::Failure(idemkit::Failure::new("Boom", "no"));
            store.complete(id, first, &failure, 60_000).await.unwrap();
        } else {
            store.claim(&request(id, first, 10, 10)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        common::race_64_claimers(&store, "redis_test", &tenant, &key, retry_failure, round).await;
    }
    store.forget(Some(&tenant)).await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Private servers: eviction policy, authentication, outages.

struct PrivateRedis {
    child: Child,
    port: u16,
    args: Vec<String>,
}

impl PrivateRedis {
    /// A `redis-server` on a free port, or `None` (and a loud skip) when the binary is missing.
    fn start(extra: &[&str]) -> Option<PrivateRedis> {
        let port = free_port();
        let args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let child = spawn_redis(port, &args)?;
        let server = PrivateRedis { child, port, args };
        server.wait_ready();
        Some(server)
    }

    /// A TLS-only `redis-server` (the caller passes `--port 0 --tls-port <port>` and the
    /// certificate options); readiness is checked by the port accepting connections.
    fn start_tls(port: u16, args: &[&str]) -> Option<PrivateRedis> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut command = Command::new("redis-server");
        command
            .args([
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ])
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = common::spawn_redis_server(&mut command)?;
        let server = PrivateRedis { child, port, args };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "TLS redis-server on port {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    fn url(&self, auth: &str) -> String {
        format!("redis://{auth}127.0.0.1:{}/0", self.port)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The port is closed once the process is gone.
        for _ in 0..100 {
            if TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn restart(&mut self) {
        self.child = spawn_redis(self.port, &self.args).expect("redis-server ran before");
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                if s.write_all(b"PING\r\n").is_ok() {
                    let mut buf = [0u8; 64];
                    if let Ok(n) = s.read(&mut buf) {
                        // +PONG, or -NOAUTH when a password is set: either way it answers.
                        if n > 0 {
                            return;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("private redis-server on port {} did not start", self.port);
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_redis(port: u16, extra: &[String]) -> Option<Child> {
    let mut command = Command::new("redis-server");
    command
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args([
            "--daemonize",
            "no",
            "--dir",
            &std::env::temp_dir().to_string_lossy(),
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    common::spawn_redis_server(&mut command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicting_maxmemory_policy_is_refused_unless_allowed() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) =
        PrivateRedis::start(&["--maxmemory-policy", "allkeys-lru", "--maxmemory", "64mb"])
    else {
        return;
    };
    let url = server.url("");
    let error = RedisStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("allkeys-lru")
            && text.contains("noeviction")
            && text.contains("allow_evicting"),
        "{text}"
    );
    let error = idemkit::store::open(&url, &StoreOptions::default())
        .await
        .err()
        .expect("refused");
    assert_eq!(error.kind(), ErrorKind::Configuration);
    let allowed = StoreOptions {
        allow_evicting: true,
        ..StoreOptions::default()
    };
    let store = RedisStore::connect(&url, &allowed).await.unwrap();
    let key = random_key();
    let reply = store
        .claim(&common::untenanted_request(&key, "redis_test"))
        .await
        .unwrap();
    assert!(matches!(reply.claim, Claim::Acquired { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_authenticate_and_never_show_in_descriptions() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) = PrivateRedis::start(&[
        "--requirepass",
        "s3cret-pw",
        "--maxmemory-policy",
        "noeviction",
    ]) else {
        return;
    };
    let store = idemkit::store::open(&server.url(":s3cret-pw@"), &StoreOptions::default())
        .await
        .unwrap();
    assert!(!store.describe().contains("s3cret"), "{}", store.describe());
    let key = random_key();
    let reply = store
        .claim(&common::untenanted_request(&key, "redis_test"))
        .await
        .unwrap();
    assert!(matches!(reply.claim, Claim::Acquired { .. }));
    let error = idemkit::store::open(&server.url(":wrong-pw@"), &StoreOptions::default())
        .await
        .err()
        .expect("wrong password refused");
    assert!(!error.to_string().contains("wrong-pw"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_outage_fails_calls_unrun_and_the_same_store_recovers() {
    if redis_url().is_none() {
        return;
    }
    let Some(mut server) = PrivateRedis::start(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let store = idemkit::store::open(&server.url(""), &StoreOptions::default())
        .await
        .unwrap();
    let executor = Executor::new(store);
    let send = tool("send_during_outage", Duration::from_secs(30));
    let context = CallContext::new().tenant("outage");
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |key: &'static str| {
        let runs = runs.clone();
        let executor = executor.clone();
        let send = send.clone();
        let context = context.clone();
        async move {
            executor
                .call(&send, &context, KeyInput::Explicit(key), |_| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(key.len())
                })
                .await
        }
    };
    assert_eq!(call("before").await.unwrap(), 6);
    assert_eq!(call("before").await.unwrap(), 6);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    server.stop();
    for key in ["during-1", "during-2", "during-3"] {
        common::assert_unavailable_within(call(key), Duration::from_secs(8)).await;
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "no body runs while the store is down"
    );

    server.restart();
    // Scripts are gone with the old process: EVALSHA falls back to loading them.
    assert_eq!(
        call("after").await.unwrap(),
        5,
        "the first call after the outage works"
    );
    assert_eq!(call("after").await.unwrap(), 5);
    for i in 0..8 {
        let key: &'static str = Box::leak(format!("after-{i}").into_boxed_str());
        call(key).await.unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 10);
}

// ---------------------------------------------------------------------------------------------
// A claim holder killed mid-call.

const CHILD_ENV: &str = "IDEMKIT_REDIS_HANG_CHILD";

/// Not a test of its own: the body of the child process that `a_holder_killed_mid_call_...`
/// starts (it claims a key, says so, and hangs until it is killed). Does nothing otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_claims_and_hangs() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let [url, key, tenant] = parts[..] else {
        panic!("url, key and tenant expected")
    };
    let store = idemkit::store::open(url, &StoreOptions::default())
        .await
        .unwrap();
    let charge = tool("charge_card", Duration::from_secs(2));
    claim_and_hang(store, &charge, tenant, KeyInput::Explicit(key)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_holder_killed_mid_call_leaves_an_in_progress_claim_that_becomes_indeterminate() {
    let Some(url) = redis_url() else { return };
    let key = format!("order-{}", Token::random().hex());
    let tenant = random_tenant();
    let spec = format!("{url} {key} {tenant}");
    let claimed = kill_a_claim_holder(&[(CHILD_ENV, &spec)]);
    assert!(claimed.is_some(), "the child never claimed the key");

    let store = idemkit::store::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    check_a_killed_holders_claim(store.clone(), &tenant, &key).await;
    store.forget(Some(&tenant)).await.unwrap();
}

/// `rediss://` with a password, against a private TLS server whose certificate is signed by a
/// test CA trusted through `SSL_CERT_FILE` (read by rustls-native-certs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_urls_connect_over_tls_with_a_password() {
    if redis_url().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("idemkit-tls-{}", &Token::random().hex()[..8]));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, cert, key) = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    // A test CA, and a server certificate for 127.0.0.1 that it signs.
    let made = make_certificates(&dir);
    if !made {
        common::skip(
            "openssl",
            "openssl is not available to make test certificates",
        );
        return;
    }
    let port = free_port();
    let (cert_s, key_s) = (
        cert.to_string_lossy().into_owned(),
        key.to_string_lossy().into_owned(),
    );
    let tls_port = port.to_string();
    let Some(mut server) = PrivateRedis::start_tls(
        port,
        &[
            "--port",
            "0",
            "--tls-port",
            &tls_port,
            "--tls-cert-file",
            &cert_s,
            "--tls-key-file",
            &key_s,
            "--tls-ca-cert-file",
            &cert_s,
            "--tls-auth-clients",
            "no",
            "--requirepass",
            "tls-s3cret",
        ],
    ) else {
        return;
    };
    // Only this test makes TLS connections, so the process-wide variable is safe to set here.
    std::env::set_var("SSL_CERT_FILE", &ca);
    let url = format!("rediss://:tls-s3cret@127.0.0.1:{port}/0");
    let store = idemkit::store::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    assert!(
        store.describe().starts_with("rediss://") && !store.describe().contains("s3cret"),
        "{}",
        store.describe()
    );
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let token = Token::random();
    assert!(matches!(
        store
            .claim(&request(id, token, 1000, 1000))
            .await
            .unwrap()
            .claim,
        Claim::Acquired { .. }
    ));
    store
        .complete(
            id,
            token,
            &Outcome::success("\"over tls\"").unwrap(),
            60_000,
        )
        .await
        .unwrap();
    match store
        .claim(&request(id, Token::random(), 1000, 1000))
        .await
        .unwrap()
        .claim
    {
        Claim::Completed(r) => assert_eq!(r.outcome.unwrap().success_json(), Some("\"over tls\"")),
        other => panic!("expected completed, got {other:?}"),
    }
    // The same from a thread outside the runtime, as the C and Java faces call: on a caller
    // lane, whose own connection makes its TLS handshake and logs in itself.
    let on_lane = store.clone();
    std::thread::spawn(move || {
        use idemkit::runtime::block_on_caller;
        let key = random_key();
        let id = RecordId {
            tenant: None,
            key: &key,
        };
        let token = Token::random();
        let first = block_on_caller(on_lane.claim(&request(id, token, 1000, 1000)));
        assert!(matches!(first.unwrap().claim, Claim::Acquired { .. }));
        let outcome = Outcome::success("\"over a lane\"").unwrap();
        block_on_caller(on_lane.complete(id, token, &outcome, 60_000)).unwrap();
        let again = block_on_caller(on_lane.claim(&request(id, Token::random(), 1000, 1000)));
        match again.unwrap().claim {
            Claim::Completed(r) => {
                assert_eq!(r.outcome.unwrap().success_json(), Some("\"over a lane\""))
            }
            other => panic!("expected completed, got {other:?}"),
        }
    })
    .join()
    .unwrap();
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that stops answering (SIGSTOP) fails calls within the store's response timeout
/// instead of hanging them, runs no body, and calls work again once it answers (SIGCONT).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_server_fails_calls_within_the_response_timeout() {
    if redis_url().is_none() {
        return;
    }
    let Some(server) = PrivateRedis::start(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let store = idemkit::store::open(&server.url(""), &StoreOptions::default())
        .await
        .unwrap();
    let executor = Executor::new(store);
    let send = tool("send_while_hung", Duration::from_secs(30));
    let context = CallContext::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let call = |key: &'static str| {
        let (runs, executor, send, context) = (
            runs.clone(),
            executor.clone(),
            send.clone(),
            context.clone(),
        );
        async move {
            executor
                .call(&send, &context, KeyInput::Explicit(key), |_| async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, std::io::Error>(key.len())
                })
                .await
        }
    };
    call("warm").await.unwrap();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &server.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    };
    signal("-STOP");
    let started = Instant::now();
    let result = call("hung").await;
    let waited = started.elapsed();
    signal("-CONT");
    match result {
        Err(CallError::Idempotency(e)) => assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}"),
        other => panic!("expected store-unavailable, got {other:?}"),
    }
    assert!(waited < Duration::from_secs(12), "waited {waited:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "no body ran while the server hung"
    );
    assert_eq!(call("after-hang").await.unwrap(), 10);
    assert_eq!(
        call("warm").await.unwrap(),
        4,
        "records from before are kept"
    );
}

// ---------------------------------------------------------------------------------------------
// Tenants in NFC form; the newest records first; every operation after a restart; secrets.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_and_list_take_the_tenant_in_nfc_form() {
    let Some(url) = redis_url() else { return };
    let store = RedisStore::connect(&url, &options(&unique_prefix()))
        .await
        .unwrap();
    common::check_tenants_are_taken_in_nfc_form(Arc::new(store)).await;
}

/// Writes `count` completed records for `tenant` claimed an hour or more ago, straight into
/// Redis with pipelines (the layout of `records_live_under_prefix_tenant_hex_and_key_...`).
async fn write_old_records(url: &str, prefix: &str, tenant: &str, count: usize) {
    let mut connection = raw(url).await;
    let (secs, _): (i64, i64) = redis::cmd("TIME")
        .query_async(&mut connection)
        .await
        .unwrap();
    let now = secs * 1000;
    let segment = tenant_segment(Some(tenant));
    for chunk in 0..count.div_ceil(1000) {
        let mut pipe = redis::pipe();
        for i in chunk * 1000..((chunk + 1) * 1000).min(count) {
            let key = format!("{}{}", Token::random().hex(), Token::random().hex());
            let claimed_at = now - 3_600_000 - i as i64;
            let expires_at = now + 3_600_000;
            let record = format!("{prefix}{segment}:{key}");
            pipe.cmd("HSET")
                .arg(&record)
                .arg(&[
                    ("v", "1".to_owned()),
                    ("key", key),
                    ("tenant", tenant.to_owned()),
                    ("scope", "old_test".to_owned()),
                    ("state", "completed".to_owned()),
                    ("token", Token::random().hex()),
                    ("claimed_at", claimed_at.to_string()),
                    ("lease_end", (claimed_at + 1000).to_string()),
                    ("ttl_ms", "7200000".to_owned()),
                    ("expires_at", expires_at.to_string()),
                    ("outcome", r#"{"success":1}"#.to_owned()),
                    ("outcome_kind", "success".to_owned()),
                ])
                .ignore();
            pipe.cmd("PEXPIREAT").arg(&record).arg(expires_at).ignore();
        }
        let () = pipe.query_async(&mut connection).await.unwrap();
    }
}

/// Above the CLI's old sampling cut-off (10,000 records read in SCAN order, then sorted), the
/// newest records were missing from `idemkit list`. With 30,000 records the five newest all fell
/// in a 10,000-record sample by luck less than once in 200 runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_shows_the_newest_records_first_among_30k() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let store: Arc<dyn Store> =
        Arc::new(RedisStore::connect(&url, &options(&prefix)).await.unwrap());
    let tenant = random_tenant();
    let started = Instant::now();
    write_old_records(&url, &prefix, &tenant, 30_000).await;
    eprintln!("wrote 30,000 records in {:?}", started.elapsed());
    let newest = common::claim_five_newest(&store, &tenant).await;
    common::check_newest_first(
        &store,
        &tenant,
        &newest,
        &["--store", &url, "--prefix", &prefix],
    )
    .await;
    assert_eq!(store.forget(Some(&tenant)).await.unwrap(), 30_005);
}

/// A directory removed when dropped (also when a test fails).
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A private server with an append-only file in a directory of its own, so that records
/// survive a restart. (The server is dropped before the directory.)
fn persistent_redis() -> Option<(PrivateRedis, TempDir)> {
    let dir = std::env::temp_dir().join(format!("idemkit-redis-{}", &Token::random().hex()[..10]));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_string_lossy().into_owned();
    let dir = TempDir(dir);
    let server = PrivateRedis::start(&[
        "--maxmemory-policy",
        "noeviction",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        &dir_arg,
    ])?;
    Some((server, dir))
}

/// After a restart of the server, the first call of *every* operation works (each broken
/// connection is noticed and the operation sent once more), not only claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_operation_works_at_once_after_a_restart() {
    if redis_url().is_none() {
        return;
    }
    let Some((mut server, dir)) = persistent_redis() else {
        return;
    };
    let store = RedisStore::connect(&server.url(""), &StoreOptions::default())
        .await
        .unwrap();
    let tenant = random_tenant();
    let held_key = random_key();
    let held_token = Token::random();
    let held = RecordId {
        tenant: Some(&tenant),
        key: &held_key,
    };
    store
        .claim(&request(held, held_token, 60_000, 60_000))
        .await
        .unwrap();
    common::claim_many(
        Arc::new(
            RedisStore::connect(&server.url(""), &StoreOptions::default())
                .await
                .unwrap(),
        ),
        "redis_test",
        &tenant,
        2,
        10,
        (60_000, 60_000),
    )
    .await;
    let mut restart = || {
        server.stop();
        server.restart();
    };
    let filter = idemkit::store::ListFilter {
        tenant: Some(Some(tenant.clone())),
        ..Default::default()
    };

    restart();
    // Every page (a page of a SCAN over a server shared with other data may be empty).
    let mut listed = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .list(&filter, cursor.as_deref())
            .await
            .expect("list after a restart");
        listed += page.records.len();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(listed, 21);
    restart();
    let newest = store.newest(&filter).await.expect("newest after a restart");
    assert_eq!(newest.records.len(), 21);
    restart();
    store.purge_expired().await.expect("purge after a restart");
    restart();
    let outcome = Outcome::success(r#""settled""#).unwrap();
    let resolved = store
        .resolve(
            held,
            held_token,
            &idemkit::store::Resolution::Complete {
                outcome,
                ttl_ms: 60_000,
            },
        )
        .await
        .expect("resolve after a restart");
    assert_eq!(resolved, idemkit::store::Resolved::Done);
    restart();
    let (record, _) = store.get(held).await.expect("get after a restart");
    assert_eq!(record.unwrap().state, idemkit::RecordState::Completed);
    restart();
    assert_eq!(
        store
            .forget(Some(&tenant))
            .await
            .expect("forget after a restart"),
        21
    );
    restart();
    let key = random_key();
    store
        .claim(&common::untenanted_request(&key, "redis_test"))
        .await
        .expect("claim after a restart");
    drop(server);
    drop(dir);
}

/// SPEC v1.1 rule 11: no form of password reaches an error from `store::open` or `describe()`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_form_of_password_shows_in_errors_or_descriptions() {
    let Some(url) = redis_url() else { return };
    let port = url
        .trim_start_matches("redis://")
        .split(['/', '?'])
        .next()
        .unwrap()
        .to_owned();
    // Opens (the server has no password; the parameter is ignored by the driver).
    let store = idemkit::store::open(
        &format!("redis://{port}/0?password=Zq7secret"),
        &StoreOptions::default(),
    )
    .await
    .unwrap();
    assert!(!store.describe().contains("Zq7"), "{}", store.describe());
    let refused = [
        // Unencoded `/ ? #` in the password: the driver misreads the authority.
        format!("redis://:pa/Zq7@{port}/0"),
        format!("redis://:p?Zq7@{port}/0"),
        format!("redis://:p#Zq7@{port}/0"),
        // A password the server does not expect.
        format!("redis://user:Zq7pw@{port}/0"),
        // A closed port.
        format!("redis://:Zq7pw@127.0.0.1:{}/0", free_port()),
        format!("redis+cluster://:Zq7pw@127.0.0.1:{}/", free_port()),
        "host=127.0.0.1 password=Zq7pw".to_owned(),
    ];
    for url in refused {
        match idemkit::store::open(&url, &StoreOptions::default()).await {
            Ok(store) => assert!(!store.describe().contains("Zq7"), "{}", store.describe()),
            Err(e) => {
                // The message and every error of its source chain (the driver's error included).
                let text = common::whole_chain(&e);
                assert!(!text.contains("Zq7"), "{url}: {text}");
            }
        }
    }
}

/// A store error keeps the driver's error as its source: a closed port and a wrong password
/// each give an `Error` whose `source()` is the redis crate's error, readable by downcasting,
/// while its text shows no password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_errors_keep_the_drivers_error_as_their_source() {
    let Some(url) = redis_url() else { return };
    let port = url
        .trim_start_matches("redis://")
        .split(['/', '?'])
        .next()
        .unwrap()
        .to_owned();
    for url in [
        format!("redis://:Zq7pw@127.0.0.1:{}/0", free_port()),
        format!("redis://user:Zq7pw@{port}/0"),
    ] {
        let Err(e) = idemkit::store::open(&url, &StoreOptions::default()).await else {
            panic!("{url} opened");
        };
        assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{url}: {e}");
        let source =
            std::error::Error::source(&e).unwrap_or_else(|| panic!("{url}: {e} has no source"));
        let driver = e.driver_error().expect("a driver error");
        assert_eq!(source.to_string(), driver.to_string());
        assert!(
            e.to_string().ends_with(&driver.to_string()),
            "{e} / {driver}"
        );
        let original = driver
            .get_ref()
            .and_then(|o| o.downcast_ref::<redis::RedisError>())
            .unwrap_or_else(|| panic!("{url}: the source is not a RedisError: {driver:?}"));
        assert_eq!(original.to_string(), driver.to_string());
        assert!(!common::whole_chain(&e).contains("Zq7"), "{e:?}");
    }

    // During a call: the executor's store-unavailable error has the driver's error as source.
    let Some(mut server) = PrivateRedis::start(&["--maxmemory-policy", "noeviction"]) else {
        return;
    };
    let store = idemkit::store::open(&server.url(""), &StoreOptions::default())
        .await
        .unwrap();
    server.stop();
    let executor = Executor::new(store);
    let tool = tool("source_chain", Duration::from_secs(30));
    let result = executor
        .call(
            &tool,
            &CallContext::new(),
            KeyInput::Explicit("source-chain"),
            |_| async { Ok::<_, std::io::Error>(1) },
        )
        .await;
    let Err(CallError::Idempotency(e)) = result else {
        panic!("expected store-unavailable, got {result:?}");
    };
    assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}");
    let driver = e
        .driver_error()
        .unwrap_or_else(|| panic!("{e} has no driver error"));
    assert!(
        driver.get_ref().unwrap().is::<redis::RedisError>(),
        "{driver:?}"
    );
}

/// A record written by the v1 claim script of idemkit 1.1 (`HSET` of the fields, then `HSET` of
/// `tenant` when there is one, then `PEXPIREAT expires_at`), exactly as that script left it.
async fn write_v1_record(
    connection: &mut redis::aio::MultiplexedConnection,
    record: &str,
    fields: &[(&str, String)],
    tenant: Option<&str>,
) {
    let expires_at: i64 = fields
        .iter()
        .find(|(name, _)| *name == "expires_at")
        .unwrap()
        .1
        .parse()
        .unwrap();
    let mut pipe = redis::pipe();
    pipe.cmd("HSET").arg(record).arg(fields).ignore();
    if let Some(tenant) = tenant {
        pipe.cmd("HSET")
            .arg(record)
            .arg("tenant")
            .arg(tenant)
            .ignore();
    }
    pipe.cmd("PEXPIREAT").arg(record).arg(expires_at).ignore();
    let () = pipe.query_async(connection).await.unwrap();
}

/// The claim script reads a record with one positional `HMGET` (issue 16): records written by
/// the earlier scripts (tenant written last, by a second HSET) are still read whole, settled by
/// their owner and answered as remembered, and a remembered failure is still replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_by_the_v1_scripts_are_read_and_settled() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let store = RedisStore::connect(&url, &options(&prefix)).await.unwrap();
    let mut conn = raw(&url).await;
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let now = secs * 1000 + micros / 1000;
    let named = random_tenant();
    for tenant in [None, Some(named.as_str())] {
        let key = random_key();
        let id = RecordId { tenant, key: &key };
        let owner = Token::random();
        let (claimed_at, lease_end, expires_at) = (now, now + 60_000, now + 60_000 + 120_000);
        write_v1_record(
            &mut conn,
            &store.record_key(id),
            &[
                ("v", "1".to_owned()),
                ("key", key.hex()),
                ("scope", "old_tool".to_owned()),
                ("state", "in_progress".to_owned()),
                ("token", owner.hex()),
                ("claimed_at", claimed_at.to_string()),
                ("lease_end", lease_end.to_string()),
                ("ttl_ms", "120000".to_owned()),
                ("expires_at", expires_at.to_string()),
            ],
            tenant,
        )
        .await;
        let other = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        let Claim::InProgress(record) = other.claim else {
            panic!("{tenant:?}: {:?}", other.claim)
        };
        assert_eq!(
            (
                record.key.as_str(),
                record.tenant.as_deref(),
                record.scope.as_str(),
                record.token,
            ),
            (key.hex().as_str(), tenant, "old_tool", owner),
        );
        assert_eq!(
            (
                record.claimed_at,
                record.lease_end,
                record.ttl_ms,
                record.expires_at,
                record.outcome
            ),
            (claimed_at, lease_end, 120_000, expires_at, None)
        );
        // Its owner settles it, and a repeat is answered from it.
        let completion = store
            .complete(id, owner, &Outcome::success(r#"{"id":7}"#).unwrap(), 90_000)
            .await
            .unwrap();
        assert_eq!(completion, idemkit::store::Completion::Recorded);
        let repeat = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        let Claim::Completed(record) = repeat.claim else {
            panic!("{tenant:?}: {:?}", repeat.claim)
        };
        assert_eq!(
            record.outcome,
            Some(Outcome::success(r#"{"id":7}"#).unwrap())
        );
        assert_eq!(record.tenant.as_deref(), tenant);

        // A remembered failure written by the v1 scripts is replaced by a claim that retries it.
        let key = random_key();
        let id = RecordId { tenant, key: &key };
        write_v1_record(
            &mut conn,
            &store.record_key(id),
            &[
                ("v", "1".to_owned()),
                ("key", key.hex()),
                ("scope", "old_tool".to_owned()),
                ("state", "completed".to_owned()),
                ("token", Token::random().hex()),
                ("claimed_at", claimed_at.to_string()),
                ("lease_end", lease_end.to_string()),
                ("ttl_ms", "120000".to_owned()),
                ("expires_at", expires_at.to_string()),
                (
                    "outcome",
                    r#"{"failure":{"type":"E","message":"m"}}"#.to_owned(),
                ),
                ("outcome_kind", "failure".to_owned()),
            ],
            tenant,
        )
        .await;
        let kept = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        assert!(
            matches!(&kept.claim, Claim::Completed(r) if matches!(r.outcome, Some(Outcome::Failure(_)))),
            "{:?}",
            kept.claim
        );
        let mut retry = request(id, Token::random(), 60_000, 120_000);
        retry.retry_failure = true;
        let retried = store.claim(&retry).await.unwrap();
        assert!(
            matches!(retried.claim, Claim::Acquired { .. }),
            "{:?}",
            retried.claim
        );
        let (record, _) = store.get(id).await.unwrap();
        let record = record.unwrap();
        assert_eq!(
            (record.tenant.as_deref(), record.outcome, record.token),
            (tenant, None, retry.token)
        );
    }
    store.forget(None).await.unwrap();
    store.forget(Some(&named)).await.unwrap();
}
