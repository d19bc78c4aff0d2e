//! Calls made as the C and Java faces make them — plain threads stepping the executor with
//! `runtime::block_on_caller` — on Redis and PostgreSQL, where each step runs on a caller lane
//! (`src/runtime.rs`) with the lane's own connection:
//! - many threads at once (more than there are lanes) still run each key's body once, and the
//!   store's connections stay within its own pool plus one per lane;
//! - a claim cut short by the call's deadline while the server does not answer is released
//!   once the server answers again, with nobody calling any more (the lane is driven until the
//!   work its step left behind is done: SPEC §8 rule 4);
//! - a stopped server fails a lane's call, and the next call after it is back succeeds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use idemkit::runtime::{self, block_on_caller};
use idemkit::store::StoreOptions;
use idemkit::testing::random_tenant;
use idemkit::{
    BodyReport, CallContext, Error, ErrorKind, Executor, KeyStrategy, Policy, RawInput, Recording,
    Step, Store, Tool,
};

mod common;

/// One call as `idemkit_begin` → body → `idemkit_complete` makes it; the body counts its runs.
fn face_call(
    executor: &Executor,
    tool: &Tool,
    context: &CallContext,
    input: &str,
    runs: &AtomicUsize,
) -> Result<String, Error> {
    let raw = RawInput {
        json: Some(input),
        supplied_key: None,
    };
    let mut attempt = executor.prepare_raw(tool, context, raw)?;
    let answer = match block_on_caller(executor.advance(&mut attempt, None))? {
        Step::Replay(json) => json,
        Step::Run => {
            runs.fetch_add(1, Ordering::SeqCst);
            let reported =
                block_on_caller(executor.report(&mut attempt, BodyReport::Succeeded("\"done\"")));
            assert!(
                matches!(reported.recording, Recording::Recorded),
                "{:?}",
                reported.recording
            );
            "\"done\"".to_owned()
        }
        other => panic!("unexpected step {other:?}"),
    };
    let _runtime = runtime::runtime().enter();
    drop(attempt);
    Ok(answer)
}

/// `threads` threads (more than the lanes), all in at once, each calling every one of `keys`
/// keys several times: each key's body runs once and every call answers.
fn many_threads_many_calls(executor: &Executor, threads: usize, keys: usize) {
    let tool = Tool::new("book_room", Policy::new(KeyStrategy::HashInput)).unwrap();
    let context = CallContext::new().tenant(random_tenant());
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..keys).map(|_| AtomicUsize::new(0)).collect());
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let (executor, tool, context) = (executor.clone(), tool.clone(), context.clone());
            let (runs, start) = (runs.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for round in 0..5 {
                    for k in 0..keys {
                        let k = (k + thread + round) % keys;
                        let input = format!(r#"{{"room":{k}}}"#);
                        let answer = face_call(&executor, &tool, &context, &input, &runs[k])
                            .unwrap_or_else(|e| panic!("call {k}: {e}"));
                        assert_eq!(answer, "\"done\"");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for (k, runs) in runs.iter().enumerate() {
        assert_eq!(runs.load(Ordering::SeqCst), 1, "key {k} ran once");
    }
}

#[test]
fn redis_threads_beyond_the_lanes_run_each_body_once_on_bounded_connections() {
    if common::env_url("IDEMKIT_REDIS_URL").is_none() {
        return;
    }
    let Some(server) = common::PausedRedis::start() else {
        return;
    };
    let store = runtime::block_on(idemkit::store::open(
        &server.url(),
        &StoreOptions::default(),
    ))
    .unwrap();
    let executor = Executor::new(store);
    many_threads_many_calls(&executor, runtime::lanes() + 4, 6);
    let info: String = redis_query(&server.url(), redis::cmd("INFO").arg("clients"));
    let clients: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The store's 4 own connections, one per lane at most, and the one counting them.
    assert!(
        clients <= 4 + runtime::lanes() + 1,
        "{clients} connections for {} lanes",
        runtime::lanes()
    );
}

#[test]
fn postgres_threads_beyond_the_lanes_run_each_body_once_on_bounded_connections() {
    let Some(url) = common::env_url("IDEMKIT_POSTGRES_URL") else {
        return;
    };
    let name = format!("lanes_{}", &idemkit::Token::random().hex()[..12]);
    let sep = if url.contains('?') { '&' } else { '?' };
    let bounded = format!("{url}{sep}pool_size=2&application_name={name}");
    let (table, store) = runtime::block_on(async {
        let (table, _) = common::PgTable::new(&url, "idemkit_lanes").await;
        let store = idemkit::store::postgres::PostgresStore::connect(&bounded, &table.options())
            .await
            .unwrap();
        (table, store)
    });
    let store: Arc<dyn Store> = Arc::new(store);
    let executor = Executor::new(store);
    many_threads_many_calls(&executor, runtime::lanes() + 4, 6);
    let sessions: i64 = runtime::block_on(async {
        let client = common::pg_client(&url).await.unwrap();
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .await
            .unwrap();
        row.get(0)
    });
    assert!(
        sessions as usize <= 2 + runtime::lanes(),
        "{sessions} sessions for pool_size 2 and {} lanes",
        runtime::lanes()
    );
    drop(table);
}

#[test]
fn redis_a_claim_cut_by_the_deadline_is_released_after_its_caller_left() {
    if common::env_url("IDEMKIT_REDIS_URL").is_none() {
        return;
    }
    let Some(server) = common::PausedRedis::start() else {
        return;
    };
    let store = runtime::block_on(idemkit::store::open(
        &server.url(),
        &StoreOptions::default(),
    ))
    .unwrap();
    let executor = Executor::new(store.clone());
    let tool = Tool::with_timeout(
        "book_room",
        Policy::new(KeyStrategy::HashInput).with_lease(Duration::from_secs(30)),
        Some(Duration::from_millis(300)),
    )
    .unwrap();
    let tenant = random_tenant();
    let context = CallContext::new().tenant(tenant.as_str());
    let runs = AtomicUsize::new(0);
    // One thread throughout: its lane's connection is made by the first call.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                face_call(&executor, &tool, &context, r#"{"room":0}"#, &runs).unwrap();
                server.signal("-STOP");
                let cut = face_call(&executor, &tool, &context, r#"{"room":1}"#, &runs);
                assert_eq!(
                    cut.map_err(|e| e.kind()).unwrap_err(),
                    ErrorKind::StoreUnavailable
                );
                server.signal("-CONT");
            })
            .join()
            .unwrap();
    });
    // Nobody calls: the claim that lands now is released by the work the call left behind.
    let key = executor
        .prepare_raw(
            &tool,
            &context,
            RawInput {
                json: Some(r#"{"room":1}"#),
                supplied_key: None,
            },
        )
        .unwrap()
        .key()
        .cloned()
        .unwrap();
    runtime::block_on(common::eventually(
        &store,
        &tenant,
        &key,
        Duration::from_secs(20),
        "the claim that landed after the caller left is released",
        |r| r.is_none(),
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let answer = face_call(&executor, &tool, &context, r#"{"room":1}"#, &runs).unwrap();
    assert_eq!(answer, "\"done\"");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn redis_a_stopped_server_fails_a_lanes_call_and_the_next_one_after_it_is_back_succeeds() {
    if common::env_url("IDEMKIT_REDIS_URL").is_none() {
        return;
    }
    let Some(mut server) = common::PausedRedis::start() else {
        return;
    };
    let store = runtime::block_on(idemkit::store::open(
        &server.url(),
        &StoreOptions::default(),
    ))
    .unwrap();
    let executor = Executor::new(store);
    let tool = Tool::new("book_room", Policy::new(KeyStrategy::HashInput)).unwrap();
    let context = CallContext::new().tenant(random_tenant());
    let runs = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                face_call(&executor, &tool, &context, r#"{"room":0}"#, &runs).unwrap();
                server.stop();
                let failed = face_call(&executor, &tool, &context, r#"{"room":1}"#, &runs);
                assert_eq!(
                    failed.map_err(|e| e.kind()).unwrap_err(),
                    ErrorKind::StoreUnavailable
                );
                server.restart();
                let mut answer = face_call(&executor, &tool, &context, r#"{"room":1}"#, &runs);
                // The connection notices the restart on its first command after it.
                for _ in 0..20 {
                    if answer.is_ok() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                    answer = face_call(&executor, &tool, &context, r#"{"room":1}"#, &runs);
                }
                assert_eq!(answer.unwrap(), "\"done\"");
            })
            .join()
            .unwrap();
    });
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Sends `command` with a plain client of its own to the server (and database) of `url`.
fn redis_query<T: redis::FromRedisValue>(url: &str, command: &mut redis::Cmd) -> T {
    runtime::block_on(async {
        let client = redis::Client::open(url).unwrap();
        let mut c = client.get_multiplexed_async_connection().await.unwrap();
        command.query_async(&mut c).await.unwrap()
    })
}

#[test]
fn redis_lane_connections_log_in_as_the_urls_user_on_its_database_and_never_show_the_password() {
    if common::env_url("IDEMKIT_REDIS_URL").is_none() {
        return;
    }
    let Some(server) = common::PausedRedis::start() else {
        return;
    };
    let admin = server.url();
    let port = admin
        .trim_start_matches("redis://127.0.0.1:")
        .trim_end_matches("/0")
        .to_owned();
    let _: () = redis_query(
        &admin,
        redis::cmd("ACL").arg(&["SETUSER", "lanes", "on", ">lane-s3cret", "~*", "+@all"]),
    );
    // The default user may no longer log in: every connection must say who it is.
    let _: () = redis_query(
        &admin,
        redis::cmd("ACL").arg(&["SETUSER", "default", "off"]),
    );
    let user_url = |db: u8| format!("redis://lanes:lane-s3cret@127.0.0.1:{port}/{db}");
    let store =
        runtime::block_on(idemkit::store::open(&user_url(3), &StoreOptions::default())).unwrap();
    let executor = Executor::new(store);
    let tool = Tool::new("book_room", Policy::new(KeyStrategy::HashInput)).unwrap();
    let context = CallContext::new().tenant(random_tenant());
    let runs = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                for _ in 0..2 {
                    let answer = face_call(&executor, &tool, &context, r#"{"room":7}"#, &runs);
                    assert_eq!(answer.unwrap(), "\"done\"");
                }
            })
            .join()
            .unwrap();
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second call replayed");
    // The record is on database 3, none on 0.
    let on_3: Vec<String> = redis_query(&user_url(3), redis::cmd("KEYS").arg("idemkit:*"));
    let on_0: Vec<String> = redis_query(&user_url(0), redis::cmd("KEYS").arg("idemkit:*"));
    assert_eq!((on_3.len(), on_0.len()), (1, 0), "{on_3:?} {on_0:?}");

    // The password changes and every connection is dropped: a lane connects anew, is refused,
    // and the error says so without the password it tried.
    let _: () = redis_query(
        &user_url(0),
        redis::cmd("ACL").arg(&["SETUSER", "lanes", "resetpass", ">other-s3cret"]),
    );
    let other = format!("redis://lanes:other-s3cret@127.0.0.1:{port}/0");
    let _: () = redis_query(&other, redis::cmd("CLIENT").arg(&["KILL", "USER", "lanes"]));
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let error = face_call(&executor, &tool, &context, r#"{"room":8}"#, &runs)
                    .expect_err("the old password is refused");
                let text = format!("{error} {error:?}");
                assert!(!text.contains("lane-s3cret"), "{text}");
                assert!(
                    text.contains("WRONGPASS") || text.contains("auth"),
                    "{text}"
                );
            })
            .join()
            .unwrap();
    });
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "nothing ran without the store"
    );
}

/// The whole store conformance suite run as one step of a C or Java caller: every command
/// (the 64-claimer races too, as tasks of the lane) goes over the lane's own Redis socket.
#[test]
fn redis_the_conformance_suite_passes_over_a_lanes_own_connection() {
    let Some(url) = common::env_url("IDEMKIT_REDIS_URL") else {
        return;
    };
    let options = common::prefix_options("idemkit-lane-conformance:");
    let store: Arc<dyn Store> = Arc::new(
        runtime::block_on(idemkit::store::redis::RedisStore::connect(&url, &options)).unwrap(),
    );
    std::thread::spawn(move || {
        block_on_caller(async move {
            assert!(
                runtime_lane_is_driven_here(),
                "the step runs on a caller lane"
            );
            common::check_conformance(store).await;
        })
    })
    .join()
    .unwrap();
}

/// Whether this code runs on a caller lane's single-threaded runtime.
fn runtime_lane_is_driven_here() -> bool {
    tokio::runtime::Handle::current().runtime_flavor()
        == tokio::runtime::RuntimeFlavor::CurrentThread
}
