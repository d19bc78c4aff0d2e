//! Effect kinds, failure classification and retries (SPEC v1.1 rules 7 and 8), on the memory
//! store and on real Redis and PostgreSQL servers (`IDEMKIT_REDIS_URL`, `IDEMKIT_POSTGRES_URL`,
//! set by `scripts/test.sh`).
//!
//! - `READ_ONLY` claims and records nothing: every call runs.
//! - `EFFECTFUL` holds a failure: the caller gets the indeterminate error with the body's error
//!   as its cause, and every repeat gets the indeterminate error under every `onCacheHit` until
//!   an operator resolves the record.
//! - A failure is classified first by what the face knows, then by the policy's no-effect and
//!   permanent lists, then `cache_failures`, then the effect's default.
//! - A retry policy runs a released failure again under the same key, within the deadline; held
//!   and recorded failures never run again.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemkit::store::{RecordId, Resolution, Resolved};
use idemkit::{
    derive_key, CallContext, CallError, CallOptions, Effect, ErrorKind, EventKind, Executor,
    Failure, FailureClass, Key, KeyInput, KeyScope, MemoryStore, Outcome, Policy, RecordState,
    RetryBehavior, RetryPolicy, Store, Token, Tool,
};

#[macro_use]
mod common;

const INPUT: &str = r#"{"flight":"LH 400","seat":"12A"}"#;

/// A body error with a type name of its own.
#[derive(Debug, PartialEq)]
struct PaymentTimeout;
impl fmt::Display for PaymentTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no answer from the payment provider within 30 s")
    }
}

/// An error whose kind only the body knows.
#[derive(Debug, PartialEq)]
enum BookingError {
    Refused,
    Timeout,
}
impl fmt::Display for BookingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

fn key_of(tool: &str) -> Key {
    let scope = KeyScope {
        scope: tool,
        tenant: None,
        run: None,
    };
    derive_key(&scope, KeyInput::Json(INPUT), &[]).unwrap()
}

fn tool(name: &str, policy: Policy) -> Tool {
    Tool::new(name, policy).unwrap()
}

/// A tool name no other test (or earlier run on a shared server) uses.
fn fresh(name: &str) -> String {
    format!("{name}_{}", &Token::random().hex()[..8])
}

/// Calls `tool` once; the body counts its runs and fails with `error` or returns "booked".
async fn call<E: fmt::Display>(
    executor: &Executor,
    tool: &Tool,
    runs: &AtomicUsize,
    error: impl FnOnce() -> Option<E>,
) -> Result<String, CallError<E>> {
    executor
        .call(
            tool,
            &CallContext::new(),
            KeyInput::Json(INPUT),
            |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                match error() {
                    Some(e) => Err(e),
                    None => Ok("booked".to_owned()),
                }
            },
        )
        .await
}

async fn record_of(store: &Arc<dyn Store>, tool: &str) -> Option<idemkit::Record> {
    let key = key_of(tool);
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    store.get(id).await.unwrap().0
}

on_every_store!(
    read_only_claims_and_records_nothing_so_every_call_runs,
    an_effectful_failure_is_held_and_every_repeat_gets_the_indeterminate_error,
    a_held_failure_is_resolved_by_an_operator_like_an_abandoned_claim,
    failures_are_classified_listed_types_first_then_cache_failures_then_the_effect,
    a_classifier_on_the_call_comes_before_the_lists,
    an_effectful_result_that_cannot_be_encoded_is_held,
    a_released_failure_is_retried_under_the_same_key_until_it_succeeds,
    held_and_recorded_failures_are_never_retried,
    retries_stop_at_max_attempts_and_the_claim_is_released,
);

/// A table of its own; `upgraded`: with every migration, else only 001 and 002.
async fn postgres_table(
    url: &str,
    upgraded: bool,
) -> (String, Arc<dyn Store>, tokio_postgres::Client) {
    let name = format!("idemkit_effects_{}", &Token::random().hex()[..12]);
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let options = idemkit::StoreOptions {
        table: Some(name.clone()),
        ..idemkit::StoreOptions::default()
    };
    if upgraded {
        let store = idemkit::store::postgres::PostgresStore::connect(url, &options)
            .await
            .unwrap();
        store.create_table_if_missing().await.unwrap();
    } else {
        // What a user who applied the files of sql/postgres/ up to 002 has.
        for file in [
            include_str!("../sql/postgres/001_idemkit_records.sql"),
            include_str!("../sql/postgres/002_idemkit_records_claimed_at.sql"),
        ] {
            let ddl = file
                .replace("idemkit_records_", &format!("{name}_"))
                .replace("idemkit_records", &name);
            client.batch_execute(&ddl).await.unwrap();
        }
    }
    let store = idemkit::store::postgres::PostgresStore::connect(url, &options)
        .await
        .unwrap();
    (name, Arc::new(store), client)
}

async fn read_only_claims_and_records_nothing_so_every_call_runs(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let name = fresh("search_flights");
    let tool = tool(&name, Policy::default().with_effect(Effect::ReadOnly));
    let runs = AtomicUsize::new(0);
    for _ in 0..2 {
        let got = call::<PaymentTimeout>(&executor, &tool, &runs, || None).await;
        assert_eq!(got.unwrap(), "booked");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a READ_ONLY call runs every time"
    );
    assert!(record_of(&store, &name).await.is_none(), "nothing recorded");
    assert_eq!(executor.events().count(EventKind::Acquired), 0);
    // A failure is the body's own error, and nothing is recorded either.
    let failed = call(&executor, &tool, &runs, || Some(PaymentTimeout)).await;
    assert!(matches!(failed, Err(CallError::Body(PaymentTimeout))));
    assert!(record_of(&store, &name).await.is_none());
}

async fn an_effectful_failure_is_held_and_every_repeat_gets_the_indeterminate_error(
    store: Arc<dyn Store>,
) {
    let executor = Executor::new(store.clone());
    let name = fresh("book_seat");
    let effectful = Policy::default().with_effect(Effect::Effectful);
    let book = tool(&name, effectful.clone());
    let runs = AtomicUsize::new(0);

    let first = call(&executor, &book, &runs, || Some(PaymentTimeout)).await;
    let key = key_of(&name).hex();
    match first {
        Err(CallError::Held { error, cause }) => {
            assert_eq!(cause, PaymentTimeout, "the body's error is the cause");
            assert_eq!(error.kind(), ErrorKind::Indeterminate);
            let text = error.to_string();
            for part in [name.as_str(), key.as_str(), "PaymentTimeout", "EFFECTFUL"] {
                assert!(text.contains(part), "{text:?} names {part}");
            }
            // The error tells this caller its own body ran, not that an earlier call's did.
            assert!(
                matches!(error, idemkit::Error::Indeterminate { ran: true, .. }),
                "{error:?}"
            );
            assert!(text.contains("this call's body failed"), "{text}");
            assert!(!text.contains("nothing was run"), "{text}");
        }
        other => panic!("expected the held indeterminate error, got {other:?}"),
    }
    assert_eq!(executor.events().count(EventKind::Indeterminate), 1);
    assert_eq!(executor.events().count(EventKind::Released), 0);
    let record = record_of(&store, &name)
        .await
        .expect("the failure is recorded");
    assert_eq!(record.state, RecordState::Completed);
    assert_eq!(
        record.outcome,
        Some(Outcome::Indeterminate(Failure::new(
            "PaymentTimeout",
            "no answer from the payment provider within 30 s"
        )))
    );
    assert!(record.is_held());

    // Every repeat, under every behaviour, gets the indeterminate error; nothing runs.
    for behavior in [
        RetryBehavior::ReturnCached,
        RetryBehavior::ReturnCachedIfSuccess,
        RetryBehavior::FailFast,
    ] {
        let repeat = tool(&name, effectful.clone().with_on_cache_hit(behavior));
        let got = call::<PaymentTimeout>(&executor, &repeat, &runs, || None).await;
        let error = got.expect_err("a held failure is never answered with a result");
        let error = error.idempotency().expect("idemkit's error");
        assert_eq!(
            error.kind(),
            ErrorKind::Indeterminate,
            "{behavior:?}: {error}"
        );
        assert!(error.to_string().contains("PaymentTimeout"), "{error}");
        // A repeat met the record an earlier call left: it ran nothing and says so.
        assert!(
            matches!(error, idemkit::Error::Indeterminate { ran: false, .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("an earlier call's body failed"),
            "{error}"
        );
        assert!(error.to_string().contains("nothing was run"), "{error}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the body ran once");
}

async fn a_held_failure_is_resolved_by_an_operator_like_an_abandoned_claim(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let name = fresh("charge_card");
    let charge = tool(&name, Policy::default().with_effect(Effect::Effectful));
    let runs = AtomicUsize::new(0);
    let _ = call(&executor, &charge, &runs, || Some(PaymentTimeout)).await;
    let record = record_of(&store, &name).await.unwrap();
    let key = key_of(&name);
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    // The operator found out that the charge went through: record the success.
    let resolution = Resolution::Complete {
        outcome: Outcome::success(r#""charged""#).unwrap(),
        ttl_ms: 60_000,
    };
    assert_eq!(
        store.resolve(id, record.token, &resolution).await.unwrap(),
        Resolved::Done
    );
    let got = call::<PaymentTimeout>(&executor, &charge, &runs, || None).await;
    assert_eq!(got.unwrap(), "charged");
    // Now completed with a known outcome, it is no longer resolvable.
    let record = record_of(&store, &name).await.unwrap();
    assert!(matches!(
        store
            .resolve(id, record.token, &Resolution::Release)
            .await
            .unwrap(),
        Resolved::AlreadyCompleted(_)
    ));

    // Another held failure, released by the operator: the next call runs.
    let other = fresh("charge_card");
    let charge = tool(&other, Policy::default().with_effect(Effect::Effectful));
    let _ = call(&executor, &charge, &runs, || Some(PaymentTimeout)).await;
    let record = record_of(&store, &other).await.unwrap();
    let key = key_of(&other);
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    assert_eq!(
        store
            .resolve(id, record.token, &Resolution::Release)
            .await
            .unwrap(),
        Resolved::Done
    );
    let before = runs.load(Ordering::SeqCst);
    let got = call::<PaymentTimeout>(&executor, &charge, &runs, || None).await;
    assert_eq!(got.unwrap(), "booked");
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

/// What a repeat after a failure did: whether it ran, and the idemkit error it got.
type Repeat = (bool, Option<ErrorKind>);

/// Fails `tool` once with `error`, then calls it again with a body that succeeds: answers
/// whether the second call ran, and the second call's error if it got one.
async fn fail_then_repeat<E: fmt::Display + fmt::Debug>(
    executor: &Executor,
    tool: &Tool,
    error: E,
) -> Repeat {
    let runs = AtomicUsize::new(0);
    let first = call(executor, tool, &runs, || Some(error)).await;
    assert!(first.is_err());
    let second = call::<E>(executor, tool, &runs, || None).await;
    let ran = runs.load(Ordering::SeqCst) == 2;
    (
        ran,
        second.err().and_then(|e| e.idempotency().map(|e| e.kind())),
    )
}

async fn failures_are_classified_listed_types_first_then_cache_failures_then_the_effect(
    store: Arc<dyn Store>,
) {
    let executor = Executor::new(store);
    let effectful = || Policy::default().with_effect(Effect::Effectful);
    // (policy, what the repeat does): released → runs; recorded → cached failure; held →
    // indeterminate.
    let cases: Vec<(&str, Policy, Repeat)> = vec![
        // EFFECTFUL, listed as no effect: released, so the repeat runs.
        (
            "no effect beats EFFECTFUL",
            effectful().with_no_effect_errors(["PaymentTimeout"]),
            (true, None),
        ),
        // No effect comes before permanent.
        (
            "no effect beats permanent",
            effectful()
                .with_permanent_errors(["CardDeclined"])
                .with_no_effect_errors(["PaymentTimeout", "Other"]),
            (true, None),
        ),
        // IDEMPOTENT, listed as permanent: recorded, the repeat gets the cached failure.
        (
            "permanent beats IDEMPOTENT",
            Policy::default().with_permanent_errors(["PaymentTimeout"]),
            (false, Some(ErrorKind::CachedFailure)),
        ),
        // Listed by its full type name.
        (
            "full type name",
            Policy::default().with_permanent_errors([std::any::type_name::<PaymentTimeout>()]),
            (false, Some(ErrorKind::CachedFailure)),
        ),
        // EFFECTFUL with cache_failures: recorded as a failure, not held.
        (
            "cache_failures beats EFFECTFUL",
            effectful().with_cache_failures(true),
            (false, Some(ErrorKind::CachedFailure)),
        ),
        // EFFECTFUL, another type listed: held.
        (
            "EFFECTFUL default",
            effectful().with_no_effect_errors(["ConnectionRefused"]),
            (false, Some(ErrorKind::Indeterminate)),
        ),
        // IDEMPOTENT default: released.
        ("IDEMPOTENT default", Policy::default(), (true, None)),
    ];
    for (case, policy, expected) in cases {
        let tool = tool(&fresh("classified"), policy);
        let got = fail_then_repeat(&executor, &tool, PaymentTimeout).await;
        assert_eq!(got, expected, "{case}");
    }
}

async fn a_classifier_on_the_call_comes_before_the_lists(store: Arc<dyn Store>) {
    let executor = Executor::new(store);
    // BookingError is listed as permanent, but the classifier knows a refusal had no effect (so
    // it is released and the repeat runs); of a timeout it knows nothing, so the list decides
    // (recorded, so the repeat gets the cached failure).
    let policy = Policy::default()
        .with_effect(Effect::Effectful)
        .with_permanent_errors(["BookingError"]);
    let classify = |e: &BookingError| match e {
        BookingError::Refused => Some(FailureClass::NoEffect),
        BookingError::Timeout => None,
    };
    for (error, repeat_runs) in [
        (BookingError::Refused, true),
        (BookingError::Timeout, false),
    ] {
        let runs = AtomicUsize::new(0);
        let tool = tool_with_fresh_failure(&executor, &policy, &classify, error).await;
        let second = call::<BookingError>(&executor, &tool, &runs, || None).await;
        assert_eq!(second.is_ok(), repeat_runs, "{second:?}");
    }
}

/// A fresh tool whose first call failed with `error` under `classify`.
async fn tool_with_fresh_failure(
    executor: &Executor,
    policy: &Policy,
    classify: &(dyn Fn(&BookingError) -> Option<FailureClass> + Send + Sync),
    error: BookingError,
) -> Tool {
    let tool = tool(&fresh("book"), policy.clone());
    let error = Mutex::new(Some(error));
    let first = executor
        .call_with(
            &tool,
            &CallContext::new(),
            KeyInput::Json(INPUT),
            CallOptions::new().classify(classify),
            |_| {
                let error = error.lock().unwrap().take().unwrap();
                async move { Err::<String, _>(error) }
            },
        )
        .await;
    assert!(first.is_err());
    tool
}

async fn an_effectful_result_that_cannot_be_encoded_is_held(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let name = fresh("reserve");
    let tool = tool(&name, Policy::default().with_effect(Effect::Effectful));
    // A map with non-string keys has no JSON form.
    let first = executor
        .call(
            &tool,
            &CallContext::new(),
            KeyInput::Json(INPUT),
            |_| async { Ok::<_, PaymentTimeout>(HashMap::from([((1, 2), 3)])) },
        )
        .await;
    let error = first.expect_err("an unencodable result is a failure");
    assert_eq!(
        error.idempotency().map(|e| e.kind()),
        Some(ErrorKind::Indeterminate),
        "{error}"
    );
    let record = record_of(&store, &name).await.unwrap();
    assert!(record.is_held(), "{record:?}");
}

/// A retry policy with pauses short enough for a test.
fn quick_retry(attempts: u32) -> RetryPolicy {
    RetryPolicy::attempts(attempts)
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
}

async fn a_released_failure_is_retried_under_the_same_key_until_it_succeeds(store: Arc<dyn Store>) {
    for effect in [Effect::Idempotent, Effect::ReadOnly] {
        let executor = Executor::new(store.clone());
        let name = fresh("send_email");
        let tool = tool(&name, Policy::default().with_effect(effect));
        let keys = Mutex::new(Vec::new());
        let got = executor
            .call_with(
                &tool,
                &CallContext::new(),
                KeyInput::Json(INPUT),
                CallOptions::new().retry(quick_retry(3)),
                |info| {
                    let mut keys = keys.lock().unwrap();
                    keys.push(info.key);
                    let fail = keys.len() < 3;
                    async move {
                        if fail {
                            Err(PaymentTimeout)
                        } else {
                            Ok("sent".to_owned())
                        }
                    }
                },
            )
            .await;
        assert_eq!(got.unwrap(), "sent", "{effect:?}");
        let keys = keys.into_inner().unwrap();
        assert_eq!(keys.len(), 3, "{effect:?}: three runs");
        assert!(keys.iter().all(|k| *k == keys[0] && k.is_some()), "one key");
        assert_eq!(executor.events().count(EventKind::Retried), 2, "{effect:?}");
        if effect == Effect::Idempotent {
            // The success was recorded: a repeat gets it without running.
            let runs = AtomicUsize::new(0);
            let again = call::<PaymentTimeout>(&executor, &tool, &runs, || None).await;
            assert_eq!(again.unwrap(), "sent");
            assert_eq!(runs.load(Ordering::SeqCst), 0);
        }
    }
}

/// Runs a call that always fails with `error` under `retry`; answers how often the body ran.
async fn runs_of_failing_call<E: fmt::Display + Copy>(
    executor: &Executor,
    tool: &Tool,
    retry: RetryPolicy,
    error: E,
) -> usize {
    let runs = AtomicUsize::new(0);
    let got = executor
        .call_with(
            tool,
            &CallContext::new(),
            KeyInput::Json(INPUT),
            CallOptions::new().retry(retry),
            |_| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move { Err::<String, _>(error) }
            },
        )
        .await;
    assert!(got.is_err());
    runs.load(Ordering::SeqCst)
}

#[derive(Debug, Clone, Copy)]
struct Transient;
impl fmt::Display for Transient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("503 from upstream")
    }
}

async fn held_and_recorded_failures_are_never_retried(store: Arc<dyn Store>) {
    let executor = Executor::new(store);
    let cases = [
        ("held", Policy::default().with_effect(Effect::Effectful)),
        (
            "recorded (permanent)",
            Policy::default().with_permanent_errors(["Transient"]),
        ),
        (
            "recorded (cache_failures)",
            Policy::default().with_cache_failures(true),
        ),
    ];
    for (case, policy) in cases {
        let tool = tool(&fresh("pay"), policy);
        let runs = runs_of_failing_call(&executor, &tool, quick_retry(5), Transient).await;
        assert_eq!(runs, 1, "{case}");
    }
    // EFFECTFUL, but this failure is known to have had no effect: retried.
    let tool = tool(
        &fresh("pay"),
        Policy::default()
            .with_effect(Effect::Effectful)
            .with_no_effect_errors(["Transient"]),
    );
    assert_eq!(
        runs_of_failing_call(&executor, &tool, quick_retry(3), Transient).await,
        3
    );
    // A type the retry policy does not name is not retried.
    let tool = tool_named("pay", Policy::default());
    let only_timeouts = quick_retry(5).with_retry_on(["PaymentTimeout"]);
    assert_eq!(
        runs_of_failing_call(&executor, &tool, only_timeouts, Transient).await,
        1
    );
    // A pause that would end past the deadline is not taken.
    let tool = Tool::with_timeout(
        fresh("pay"),
        Policy::default(),
        Some(Duration::from_millis(200)),
    )
    .unwrap();
    let slow =
        RetryPolicy::attempts(5).with_backoff(Duration::from_secs(2), Duration::from_secs(2));
    assert_eq!(
        runs_of_failing_call(&executor, &tool, slow, Transient).await,
        1
    );
}

fn tool_named(name: &str, policy: Policy) -> Tool {
    tool(&fresh(name), policy)
}

async fn retries_stop_at_max_attempts_and_the_claim_is_released(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone())
        .with_retry(quick_retry(3))
        .unwrap();
    let name = fresh("notify");
    let tool = tool(&name, Policy::default());
    let runs = AtomicUsize::new(0);
    // The executor's retry policy applies to call_with without one of its own.
    let got = executor
        .call_with(
            &tool,
            &CallContext::new(),
            KeyInput::Json(INPUT),
            CallOptions::new(),
            |_| {
                runs.fetch_add(1, Ordering::SeqCst);
                async { Err::<String, _>(Transient) }
            },
        )
        .await;
    assert!(matches!(got, Err(CallError::Body(Transient))));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(record_of(&store, &name).await.is_none(), "released");
    // `call` takes an FnOnce body and runs it once.
    let once = AtomicUsize::new(0);
    let _ = call(&executor, &tool, &once, || Some(Transient)).await;
    assert_eq!(once.load(Ordering::SeqCst), 1);
}

#[test]
fn an_invalid_retry_policy_is_refused_naming_the_field() {
    let store = Arc::new(MemoryStore::new());
    let zero = Executor::new(store.clone()).with_retry(RetryPolicy::attempts(0));
    assert!(zero.unwrap_err().to_string().contains("`max_attempts`"));
    let inverted = Executor::new(store).with_retry(
        RetryPolicy::attempts(2).with_backoff(Duration::from_secs(2), Duration::from_secs(1)),
    );
    assert!(inverted.unwrap_err().to_string().contains("`max_backoff`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_table_without_migration_003_names_it_and_create_table_if_missing_adds_it() {
    let Some(url) = common::env_url("IDEMKIT_POSTGRES_URL") else {
        return;
    };
    let (table, store, client) = postgres_table(&url, false).await;
    let executor = Executor::new(store.clone());
    let details = Arc::new(Mutex::new(Vec::new()));
    let seen = details.clone();
    executor
        .events()
        .subscribe(Arc::new(move |event: &idemkit::Event<'_>| {
            if event.kind == EventKind::RecordFailed {
                seen.lock()
                    .unwrap()
                    .push(event.detail.unwrap_or("").to_owned());
            }
        }));
    let name = fresh("book_seat");
    let book = tool(&name, Policy::default().with_effect(Effect::Effectful));
    let runs = AtomicUsize::new(0);
    let first = call(&executor, &book, &runs, || Some(PaymentTimeout)).await;
    // Still the honest answer: the effect may have landed.
    assert!(matches!(first, Err(CallError::Held { .. })), "{first:?}");
    let details = details.lock().unwrap().clone();
    assert_eq!(details.len(), 1, "{details:?}");
    assert!(
        details[0].contains("003_idemkit_records_held_outcome.sql"),
        "{details:?}"
    );

    // The store's own upgrade adds it (twice is harmless), and then the failure is held.
    let pg = idemkit::store::postgres::PostgresStore::connect(
        &url,
        &idemkit::StoreOptions {
            table: Some(table.clone()),
            ..idemkit::StoreOptions::default()
        },
    )
    .await
    .unwrap();
    pg.create_table_if_missing().await.unwrap();
    pg.create_table_if_missing().await.unwrap();
    let other = fresh("book_seat");
    let book = tool(&other, Policy::default().with_effect(Effect::Effectful));
    let _ = call(&executor, &book, &runs, || Some(PaymentTimeout)).await;
    assert!(record_of(&store, &other).await.unwrap().is_held());
    client
        .batch_execute(&format!(
            "DROP TABLE {table}; DROP FUNCTION IF EXISTS {table}_claim"
        ))
        .await
        .unwrap();
}
