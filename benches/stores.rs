//! Store benchmarks against the local Redis and PostgreSQL servers of `scripts/services.sh`:
//! round trips per call (read from the servers' own statistics) and calls per second through
//! `Executor::call`, from 1 and 8 concurrent callers. Driven by `scripts/bench-stores.sh`,
//! which adds the raw floor (redis-benchmark, pgbench) and the ratios.
//!
//! `cargo bench --bench stores --features redis,postgres -- [redis|postgres]... [--seconds N]
//! [--measure trips|rates] [--kind executed|repeat] [--callers N]`
//!
//! Prints one `RESULT key=value ...` line per measurement.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idemkit::store::postgres::PostgresStore;
use idemkit::store::redis::RedisStore;
use idemkit::store::StoreOptions;
use idemkit::{CallContext, Executor, KeyInput, Policy, Store, Token, Tool};

/// A realistic small input: the key is derived from it (HASH_INPUT).
fn input(n: u64, run: &str) -> String {
    format!(r#"{{"to":"ana@example.com","subject":"Your booking","run":"{run}","order":{n}}}"#)
}

/// How many calls the round-trip counts average over.
const COUNTED_CALLS: u64 = 500;

struct Bench {
    name: &'static str,
    executor: Executor,
    tool: Tool,
}

impl Bench {
    async fn call(&self, context: &CallContext, input: &str) {
        let result: Result<String, _> = self
            .executor
            .call(&self.tool, context, KeyInput::Json(input), |_| async {
                Ok::<_, std::io::Error>("msg-1".to_owned())
            })
            .await;
        result.expect("call succeeds");
    }

    /// Calls per second from `callers` concurrent tasks for `seconds`: fresh keys (every call
    /// runs its body: claim + complete) or one fixed key (every call is a repeat: one claim).
    async fn throughput(self: &Arc<Self>, callers: usize, repeats: bool, seconds: f64) -> f64 {
        let run = Token::random().hex();
        let context = CallContext::new().tenant("bench");
        if repeats {
            self.call(&context, &input(0, &run)).await;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for caller in 0..callers {
            let (bench, stop, done, context, run) = (
                self.clone(),
                stop.clone(),
                done.clone(),
                context.clone(),
                run.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut n = (caller as u64 + 1) << 40;
                while !stop.load(Ordering::Relaxed) {
                    let text = if repeats {
                        input(0, &run)
                    } else {
                        input(n, &run)
                    };
                    bench.call(&context, &text).await;
                    n += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.unwrap();
        }
        done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
    }
}

/// Statement or command counts, read from the server.
#[async_trait::async_trait]
trait Counter {
    async fn reset(&mut self);
    async fn count(&mut self) -> u64;
}

/// Counts the requests Redis receives, through `MONITOR`: a client's request shows as
/// `[db address]`, a command run inside a script as `[db lua]` (`INFO commandstats` cannot tell
/// them apart: it counts a script's `TIME` and `HSET` as commands too).
struct RedisCounter {
    probe: redis::aio::MultiplexedConnection,
    tally: Arc<std::sync::Mutex<Tally>>,
    marker: u64,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for RedisCounter {
    /// Closes the monitor: it would slow the server down for the throughput runs.
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[derive(Default)]
struct Tally {
    requests: u64,
    in_scripts: u64,
    markers: Vec<String>,
}

impl RedisCounter {
    async fn start(url: &str) -> RedisCounter {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let client = redis::Client::open(url).unwrap();
        let (host, port) = match &client.get_connection_info().addr {
            redis::ConnectionAddr::Tcp(host, port) => (host.clone(), *port),
            other => panic!("the benchmark counts requests over TCP only, not {other:?}"),
        };
        let mut stream = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .unwrap();
        stream.write_all(b"MONITOR\r\n").await.unwrap();
        let tally = Arc::new(std::sync::Mutex::new(Tally::default()));
        let sink = tally.clone();
        let reader = tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut t = sink.lock().unwrap();
                if line.contains(" lua] ") {
                    t.in_scripts += 1;
                } else if let Some(at) = line.find("\"ECHO\" \"") {
                    let marker = line[at + 8..].trim_end_matches('"').to_owned();
                    t.markers.push(marker);
                } else if line.starts_with('+') && line.contains(" [") {
                    t.requests += 1;
                }
            }
        });
        let probe = client.get_multiplexed_async_connection().await.unwrap();
        RedisCounter {
            probe,
            tally,
            marker: 0,
            reader,
        }
    }

    /// Waits until the monitor has seen every request sent before now; answers the tally.
    async fn settle(&mut self) -> (u64, u64) {
        self.marker += 1;
        let marker = format!("idemkit-bench-marker-{}", self.marker);
        let _: String = redis::cmd("ECHO")
            .arg(&marker)
            .query_async(&mut self.probe)
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            {
                let t = self.tally.lock().unwrap();
                if t.markers.contains(&marker) {
                    return (t.requests, t.in_scripts);
                }
            }
            assert!(Instant::now() < deadline, "MONITOR never showed {marker}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

#[async_trait::async_trait]
impl Counter for RedisCounter {
    async fn reset(&mut self) {
        self.settle().await;
        let mut t = self.tally.lock().unwrap();
        t.requests = 0;
        t.in_scripts = 0;
    }

    async fn count(&mut self) -> u64 {
        let (requests, in_scripts) = self.settle().await;
        println!(
            "INFO redis: {requests} requests and {in_scripts} commands inside scripts for {COUNTED_CALLS} calls"
        );
        requests
    }
}

struct PostgresCounter(tokio_postgres::Client);

#[async_trait::async_trait]
impl Counter for PostgresCounter {
    async fn reset(&mut self) {
        self.0
            .batch_execute("SELECT pg_stat_statements_reset()")
            .await
            .expect("pg_stat_statements is available (scripts/services.sh enables it)");
    }

    /// Every statement executed in this database (from `pg_stat_statements`), but this
    /// counter's own.
    async fn count(&mut self) -> u64 {
        let row = self
            .0
            .query_one(
                "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s
                 JOIN pg_database d ON d.oid = s.dbid
                 WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, i64>(0) as u64
    }
}

async fn round_trips(bench: &Bench, counter: &mut dyn Counter) {
    let context = CallContext::new().tenant("bench");
    let run = Token::random().hex();
    // Warm up: connections made, scripts loaded, statements prepared.
    for n in 0..20 {
        bench.call(&context, &input(n, &run)).await;
    }
    counter.reset().await;
    for n in 1000..1000 + COUNTED_CALLS {
        bench.call(&context, &input(n, &run)).await;
    }
    let executed = counter.count().await as f64 / COUNTED_CALLS as f64;
    counter.reset().await;
    for _ in 0..COUNTED_CALLS {
        bench.call(&context, &input(1000, &run)).await;
    }
    let repeat = counter.count().await as f64 / COUNTED_CALLS as f64;
    println!(
        "RESULT store={} measure=round_trips executed={executed:.2} repeat={repeat:.2}",
        bench.name
    );
}

/// What to measure (all by default).
struct Plan {
    seconds: f64,
    trips: bool,
    rates: bool,
    kinds: Vec<bool>,
    callers: Vec<usize>,
}

async fn measure(bench: Arc<Bench>, mut counter: Box<dyn Counter>, plan: &Plan) {
    if plan.trips {
        round_trips(&bench, counter.as_mut()).await;
    }
    drop(counter);
    if !plan.rates {
        return;
    }
    for &callers in &plan.callers {
        for &repeats in &plan.kinds {
            let rate = bench.throughput(callers, repeats, plan.seconds).await;
            println!(
                "RESULT store={} measure=calls_per_s kind={} callers={callers} value={rate:.0}",
                bench.name,
                if repeats { "repeat" } else { "executed" },
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let option = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let measure_only = option("--measure");
    let plan = Plan {
        seconds: option("--seconds")
            .map(|s| s.parse().expect("--seconds takes a number"))
            .unwrap_or(3.0),
        trips: !matches!(measure_only.as_deref(), Some(m) if m != "trips"),
        rates: !matches!(measure_only.as_deref(), Some(m) if m != "rates"),
        kinds: match option("--kind").as_deref() {
            None => vec![false, true],
            Some("executed") => vec![false],
            Some("repeat") => vec![true],
            Some(other) => panic!("--kind executed|repeat, not {other}"),
        },
        callers: match option("--callers") {
            None => vec![1, 8],
            Some(n) => vec![n.parse().expect("--callers takes a number")],
        },
    };
    let wanted: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| matches!(*a, "redis" | "postgres"))
        .collect();
    let wants = |name: &str| wanted.is_empty() || wanted.contains(&name);
    // As many worker threads as callers (eight when measuring both): one caller is one thread,
    // eight callers are eight threads.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(if plan.callers.len() == 1 {
            plan.callers[0].max(1)
        } else {
            8
        })
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tool = Tool::new("send_email", Policy::default()).unwrap();
        if wants("redis") {
            let url = std::env::var("IDEMKIT_REDIS_URL")
                .expect("IDEMKIT_REDIS_URL (eval \"$(scripts/services.sh env)\")");
            let options = StoreOptions {
                key_prefix: Some("idemkit-bench:".into()),
                ..StoreOptions::default()
            };
            let store = RedisStore::connect(&url, &options).await.unwrap();
            store.forget(Some("bench")).await.unwrap();
            let store: Arc<dyn Store> = Arc::new(store);
            let counter = Box::new(RedisCounter::start(&url).await);
            let bench = Arc::new(Bench {
                name: "redis",
                executor: Executor::new(store.clone()),
                tool: tool.clone(),
            });
            measure(bench, counter, &plan).await;
            store.forget(Some("bench")).await.unwrap();
        }
        if wants("postgres") {
            let url = std::env::var("IDEMKIT_POSTGRES_URL")
                .expect("IDEMKIT_POSTGRES_URL (eval \"$(scripts/services.sh env)\")");
            let options = StoreOptions {
                table: Some("idemkit_bench".into()),
                ..StoreOptions::default()
            };
            let store = PostgresStore::connect(&url, &options).await.unwrap();
            store.create_table_if_missing().await.unwrap();
            store.forget(Some("bench")).await.unwrap();
            let store: Arc<dyn Store> = Arc::new(store);
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let bench = Arc::new(Bench {
                name: "postgres",
                executor: Executor::new(store.clone()),
                tool,
            });
            measure(bench, Box::new(PostgresCounter(client)), &plan).await;
            store.forget(Some("bench")).await.unwrap();
        }
    });
}
