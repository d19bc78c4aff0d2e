//! idemkit against a naive peer on the same servers, in one process: the p50 latency of one
//! caller, the throughput of eight, and per call the client's CPU and context switches and the
//! server's CPU (Redis) or WAL (PostgreSQL). Driven by `scripts/bench-peers.sh`, which adds the
//! servers' own floor (`redis-benchmark`, `pgbench`) and prints the ratios.
//!
//! `cargo bench --bench peers --features redis,postgres -- [redis|postgres|memory]...
//! [--seconds N]` with `PEERS_REDIS_URL`, `PEERS_POSTGRES_URL` (and, for server CPU,
//! `PEERS_REDIS_PID`, `PEERS_POSTGRES_PID`: the redis-server and postmaster process ids).
//!
//! **The naive peer is NOT atomic** and exists only as a yardstick: it is what an application
//! writes by hand — read the remembered result by a SHA-256 of the raw input; on a miss run the
//! body and store the result (Redis `GET` then `SET ... EX`; PostgreSQL `SELECT` then
//! `INSERT ... ON CONFLICT DO UPDATE`; a mutex-guarded map). Two concurrent first calls both run
//! the body, a crash between the body and the write forgets it, and nothing tells a caller that
//! the call is in progress. idemkit claims atomically, on the store's clock, with owner tokens.
//!
//! Prints one `RESULT path=... impl=... key=value ...` line per measurement.

use std::collections::HashMap;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idemkit::store::postgres::PostgresStore;
use idemkit::store::redis::RedisStore;
use idemkit::store::StoreOptions;
use idemkit::{
    BodyReport, CallContext, Executor, KeyInput, MemoryStore, Policy, RawInput, Recording, Step,
    Store, Token, Tool,
};
use sha2::{Digest, Sha256};

/// A realistic small input: idemkit derives its key from it (HASH_INPUT), the peer hashes it raw.
fn input(n: u64, run: &str) -> String {
    format!(r#"{{"to":"ana@example.com","subject":"Your booking","run":"{run}","order":{n}}}"#)
}

/// The body every call runs on a miss.
const RESULT: &str = "msg-1";

type Call<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One way of making a deduplicated call.
trait Caller: Send + Sync {
    fn call<'a>(&'a self, input: &'a str) -> Call<'a>;
}

struct Idemkit {
    executor: Executor,
    tool: Tool,
    context: CallContext,
}

impl Caller for Idemkit {
    fn call<'a>(&'a self, input: &'a str) -> Call<'a> {
        Box::pin(async move {
            let result: Result<String, _> = self
                .executor
                .call(
                    &self.tool,
                    &self.context,
                    KeyInput::Json(input),
                    |_| async { Ok::<_, std::io::Error>(RESULT.to_owned()) },
                )
                .await;
            assert_eq!(result.expect("call succeeds"), RESULT);
        })
    }
}

fn raw_key(input: &str) -> String {
    let digest = Sha256::digest(input.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// NOT ATOMIC (see the module documentation): Redis `GET`, then on a miss `SET key v EX ttl`.
struct NaiveRedis(redis::aio::MultiplexedConnection);

impl Caller for NaiveRedis {
    fn call<'a>(&'a self, input: &'a str) -> Call<'a> {
        Box::pin(async move {
            let key = format!("peer:{}", raw_key(input));
            let mut c = self.0.clone();
            let hit: Option<String> = redis::cmd("GET")
                .arg(&key)
                .query_async(&mut c)
                .await
                .unwrap();
            let result = match hit {
                Some(hit) => hit,
                None => {
                    let result = RESULT.to_owned();
                    let _: () = redis::cmd("SET")
                        .arg(&key)
                        .arg(&result)
                        .arg("EX")
                        .arg(3600)
                        .query_async(&mut c)
                        .await
                        .unwrap();
                    result
                }
            };
            assert_eq!(result, RESULT);
        })
    }
}

/// NOT ATOMIC (see the module documentation): PostgreSQL `SELECT` by key, then on a miss one
/// `INSERT ... ON CONFLICT DO UPDATE` (one durable commit).
struct NaivePostgres {
    client: tokio_postgres::Client,
    select: tokio_postgres::Statement,
    upsert: tokio_postgres::Statement,
}

const PEER_TABLE: &str = "CREATE TABLE IF NOT EXISTS peer_records (
    tenant text NOT NULL, key text NOT NULL, outcome json NOT NULL, expires_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, key));
CREATE INDEX IF NOT EXISTS peer_records_expires_at_idx ON peer_records (expires_at);
TRUNCATE peer_records";

impl NaivePostgres {
    async fn connect(url: &str) -> NaivePostgres {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client.batch_execute(PEER_TABLE).await.unwrap();
        let select = client
            .prepare("SELECT outcome::text FROM peer_records WHERE tenant = $1 AND key = $2 AND expires_at > now()")
            .await
            .unwrap();
        let upsert = client
            .prepare(
                "INSERT INTO peer_records (tenant, key, outcome, expires_at)
                 VALUES ($1, $2, ($3::text)::json, now() + interval '1 hour')
                 ON CONFLICT (tenant, key) DO UPDATE SET outcome = excluded.outcome, expires_at = excluded.expires_at",
            )
            .await
            .unwrap();
        NaivePostgres {
            client,
            select,
            upsert,
        }
    }
}

impl Caller for NaivePostgres {
    fn call<'a>(&'a self, input: &'a str) -> Call<'a> {
        Box::pin(async move {
            let key = raw_key(input);
            let row = self
                .client
                .query_opt(&self.select, &[&"bench", &key])
                .await
                .unwrap();
            let result = match row {
                Some(row) => serde_json::from_str::<String>(row.get::<_, &str>(0)).unwrap(),
                None => {
                    let result = RESULT.to_owned();
                    let json = serde_json::to_string(&result).unwrap();
                    self.client
                        .execute(&self.upsert, &[&"bench", &key, &json])
                        .await
                        .unwrap();
                    result
                }
            };
            assert_eq!(result, RESULT);
        })
    }
}

/// CPU ticks (user + system) of a process, all its threads.
fn ticks(pid: &str) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let fields: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the command name.
    fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0)
}

/// CPU ticks of a server: the process and its direct children (PostgreSQL backends).
fn server_ticks(pid: Option<&str>) -> Option<u64> {
    let pid = pid?;
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    Some(ticks(pid) + children.split_whitespace().map(ticks).sum::<u64>())
}

/// Context switches (voluntary and not) of every live thread of this process: a handoff to a
/// runtime worker shows up on the worker too.
fn context_switches() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        total += status
            .lines()
            .filter(|l| l.contains("ctxt_switches:"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    total
}

const TICK_US: f64 = 10_000.0; // USER_HZ = 100 on Linux

/// Server-side counters read before and after a measured loop.
#[async_trait::async_trait]
trait ServerCounters: Send + Sync {
    /// `name=value` pairs, accumulated since the last call.
    async fn snapshot(&self) -> Vec<(&'static str, f64)>;
}

struct RedisCounters(redis::aio::MultiplexedConnection);

#[async_trait::async_trait]
impl ServerCounters for RedisCounters {
    /// `cmd_usec`: the servers' own time in the top-level commands a caller sends (EVALSHA,
    /// GET, SET; Redis 7 counts a script's inner `GET`/`SET` as well, so a script's inner time is
    /// counted twice); `cmd_calls`: how many of those commands (inner ones included); `scripts`:
    /// how many `EVALSHA`.
    async fn snapshot(&self) -> Vec<(&'static str, f64)> {
        let mut c = self.0.clone();
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut c)
            .await
            .unwrap();
        let (mut usec, mut calls, mut scripts) = (0.0, 0.0, 0.0);
        for line in info.lines() {
            for name in ["cmdstat_evalsha:", "cmdstat_get:", "cmdstat_set:"] {
                if let Some(rest) = line.strip_prefix(name) {
                    let field = |wanted: &str| -> f64 {
                        rest.split(',')
                            .find_map(|f| f.strip_prefix(wanted))
                            .unwrap()
                            .parse()
                            .unwrap()
                    };
                    usec += field("usec=");
                    calls += field("calls=");
                    if name == "cmdstat_evalsha:" {
                        scripts += field("calls=");
                    }
                }
            }
        }
        vec![
            ("cmd_usec", usec),
            ("cmd_calls", calls),
            ("scripts", scripts),
        ]
    }
}

struct PostgresCounters(tokio_postgres::Client);

#[async_trait::async_trait]
impl ServerCounters for PostgresCounters {
    /// WAL written by the whole (private) server: records and bytes.
    async fn snapshot(&self) -> Vec<(&'static str, f64)> {
        let row = self
            .0
            .query_one(
                "SELECT wal_records::float8, wal_bytes::float8 FROM pg_stat_wal",
                &[],
            )
            .await
            .unwrap();
        vec![("wal_records", row.get(0)), ("wal_bytes", row.get(1))]
    }
}

struct Plan {
    seconds: f64,
    server_pid: Option<String>,
}

/// One path (a repeat or an executed call) for one implementation: p50 of one caller with the
/// counters per call, then the calls per second of eight concurrent callers.
async fn measure(
    path: &str,
    name: &str,
    caller: Arc<dyn Caller>,
    repeats: bool,
    counters: &dyn ServerCounters,
    plan: &Plan,
) {
    let run = Token::random().hex();
    if repeats {
        caller.call(&input(0, &run)).await;
    }
    // Warm up (connections, scripts, prepared statements, caches).
    for n in 0..200 {
        let text = if repeats {
            input(0, &run)
        } else {
            input(1 << 50 | n, &run)
        };
        caller.call(&text).await;
    }
    let before_server = counters.snapshot().await;
    let before_ticks = server_ticks(plan.server_pid.as_deref());
    let before_self = ticks("self");
    let before_switches = context_switches();
    let mut times = Vec::new();
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed().as_secs_f64() < plan.seconds {
        let text = if repeats {
            input(0, &run)
        } else {
            input(n, &run)
        };
        let t = Instant::now();
        caller.call(&text).await;
        times.push(t.elapsed());
        n += 1;
    }
    let calls = n as f64;
    let switches = (context_switches() - before_switches) as f64 / calls;
    let client_us = (ticks("self") - before_self) as f64 * TICK_US / calls;
    let server_us = server_ticks(plan.server_pid.as_deref())
        .zip(before_ticks)
        .map(|(a, b)| (a - b) as f64 * TICK_US / calls);
    let after_server = counters.snapshot().await;
    times.sort();
    let p50 = times[times.len() / 2].as_secs_f64() * 1e6;
    let mut line = format!(
        "RESULT path={path} impl={name} calls={n} p50_us={p50:.1} client_cpu_us={client_us:.1} ctx_switches={switches:.2}"
    );
    if let Some(server_us) = server_us {
        line += &format!(" server_cpu_us={server_us:.1}");
    }
    for ((key, a), (_, b)) in after_server.iter().zip(&before_server) {
        line += &format!(" {key}={:.1}", (a - b) / calls);
    }
    // Eight concurrent callers.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for task in 0..8u64 {
        let (caller, stop, done, run) = (caller.clone(), stop.clone(), done.clone(), run.clone());
        tasks.push(tokio::spawn(async move {
            let mut n = (task + 1) << 40;
            while !stop.load(Ordering::Relaxed) {
                let text = if repeats {
                    input(0, &run)
                } else {
                    input(n, &run)
                };
                caller.call(&text).await;
                n += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(plan.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    println!("{line} ops8={rate:.0}");
}

/// The C face's call, as `capi/src/call.rs` makes it, minus the C strings: from a plain thread
/// (not a runtime's), `idemkit_begin` is `prepare_raw` and a blocking `advance`;
/// `idemkit_complete` a blocking `report`; `idemkit_call_free` drops the attempt inside the
/// library's runtime.
#[derive(Clone)]
struct Face {
    executor: Executor,
    tool: Tool,
    context: CallContext,
}

impl Face {
    fn call(&self, input: &str) {
        let raw = RawInput {
            json: Some(input),
            supplied_key: None,
        };
        let mut attempt = self
            .executor
            .prepare_raw(&self.tool, &self.context, raw)
            .expect("prepare");
        let step = face_block_on(self.executor.advance(&mut attempt, None));
        match step.unwrap_or_else(|e| panic!("the C face's claim failed: {e}")) {
            Step::Replay(json) => assert_eq!(json, "\"msg-1\""),
            Step::Run => {
                let reported = face_block_on(
                    self.executor
                        .report(&mut attempt, BodyReport::Succeeded("\"msg-1\"")),
                );
                match reported.recording {
                    Recording::Recorded => {}
                    // Not settled within the inline 100 ms: it goes on in the background.
                    Recording::Failed(detail) if detail.contains("background") => {
                        LATE_SETTLED.fetch_add(1, Ordering::Relaxed);
                    }
                    other => panic!("the C face's complete answered {other:?}"),
                }
            }
            _ => panic!("unexpected step"),
        }
        let _runtime = idemkit::runtime::runtime().enter();
        drop(attempt);
    }
}

/// Completes of the C face not settled within the inline 100 ms (they go on in the background;
/// reported, since on a loaded machine they happen).
static LATE_SETTLED: AtomicU64 = AtomicU64::new(0);

/// How the C and Java faces run a step of a call from their caller's thread.
fn face_block_on<F: Future>(future: F) -> F::Output {
    idemkit::runtime::block_on_caller(future)
}

/// One path through the C face: p50 of one calling thread with the counters per call, then
/// the calls per second of eight calling threads.
async fn measure_face(
    path: &str,
    face: &Face,
    repeats: bool,
    counters: &dyn ServerCounters,
    plan: &Plan,
) {
    let run = Token::random().hex();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let seconds = plan.seconds;
    let caller = {
        let (face, run) = (face.clone(), run.clone());
        std::thread::spawn(move || {
            for n in 0..200u64 {
                let text = if repeats {
                    input(0, &run)
                } else {
                    input(1 << 50 | n, &run)
                };
                face.call(&text);
            }
            ready_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            let before_self = ticks("self");
            let before_switches = context_switches();
            let mut times = Vec::new();
            let started = Instant::now();
            let mut n = 0u64;
            while started.elapsed().as_secs_f64() < seconds {
                let text = if repeats {
                    input(0, &run)
                } else {
                    input(n, &run)
                };
                let t = Instant::now();
                face.call(&text);
                times.push(t.elapsed());
                n += 1;
            }
            let switches = context_switches() - before_switches;
            (n, times, ticks("self") - before_self, switches)
        })
    };
    ready_rx.recv().unwrap();
    let before_server = counters.snapshot().await;
    let before_ticks = server_ticks(plan.server_pid.as_deref());
    go_tx.send(()).unwrap();
    let (n, mut times, client_ticks, switches) = caller.join().unwrap();
    let calls = n as f64;
    let server_us = server_ticks(plan.server_pid.as_deref())
        .zip(before_ticks)
        .map(|(a, b)| (a - b) as f64 * TICK_US / calls);
    let after_server = counters.snapshot().await;
    times.sort();
    let p50 = times[times.len() / 2].as_secs_f64() * 1e6;
    let mut line = format!(
        "RESULT path={path} impl=face calls={n} p50_us={p50:.1} client_cpu_us={:.1} ctx_switches={:.2}",
        client_ticks as f64 * TICK_US / calls,
        switches as f64 / calls
    );
    if let Some(server_us) = server_us {
        line += &format!(" server_cpu_us={server_us:.1}");
    }
    for ((key, a), (_, b)) in after_server.iter().zip(&before_server) {
        line += &format!(" {key}={:.1}", (a - b) / calls);
    }
    // Eight calling threads.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..8u64)
        .map(|thread| {
            let (face, stop, done, run) = (face.clone(), stop.clone(), done.clone(), run.clone());
            std::thread::spawn(move || {
                let mut n = (thread + 1) << 40;
                while !stop.load(Ordering::Relaxed) {
                    let text = if repeats {
                        input(0, &run)
                    } else {
                        input(n, &run)
                    };
                    face.call(&text);
                    n += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(plan.seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let late = LATE_SETTLED.swap(0, Ordering::Relaxed);
    println!("{line} ops8={rate:.0} late_settled={late}");
}

/// Both paths, peer and idemkit alternating.
async fn store_paths(
    store: &str,
    peer: Arc<dyn Caller>,
    idemkit: Arc<dyn Caller>,
    face: &Face,
    counters: &dyn ServerCounters,
    plan: &Plan,
) {
    for (path, repeats) in [("repeat", true), ("executed", false)] {
        let path = format!("{store}_{path}");
        measure(&path, "peer", peer.clone(), repeats, counters, plan).await;
        measure(&path, "idemkit", idemkit.clone(), repeats, counters, plan).await;
        measure_face(&path, face, repeats, counters, plan).await;
    }
}

/// Bytes per Redis record (`MEMORY USAGE ... SAMPLES 0`), a 64-hex key and a 20-byte result
/// (SPEC's size target): the record idemkit writes (v2: one string), the same record in the v1
/// layout (the hash the v1 scripts wrote: its 13 fields, then `PEXPIREAT`), and the peer's
/// `SET key result EX`. Prints `RESULT path=redis_record impl=... bytes=...`.
async fn redis_record_bytes(
    store: &RedisStore,
    executor: &Executor,
    tool: &Tool,
    mut conn: redis::aio::MultiplexedConnection,
) {
    let text = input(7, &Token::random().hex());
    let result = "r".repeat(18); // as JSON: 20 bytes
    let answer: Result<String, _> = executor
        .call(
            tool,
            &CallContext::new(),
            KeyInput::Json(&text),
            |_| async { Ok::<_, std::io::Error>(result.clone()) },
        )
        .await;
    assert_eq!(answer.expect("call succeeds"), result);
    let filter = idemkit::store::ListFilter {
        tenant: Some(None),
        ..Default::default()
    };
    let page = store.list(&filter, None).await.unwrap();
    let [record] = page.records.as_slice() else {
        panic!("one record without a tenant, found {}", page.records.len())
    };
    let name = format!("idemkit-peers:_:{}", record.key);
    let reader = conn.clone();
    let usage = |name: String| {
        let mut c = reader.clone();
        async move {
            let bytes: i64 = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&name)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut c)
                .await
                .unwrap();
            bytes
        }
    };
    let v2 = usage(name.clone()).await;
    let outcome = record.outcome.as_ref().expect("completed");
    let v1_name = format!("{name}:v1");
    let mut v1 = redis::cmd("HSET");
    v1.arg(&v1_name)
        .arg("v")
        .arg(1)
        .arg("key")
        .arg(&record.key)
        .arg("scope")
        .arg(&record.scope)
        .arg("state")
        .arg("in_progress")
        .arg("token")
        .arg(record.token.hex())
        .arg("claimed_at")
        .arg(record.claimed_at)
        .arg("lease_end")
        .arg(record.lease_end)
        .arg("ttl_ms")
        .arg(record.ttl_ms)
        .arg("expires_at")
        .arg(record.expires_at);
    if let Some(fingerprint) = &record.fingerprint {
        v1.arg("fingerprint").arg(fingerprint);
    }
    let _: i64 = v1.query_async(&mut conn).await.unwrap();
    let _: i64 = redis::cmd("HSET")
        .arg(&v1_name)
        .arg("state")
        .arg("completed")
        .arg("outcome")
        .arg(serde_json::to_string(outcome).unwrap())
        .arg("outcome_kind")
        .arg("success")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: i64 = redis::cmd("PEXPIREAT")
        .arg(&v1_name)
        .arg(record.expires_at)
        .query_async(&mut conn)
        .await
        .unwrap();
    let v1 = usage(v1_name.clone()).await;
    let peer_name = format!("peer:{}", raw_key(&text));
    let _: () = redis::cmd("SET")
        .arg(&peer_name)
        .arg(format!("\"{result}\""))
        .arg("EX")
        .arg(3600)
        .query_async(&mut conn)
        .await
        .unwrap();
    let peer = usage(peer_name.clone()).await;
    let _: i64 = redis::cmd("DEL")
        .arg(&name)
        .arg(&v1_name)
        .arg(&peer_name)
        .query_async(&mut conn)
        .await
        .unwrap();
    println!(
        "RESULT path=redis_record impl=idemkit bytes={v2} key_bytes={}",
        name.len()
    );
    println!("RESULT path=redis_record impl=idemkit_v1_layout bytes={v1}");
    println!(
        "RESULT path=redis_record impl=peer bytes={peer} key_bytes={}",
        peer_name.len()
    );
}

/// The naive in-memory baseline: SHA-256 of the raw input text and a mutex-guarded map.
struct NaiveMap(Mutex<HashMap<[u8; 32], String>>);

impl NaiveMap {
    fn call(&self, input: &str) -> String {
        let key: [u8; 32] = Sha256::digest(input.as_bytes()).into();
        if let Some(hit) = self.0.lock().unwrap().get(&key) {
            return hit.clone();
        }
        let result = RESULT.to_owned();
        self.0.lock().unwrap().insert(key, result.clone());
        result
    }
}

/// Nanoseconds per call of `f`: the median of 7 batches.
fn per_call(calls: u32, mut f: impl FnMut()) -> f64 {
    let mut batches: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            t.elapsed().as_nanos() as f64 / calls as f64
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    batches[3]
}

/// A memory hit from Rust: the Rust face (`block_on` of `Executor::call` on a current-thread
/// runtime) against the naive map.
fn memory(plan: &Plan) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let text = input(0, "memory");
    let idemkit = Idemkit {
        executor: Executor::new(Arc::new(MemoryStore::new())),
        tool: Tool::new("send_email", Policy::default()).unwrap(),
        context: CallContext::new().tenant("bench"),
    };
    let naive = NaiveMap(Mutex::new(HashMap::new()));
    let calls = ((plan.seconds * 20_000.0) as u32).max(10_000);
    rt.block_on(idemkit.call(&text));
    naive.call(&text);
    let peer_ns = per_call(calls, || {
        black_box(naive.call(black_box(&text)));
    });
    let idemkit_ns = per_call(calls, || rt.block_on(idemkit.call(black_box(&text))));
    println!("RESULT path=memory_repeat impl=peer ns={peer_ns:.0}");
    println!("RESULT path=memory_repeat impl=idemkit ns={idemkit_ns:.0}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let option = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let seconds: f64 = option("--seconds")
        .map(|s| s.parse().expect("--seconds takes a number"))
        .unwrap_or(3.0);
    let wanted: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| matches!(*a, "redis" | "postgres" | "memory"))
        .collect();
    let wants = |name: &str| wanted.is_empty() || wanted.contains(&name);
    if wants("memory") {
        memory(&Plan {
            seconds,
            server_pid: None,
        });
    }
    // Two worker threads: the machine's cores. One caller is one task; eight are eight tasks.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tool = Tool::new("send_email", Policy::default()).unwrap();
        let context = CallContext::new().tenant("bench");
        if wants("redis") {
            let url = std::env::var("PEERS_REDIS_URL").expect("PEERS_REDIS_URL");
            let options = StoreOptions {
                key_prefix: Some("idemkit-peers:".into()),
                ..StoreOptions::default()
            };
            let store = RedisStore::connect(&url, &options).await.unwrap();
            store.forget(Some("bench")).await.unwrap();
            let records = RedisStore::connect(&url, &options).await.unwrap();
            let store: Arc<dyn Store> = Arc::new(store);
            let client = redis::Client::open(url.as_str()).unwrap();
            let peer = NaiveRedis(client.get_multiplexed_async_connection().await.unwrap());
            let counters = RedisCounters(client.get_multiplexed_async_connection().await.unwrap());
            let idemkit = Idemkit {
                executor: Executor::new(store.clone()),
                tool: tool.clone(),
                context: context.clone(),
            };
            let plan = Plan {
                seconds,
                server_pid: std::env::var("PEERS_REDIS_PID").ok(),
            };
            let face = Face {
                executor: idemkit.executor.clone(),
                tool: tool.clone(),
                context: context.clone(),
            };
            let executor = idemkit.executor.clone();
            store_paths(
                "redis",
                Arc::new(peer),
                Arc::new(idemkit),
                &face,
                &counters,
                &plan,
            )
            .await;
            store.forget(Some("bench")).await.unwrap();
            redis_record_bytes(
                &records,
                &executor,
                &tool,
                client.get_multiplexed_async_connection().await.unwrap(),
            )
            .await;
        }
        if wants("postgres") {
            let url = std::env::var("PEERS_POSTGRES_URL").expect("PEERS_POSTGRES_URL");
            let options = StoreOptions {
                table: Some("idemkit_peers".into()),
                ..StoreOptions::default()
            };
            let store = PostgresStore::connect(&url, &options).await.unwrap();
            store.create_table_if_missing().await.unwrap();
            store.forget(Some("bench")).await.unwrap();
            let store: Arc<dyn Store> = Arc::new(store);
            let peer = NaivePostgres::connect(&url).await;
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let face = Face {
                executor: Executor::new(store.clone()),
                tool: tool.clone(),
                context: context.clone(),
            };
            let idemkit = Idemkit {
                executor: Executor::new(store.clone()),
                tool,
                context,
            };
            let plan = Plan {
                seconds,
                server_pid: std::env::var("PEERS_POSTGRES_PID").ok(),
            };
            store_paths(
                "postgres",
                Arc::new(peer),
                Arc::new(idemkit),
                &face,
                &PostgresCounters(client),
                &plan,
            )
            .await;
            store.forget(Some("bench")).await.unwrap();
        }
    });
}
