//! Helpers shared by the store integration tests (`redis_store`, `postgres_store`,
//! `redis_cluster_store`, `cli_stores`). Each test file uses only some of them.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use idemkit::store::{Claim, ClaimRequest, RecordId, StoreOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use idemkit::{
    CallContext, ErrorKind, Executor, KeyInput, KeyStrategy, Policy, RecordState, RetryBehavior,
    Status, Store, Token, Tool,
};

// The one rule for a test whose server or program is missing (also compiled into the crate's
// own unit tests, src/lib.rs).
mod skip;
#[allow(unused_imports)]
pub use skip::{env_url, required, skip};

/// The shared conformance suite (`idemkit::testing::check_store`) on one store.
pub async fn check_conformance(store: Arc<dyn Store>) {
    idemkit::testing::check_store(|| {
        let store = store.clone();
        async move { store }
    })
    .await;
}

/// Store options with this key prefix.
pub fn prefix_options(prefix: &str) -> StoreOptions {
    StoreOptions {
        key_prefix: Some(prefix.to_owned()),
        ..StoreOptions::default()
    }
}

/// `<name>-<10 random hex digits>:`, a key prefix no other test run uses.
pub fn unique_prefix(name: &str) -> String {
    format!("{name}-{}:", &Token::random().hex()[..10])
}

/// A claim request for `id` in `scope`, not retrying failures.
pub fn claim_request<'a>(
    id: RecordId<'a>,
    scope: &'static str,
    token: Token,
    lease_ms: u64,
    ttl_ms: u64,
) -> ClaimRequest<'a> {
    ClaimRequest {
        id,
        scope,
        token,
        lease_ms,
        ttl_ms,
        retry_failure: false,
        fingerprint: None,
        payload_checked: false,
    }
}

/// A claim request for `key` with no tenant, a fresh token, and a one-second lease and TTL.
pub fn untenanted_request<'a>(key: &'a idemkit::Key, scope: &'static str) -> ClaimRequest<'a> {
    let id = RecordId { tenant: None, key };
    claim_request(id, scope, Token::random(), 1000, 1000)
}

/// A tool taking explicit keys, with this lease.
pub fn tool(name: &str, lease: Duration) -> Tool {
    Tool::new(name, Policy::new(KeyStrategy::Explicit).with_lease(lease)).unwrap()
}

/// A port that was free a moment ago, below the kernel's ephemeral range (32768–60999 by
/// default): a private server restarted on it must not find it taken by an outgoing connection
/// that another test opened meanwhile.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new();
    for attempt in 0u32..1_000 {
        let port = 20_000 + (random.hash_one(attempt) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `check` until it holds, panicking after 20 seconds.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "{what}: timed out");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Spawns a prepared `redis-server` command, or `None` (and a loud skip) when it cannot run.
pub fn spawn_redis_server(command: &mut Command) -> Option<Child> {
    match command.spawn() {
        Ok(child) => Some(child),
        Err(e) => {
            skip(
                "redis-server",
                &format!("cannot start redis-server ({e}); scripts/services.sh start installs it"),
            );
            None
        }
    }
}

/// A test CA (`ca.pem`) and a certificate for 127.0.0.1 it signs (`cert.pem`, `key.pem`) in
/// `dir`; false when openssl is missing or fails.
pub fn make_certificates(dir: &std::path::Path) -> bool {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=idemkit test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    ]) && openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "key.pem",
        "-out",
        "leaf.csr",
    ]) && openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "leaf.ext",
        "-out",
        "cert.pem",
    ])
}

// ---------------------------------------------------------------------------------------------
// A claim holder killed mid-call: the child side and the parent side.

/// The child side of `kill_a_claim_holder`: calls `tool` for `tenant` and, holding the claim,
/// prints `CLAIMED <key>` and hangs until it is killed.
pub async fn claim_and_hang(store: Arc<dyn Store>, tool: &Tool, tenant: &str, input: KeyInput<'_>) {
    let executor = Executor::new(store);
    let context = CallContext::new().tenant(tenant);
    let _ = executor
        .call(tool, &context, input, |call| async move {
            println!("CLAIMED {}", call.key.unwrap_or_default());
            std::io::stdout().flush().unwrap();
            tokio::time::sleep(Duration::from_secs(600)).await;
            Ok::<_, std::io::Error>(())
        })
        .await;
}

/// Runs this test binary's `child_process_claims_and_hangs` with `env` set, waits (up to 30
/// seconds) until it prints that it holds the claim, then SIGKILLs it: no destructor, no
/// outcome, no release. Returns the key the child printed, or `None` if it never claimed.
pub fn kill_a_claim_holder(env: &[(&str, &str)]) -> Option<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_claims_and_hangs",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test child_process_claims_and_hangs ... " on the same line.
            if let Some((_, key)) = line.split_once("CLAIMED ") {
                let _ = send.send(key.trim().to_owned());
                return;
            }
        }
    });
    let key = receive.recv_timeout(Duration::from_secs(30)).ok();
    child.kill().unwrap();
    child.wait().unwrap();
    key
}

/// The parent side's checks once `kill_a_claim_holder` has killed a holder of `key` (explicit,
/// tool `charge_card` with a 2 s lease) for `tenant`: its claim is still in progress; a
/// fail-fast caller is refused, a waiting caller waits out the lease and gets the indeterminate
/// outcome, and the body never runs again.
pub async fn check_a_killed_holders_claim(store: Arc<dyn Store>, tenant: &str, key: &str) {
    let derived = idemkit::derive_key(
        &idemkit::KeyScope {
            scope: "charge_card",
            tenant: Some(tenant),
            run: None,
        },
        KeyInput::Explicit(key),
        &[],
    )
    .unwrap();
    let id = RecordId {
        tenant: Some(tenant),
        key: &derived,
    };
    let (record, now) = store.get(id).await.unwrap();
    let record = record.expect("the killed holder's claim is still there");
    assert_eq!(record.state, RecordState::InProgress);
    assert_eq!(
        record.status(now),
        Status::InProgress,
        "within the lease it is in progress"
    );

    let executor = Executor::new(store.clone());
    let context = CallContext::new().tenant(tenant);
    let fast = Tool::new(
        "charge_card",
        Policy::new(KeyStrategy::Explicit)
            .with_lease(Duration::from_secs(2))
            .with_on_cache_hit(RetryBehavior::FailFast),
    )
    .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let body = |ran: Arc<AtomicUsize>| {
        move |_| async move {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(())
        }
    };
    let fail_fast_kind = || async {
        let result = executor
            .call(&fast, &context, KeyInput::Explicit(key), body(ran.clone()))
            .await;
        result.unwrap_err().idempotency().map(|e| e.kind())
    };
    assert_eq!(fail_fast_kind().await, Some(ErrorKind::FailFast));
    let started = Instant::now();
    let charge = tool("charge_card", Duration::from_secs(2));
    let late = executor
        .call(
            &charge,
            &context,
            KeyInput::Explicit(key),
            body(ran.clone()),
        )
        .await;
    let error = late.unwrap_err();
    assert_eq!(
        error.idempotency().map(|e| e.kind()),
        Some(ErrorKind::Indeterminate),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let (record, now) = store.get(id).await.unwrap();
    assert_eq!(record.unwrap().status(now), Status::Abandoned);
    assert_eq!(fail_fast_kind().await, Some(ErrorKind::Indeterminate));
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the body never ran again");
}

// ---------------------------------------------------------------------------------------------
// Many records, and contention.

/// Claims `tasks * per_task` fresh random keys for `tenant` from `tasks` concurrent tasks, with
/// this `(lease_ms, ttl_ms)`.
pub async fn claim_many(
    store: Arc<dyn Store>,
    scope: &'static str,
    tenant: &str,
    tasks: usize,
    per_task: usize,
    (lease_ms, ttl_ms): (u64, u64),
) {
    let mut running = Vec::new();
    for _ in 0..tasks {
        let (store, tenant) = (store.clone(), tenant.to_owned());
        running.push(tokio::spawn(async move {
            for _ in 0..per_task {
                let key = idemkit::testing::random_key();
                let id = RecordId {
                    tenant: Some(&tenant),
                    key: &key,
                };
                let request = claim_request(id, scope, Token::random(), lease_ms, ttl_ms);
                store.claim(&request).await.unwrap();
            }
        }));
    }
    for task in running {
        task.await.unwrap();
    }
}

/// 64 claimers started together on `key` for `tenant` (replacing a failure when
/// `retry_failure`): exactly one acquires, everyone else sees the winner's claim, and the stored
/// record carries the winner's token. Returns the winner and the tokens the others saw.
pub async fn race_64_claimers(
    store: &Arc<dyn Store>,
    scope: &'static str,
    tenant: &str,
    key: &idemkit::Key,
    retry_failure: bool,
    round: usize,
) -> (Token, Vec<Token>) {
    let start = Arc::new(tokio::sync::Barrier::new(64));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (store, start, tenant, key) = (store.clone(), start.clone(), tenant.to_owned(), *key);
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            let token = Token::random();
            let mut r = claim_request(id, scope, token, 60_000, 60_000);
            r.retry_failure = retry_failure;
            (token, store.claim(&r).await.unwrap().claim)
        }));
    }
    let mut winners = Vec::new();
    let mut holders = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            (token, Claim::Acquired { .. }) => winners.push(token),
            (_, Claim::InProgress(r)) => holders.push(r.token),
            (_, other) => panic!("round {round}: unexpected {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
    assert!(
        holders.iter().all(|h| *h == winners[0]),
        "round {round}: everyone sees the winner"
    );
    let id = RecordId {
        tenant: Some(tenant),
        key,
    };
    let (record, _) = store.get(id).await.unwrap();
    assert_eq!(record.unwrap().token, winners[0]);
    (winners[0], holders)
}

/// Awaits `call` and asserts it failed with the store-unavailable error within `within` (a
/// store outage must fail calls promptly and never read as permission to run).
#[allow(dead_code)]
pub async fn assert_unavailable_within<T: std::fmt::Debug, E: std::fmt::Debug>(
    call: impl std::future::Future<Output = Result<T, idemkit::CallError<E>>>,
    within: Duration,
) {
    let started = Instant::now();
    match call.await {
        Err(idemkit::CallError::Idempotency(e)) => {
            assert_eq!(e.kind(), ErrorKind::StoreUnavailable, "{e}")
        }
        other => panic!("expected store-unavailable, got {other:?}"),
    }
    let took = started.elapsed();
    assert!(took < within, "failing took {took:?}");
}

// ---------------------------------------------------------------------------------------------
// Tenants in NFC form, and the newest records first.

/// SPEC v1.1 rule 1 on a store: a record made under the NFC tenant `é` (U+00E9) is listed and
/// forgotten under its decomposed spelling `e` + U+0301 as well.
pub async fn check_tenants_are_taken_in_nfc_form(store: Arc<dyn Store>) {
    let suffix = &Token::random().hex()[..8];
    let composed = format!("caf\u{e9}-{suffix}");
    let decomposed = format!("cafe\u{301}-{suffix}");
    assert_ne!(composed, decomposed);
    let key = idemkit::testing::random_key();
    let id = RecordId {
        tenant: Some(&composed),
        key: &key,
    };
    let reply = store
        .claim(&claim_request(
            id,
            "nfc_test",
            Token::random(),
            60_000,
            60_000,
        ))
        .await
        .unwrap();
    assert!(matches!(reply.claim, Claim::Acquired { .. }));
    let filter = idemkit::store::ListFilter {
        tenant: Some(Some(decomposed.clone())),
        ..Default::default()
    };
    // Every page: a SCAN-based store (Redis) may answer a page without the record, and a
    // cursor, when the server holds many other keys.
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.list(&filter, cursor.as_deref()).await.unwrap();
        keys.extend(page.records.iter().map(|r| r.key.clone()));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(keys, [key.hex()], "list --tenant in decomposed form");
    let newest = store.newest(&filter).await.unwrap();
    assert_eq!(
        newest.records.len(),
        1,
        "newest --tenant in decomposed form"
    );
    assert_eq!(
        store.forget(Some(&decomposed)).await.unwrap(),
        1,
        "forget(\"e\\u{{301}}\") removes the record made under \"\\u{{e9}}\""
    );
    assert!(store.get(id).await.unwrap().0.is_none());
}

/// Claims five records for `tenant` a few milliseconds apart and answers their keys, newest
/// first.
pub async fn claim_five_newest(store: &Arc<dyn Store>, tenant: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(3)).await;
        let key = idemkit::testing::random_key();
        let id = RecordId {
            tenant: Some(tenant),
            key: &key,
        };
        let reply = store
            .claim(&claim_request(
                id,
                "newest_test",
                Token::random(),
                600_000,
                600_000,
            ))
            .await
            .unwrap();
        assert!(matches!(reply.claim, Claim::Acquired { .. }));
        keys.push(key.hex());
    }
    keys.reverse();
    keys
}

/// Checks that `store.newest` answers `newest` (keys, newest first) as the five newest records,
/// also for their tenant and with the `in-progress` status, and that `idemkit list --limit 5`
/// (when the CLI is built) prints them in that order. `cli_store` are the CLI's store options.
pub async fn check_newest_first(
    store: &Arc<dyn Store>,
    tenant: &str,
    newest: &[String],
    cli_store: &[&str],
) {
    use idemkit::store::ListFilter;
    let keys = |page: idemkit::store::Page| -> Vec<String> {
        page.records.into_iter().map(|r| r.key).collect()
    };
    let five = ListFilter {
        limit: 5,
        ..Default::default()
    };
    assert_eq!(keys(store.newest(&five).await.unwrap()), newest);
    let tenant_five = ListFilter {
        tenant: Some(Some(tenant.to_owned())),
        ..five.clone()
    };
    assert_eq!(keys(store.newest(&tenant_five).await.unwrap()), newest);
    let in_progress = ListFilter {
        status: Some(Status::InProgress),
        limit: 3,
        ..Default::default()
    };
    assert_eq!(keys(store.newest(&in_progress).await.unwrap()), newest[..3]);
    let Some(cli) = option_env!("CARGO_BIN_EXE_idemkit") else {
        skip("cli", "the CLI part needs --features cli");
        return;
    };
    let started = Instant::now();
    let output = Command::new(cli)
        .args(["list", "--limit", "5", "--json"])
        .args(cli_store)
        .output()
        .unwrap();
    eprintln!("idemkit list --limit 5 took {:?}", started.elapsed());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["key"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        printed, newest,
        "idemkit list --limit 5 shows the newest first"
    );
}

/// `error`'s text and that of every error in its `source()` chain, with their `Debug` forms:
/// everything an error report could print.
pub fn whole_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = format!("{error} {error:?}");
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(" <- {cause} {cause:?}"));
        source = cause.source();
    }
    text
}

/// A private `redis-server` on a port of its own, to pause (SIGSTOP) and resume (SIGCONT);
/// stopped when dropped.
pub struct PausedRedis {
    child: Child,
    pub port: u16,
}

impl PausedRedis {
    /// `None` (a loud skip) without the binary.
    pub fn start() -> Option<PausedRedis> {
        let port = free_port();
        let child = Self::spawn(port)?;
        let server = PausedRedis { child, port };
        wait_until("private redis-server answers", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Some(server)
    }

    fn spawn(port: u16) -> Option<Child> {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--maxmemory-policy", "noeviction"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        spawn_redis_server(&mut command)
    }

    /// Stops the server (its port closed once this returns).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let port = self.port;
        wait_until("private redis-server is gone", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        });
    }

    /// Starts the server again on its port (empty).
    pub fn restart(&mut self) {
        self.child = Self::spawn(self.port).expect("redis-server ran before");
        let port = self.port;
        wait_until("private redis-server answers again", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Sends `signal` (`-STOP`, `-CONT`) to the server.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {signal}");
    }
}

impl Drop for PausedRedis {
    fn drop(&mut self) {
        self.signal("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PostgreSQL server of its own (initdb in a temporary directory, run as the `postgres` OS
/// user through `runuser` when this runs as root), stopped when dropped.
pub struct PrivatePostgres {
    pub dir: std::path::PathBuf,
    pub port: u16,
    /// More server settings (`-c name=value ...`), given at every start.
    pub settings: String,
}

impl PrivatePostgres {
    pub fn command(program: &str) -> std::process::Command {
        let as_root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if as_root {
            let mut command = std::process::Command::new("runuser");
            command.args(["-u", "postgres", "--", program]);
            command
        } else {
            std::process::Command::new(program)
        }
    }

    pub fn run(program: &str, args: &[&str]) -> bool {
        let output = Self::command(program).args(args).output();
        match output {
            Ok(o) if o.status.success() => true,
            Ok(o) => {
                // Say why, so that a failure in a loaded CI run can be read from its log.
                eprintln!(
                    "{program} {args:?} failed ({}): {}{}",
                    o.status,
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
                false
            }
            Err(e) => {
                eprintln!("{program} could not run: {e}");
                false
            }
        }
    }

    /// `None` (and a loud skip) when initdb or pg_ctl cannot run here.
    pub fn start() -> Option<PrivatePostgres> {
        let server = PrivatePostgres::init()?;
        if !server.pg_ctl("start") {
            skip(
                "pg_ctl",
                "cannot start a private PostgreSQL (pg_ctl start failed)",
            );
            return None;
        }
        Some(server)
    }

    /// A data directory made by initdb, the server not started yet (`pg_ctl("start")`);
    /// `None` (and a loud skip) when initdb cannot run here.
    pub fn init() -> Option<PrivatePostgres> {
        let dir = std::env::temp_dir().join(format!(
            "idemkit-pg-{}",
            &idemkit::Token::random().hex()[..10]
        ));
        let port = free_port();
        let data = dir.to_string_lossy().into_owned();
        let made = Self::run("mkdir", &["-p", &data])
            && Self::run(
                "initdb",
                &[
                    "-D",
                    &data,
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ],
            );
        if !made {
            skip(
                "initdb",
                "cannot initdb a private PostgreSQL (needs initdb on PATH, and runuser as root)",
            );
            return None;
        }
        Some(PrivatePostgres {
            dir,
            port,
            settings: String::new(),
        })
    }

    pub fn pg_ctl(&self, action: &str) -> bool {
        let data = self.dir.to_string_lossy().into_owned();
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 {}",
            self.port, data, self.settings
        );
        let log = format!("{data}/server.log");
        Self::run(
            "pg_ctl",
            &[
                "-D", &data, "-o", &options, "-l", &log, "-m", "fast", "-w", action,
            ],
        )
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.pg_ctl("stop");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The key of `tool` for the explicit key `key` under `tenant`.
pub fn explicit_key(tool: &Tool, tenant: &str, key: &str) -> idemkit::Key {
    let scope = idemkit::KeyScope {
        scope: tool.name(),
        tenant: Some(tenant),
        run: None,
    };
    idemkit::derive_key(&scope, idemkit::KeyInput::Explicit(key), &[]).unwrap()
}

/// Polls the record of `key` under `tenant` in `store` until `check` holds, for up to `within`;
/// fails naming `what` and the record last seen.
pub async fn eventually(
    store: &Arc<dyn Store>,
    tenant: &str,
    key: &idemkit::Key,
    within: Duration,
    what: &str,
    check: impl Fn(Option<&idemkit::Record>) -> bool,
) {
    let id = RecordId {
        tenant: Some(tenant),
        key,
    };
    let started = Instant::now();
    loop {
        let (record, _) = store.get(id).await.unwrap();
        if check(record.as_ref()) {
            return;
        }
        assert!(
            started.elapsed() < within,
            "{what}: not so after {within:?}; the record is {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A plain client of the PostgreSQL server at `url` (its connection runs on the current runtime).
#[cfg(feature = "postgres")]
pub async fn pg_client(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// A PostgreSQL table of a test's own (`<prefix>_<12 hex digits>`), made by the library's
/// `create_table_if_missing()` and dropped when this is dropped.
#[cfg(feature = "postgres")]
pub struct PgTable {
    pub url: String,
    pub name: String,
}

#[cfg(feature = "postgres")]
impl PgTable {
    /// A new table on the server at `url`, and a store over it.
    pub async fn new(
        url: &str,
        prefix: &str,
    ) -> (PgTable, idemkit::store::postgres::PostgresStore) {
        let name = format!("{prefix}_{}", &Token::random().hex()[..12]);
        let table = PgTable {
            url: url.to_owned(),
            name,
        };
        let store = idemkit::store::postgres::PostgresStore::connect(url, &table.options())
            .await
            .unwrap();
        store.create_table_if_missing().await.unwrap();
        (table, store)
    }

    /// Store options naming this table.
    pub fn options(&self) -> StoreOptions {
        StoreOptions {
            table: Some(self.name.clone()),
            ..StoreOptions::default()
        }
    }

    /// A session holding the table locked against writes until it commits or goes away.
    pub async fn lock(&self) -> tokio_postgres::Client {
        let locker = pg_client(&self.url).await.unwrap();
        locker
            .batch_execute(&format!(
                "BEGIN; LOCK TABLE {} IN EXCLUSIVE MODE",
                self.name
            ))
            .await
            .unwrap();
        locker
    }
}

#[cfg(feature = "postgres")]
impl Drop for PgTable {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Dropped from a plain thread: a tokio runtime may be shutting down around us.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                if let Ok(client) = pg_client(&url).await {
                    let _ = client
                        .batch_execute(&format!(
                            "DROP TABLE IF EXISTS {name}; DROP FUNCTION IF EXISTS {name}_claim"
                        ))
                        .await;
                }
            });
        })
        .join();
    }
}

/// One scenario of a test file, run on every store by [`on_every_store!`].
pub type Scenario =
    fn(Arc<dyn Store>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs each scenario (an `async fn(Arc<dyn Store>)` of the test file) on the memory store, on
/// Redis under a key prefix of its own and on PostgreSQL in a table of its own (each when its
/// URL is set): one test per scenario and store, in modules `memory`, `redis` and `postgres`.
/// The test file declares `#[macro_use] mod common;`.
#[allow(unused_macros)]
macro_rules! on_every_store {
    ($($scenario:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    let run: super::common::Scenario = |s| Box::pin(super::$scenario(s));
                    run(std::sync::Arc::new(idemkit::MemoryStore::new())).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    let Some(url) = super::common::env_url("IDEMKIT_REDIS_URL") else {
                        return;
                    };
                    let prefix = super::common::unique_prefix(stringify!($scenario));
                    let store = idemkit::store::open(&url, &super::common::prefix_options(&prefix))
                        .await
                        .unwrap();
                    let run: super::common::Scenario = |s| Box::pin(super::$scenario(s));
                    run(store).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    let Some(url) = super::common::env_url("IDEMKIT_POSTGRES_URL") else {
                        return;
                    };
                    // Dropped at the end of the test.
                    let (_table, store) =
                        super::common::PgTable::new(&url, "idemkit_scenario").await;
                    let run: super::common::Scenario = |s| Box::pin(super::$scenario(s));
                    run(std::sync::Arc::new(store)).await;
                }
            )*
        }
    };
}
