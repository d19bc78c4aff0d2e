//! Criterion benchmarks of the in-memory call path, each next to a baseline in the same run.
//!
//! `cargo bench --bench executor`

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use idemkit::{CallContext, Executor, KeyInput, ManualClock, MemoryStore, Policy, Tool};
use sha2::{Digest, Sha256};

const INPUT: &str = r#"{"to":"ana@example.com","subject":"Your booking BA117","template":"confirm","locale":"en-GB","booking":{"id":9007199254740993,"seats":["12A","12B"]}}"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The naive baseline: SHA-256 of the raw input text and a mutex-guarded map.
struct NaiveDedupe(Mutex<HashMap<[u8; 32], String>>);

impl NaiveDedupe {
    fn call(&self, input: &str, body: impl FnOnce() -> String) -> String {
        let key: [u8; 32] = Sha256::digest(input.as_bytes()).into();
        if let Some(hit) = self.0.lock().unwrap().get(&key) {
            return hit.clone();
        }
        let result = body();
        self.0.lock().unwrap().insert(key, result.clone());
        result
    }
}

async fn send(exec: &Executor, tool: &Tool, ctx: &CallContext, input: &str) -> String {
    exec.call(tool, ctx, KeyInput::Json(input), |_| async {
        Ok::<_, std::io::Error>("msg-1".to_string())
    })
    .await
    .unwrap()
}

fn single_thread(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("memory_call");
    let tool = Tool::new("send_email", Policy::default()).unwrap();
    let ctx = CallContext::new().tenant("acme");

    let exec = Executor::new(Arc::new(MemoryStore::new()));
    rt.block_on(send(&exec, &tool, &ctx, INPUT));
    group.bench_function("hit", |b| {
        b.iter(|| rt.block_on(send(&exec, &tool, &ctx, black_box(INPUT))))
    });

    // Executed: the clock moves past the TTL before every call, so each call claims the
    // (expired) key afresh, runs the body and records its outcome.
    let clock = ManualClock::new(0);
    let exec = Executor::new(Arc::new(MemoryStore::with_clock(Arc::new(clock.clone()))));
    group.bench_function("execute", |b| {
        b.iter(|| {
            clock.advance(Duration::from_secs(7200));
            rt.block_on(send(&exec, &tool, &ctx, black_box(INPUT)))
        })
    });

    let naive = NaiveDedupe(Mutex::new(HashMap::new()));
    naive.call(INPUT, || "msg-1".into());
    group.bench_function("baseline_sha256_hashmap_hit", |b| {
        b.iter(|| naive.call(black_box(INPUT), || "msg-1".into()))
    });
    group.bench_function("baseline_direct_body", |b| {
        b.iter(|| rt.block_on(async { black_box("msg-1".to_string()) }))
    });
    group.finish();
}

/// One OS thread per input, each with its own runtime, making `iters` calls between them.
fn threads(exec: &Executor, tool: &Tool, inputs: &[&'static str], iters: u64) -> Duration {
    let per_thread = iters.div_ceil(inputs.len() as u64);
    let start = Instant::now();
    std::thread::scope(|s| {
        for &input in inputs {
            let exec = exec.clone();
            let tool = tool.clone();
            s.spawn(move || {
                let rt = runtime();
                let ctx = CallContext::new();
                for _ in 0..per_thread {
                    rt.block_on(send(&exec, &tool, &ctx, input));
                }
            });
        }
    });
    start.elapsed()
}

fn contention(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory_call_2_threads");
    let tool = Tool::new("send_email", Policy::default()).unwrap();
    let exec = Executor::new(Arc::new(MemoryStore::new()));
    const A: &str = r#"{"to":"ana@example.com","subject":"a"}"#;
    const B: &str = r#"{"to":"bo@example.com","subject":"b"}"#;
    group.bench_function("baseline_one_thread_hit", |b| {
        b.iter_custom(|iters| threads(&exec, &tool, &[A], iters))
    });
    group.bench_function("distinct_keys_hit", |b| {
        b.iter_custom(|iters| threads(&exec, &tool, &[A, B], iters))
    });
    group.bench_function("shared_key_hit", |b| {
        b.iter_custom(|iters| threads(&exec, &tool, &[A, A], iters))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    targets = single_thread, contention
}
criterion_main!(benches);
