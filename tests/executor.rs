//! The claim protocol of SPEC §1 and §3, row by row, on the in-memory store.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use idemkit::store::{
    ClaimReply, ClaimRequest, Completion, ListFilter, Page, RecordId, Resolution, Resolved,
};
use idemkit::{
    CallContext, CallError, Error, ErrorKind, EventKind, Executor, KeyInput, KeyStrategy,
    ManualClock, MemoryStore, Outcome, Policy, Record, RetryBehavior, Status, Step, Store,
    StoreError, Token, Tool,
};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct MailError(String);

fn memory() -> (Executor, ManualClock, Arc<MemoryStore>) {
    let clock = ManualClock::new(1_700_000_000_000);
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    (Executor::new(store.clone()), clock, store)
}

fn tool(name: &str, policy: Policy) -> Tool {
    Tool::new(name, policy).unwrap()
}

const INPUT: &str = r#"{"to":"ana@example.com","subject":"hi"}"#;

/// Calls `tool` with `input`, counting body runs; the body succeeds with `"sent"`.
async fn send(
    exec: &Executor,
    tool: &Tool,
    input: KeyInput<'_>,
    runs: &AtomicUsize,
) -> Result<String, CallError<MailError>> {
    exec.call(tool, &CallContext::new(), input, |_| async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, MailError>("sent".to_string())
    })
    .await
}

/// Calls `tool`, the body fails with `MailError("mailbox full")`.
async fn send_failing(
    exec: &Executor,
    tool: &Tool,
    runs: &AtomicUsize,
) -> Result<String, CallError<MailError>> {
    exec.call(
        tool,
        &CallContext::new(),
        KeyInput::Json(INPUT),
        |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Err::<String, _>(MailError("mailbox full".into()))
        },
    )
    .await
}

fn kind<T: std::fmt::Debug>(r: Result<T, CallError<MailError>>) -> ErrorKind {
    match r {
        Err(CallError::Idempotency(e)) => e.kind(),
        other => panic!("expected an idemkit error, got {other:?}"),
    }
}

// ---- strategies -------------------------------------------------------------------------

#[tokio::test]
async fn hash_input_repeat_gets_the_remembered_result_without_running() {
    let (exec, _, _) = memory();
    let t = tool("send_email", Policy::default());
    let runs = AtomicUsize::new(0);
    for _ in 0..3 {
        assert_eq!(
            send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
            "sent"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(exec.events().count(EventKind::Acquired), 1);
    assert_eq!(exec.events().count(EventKind::Deduplicated), 2);
}

#[tokio::test]
async fn hash_input_member_order_and_number_spelling_share_a_key() {
    let (exec, _, _) = memory();
    let t = tool("charge", Policy::default());
    let runs = AtomicUsize::new(0);
    send(
        &exec,
        &t,
        KeyInput::Json(r#"{"amount":2,"card":"x"}"#),
        &runs,
    )
    .await
    .unwrap();
    send(
        &exec,
        &t,
        KeyInput::Json(r#"{"card":"x","amount":20e-1}"#),
        &runs,
    )
    .await
    .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    send(
        &exec,
        &t,
        KeyInput::Json(r#"{"card":"x","amount":3}"#),
        &runs,
    )
    .await
    .unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a changed value is a new call"
    );
}

#[tokio::test]
async fn hash_input_with_key_arguments_ignores_other_members() {
    let (exec, _, _) = memory();
    let t = tool("book", Policy::default().with_key_arguments(["flight"]));
    let runs = AtomicUsize::new(0);
    send(
        &exec,
        &t,
        KeyInput::Json(r#"{"flight":"BA117","request_id":"a"}"#),
        &runs,
    )
    .await
    .unwrap();
    send(
        &exec,
        &t,
        KeyInput::Json(r#"{"flight":"BA117","request_id":"b"}"#),
        &runs,
    )
    .await
    .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn hash_input_missing_key_argument_fails_and_runs_nothing() {
    let (exec, _, store) = memory();
    let t = tool("book", Policy::default().with_key_arguments(["flight"]));
    let runs = AtomicUsize::new(0);
    let r = send(&exec, &t, KeyInput::Json(r#"{"request_id":"a"}"#), &runs).await;
    assert_eq!(kind(r), ErrorKind::InvalidKey);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(store.is_empty());
}

#[tokio::test]
async fn hash_input_invalid_json_fails_with_invalid_key_and_runs_nothing() {
    let (exec, _, _) = memory();
    let t = tool("book", Policy::default());
    let runs = AtomicUsize::new(0);
    let r = send(&exec, &t, KeyInput::Json(r#"{"x":NaN}"#), &runs).await;
    let err = match r {
        Err(CallError::Idempotency(e)) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(err.kind(), ErrorKind::InvalidKey);
    assert!(err.to_string().contains("`book`"), "names the tool: {err}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn explicit_key_deduplicates_on_the_supplied_key() {
    let (exec, _, _) = memory();
    let t = tool("create_issue", Policy::new(KeyStrategy::Explicit));
    let runs = AtomicUsize::new(0);
    send(&exec, &t, KeyInput::Explicit("fix login bug"), &runs)
        .await
        .unwrap();
    send(&exec, &t, KeyInput::Explicit("fix login bug"), &runs)
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    send(&exec, &t, KeyInput::Explicit("another bug"), &runs)
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn explicit_blank_key_fails_with_invalid_key_and_runs_nothing() {
    let (exec, _, _) = memory();
    let t = tool("create_issue", Policy::new(KeyStrategy::Explicit));
    let runs = AtomicUsize::new(0);
    for blank in ["", "   ", "\u{a0}\u{3000}"] {
        assert_eq!(
            kind(send(&exec, &t, KeyInput::Explicit(blank), &runs).await),
            ErrorKind::InvalidKey
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn explicit_tool_called_with_an_input_is_a_configuration_error() {
    let (exec, _, _) = memory();
    let t = tool("create_issue", Policy::new(KeyStrategy::Explicit));
    let runs = AtomicUsize::new(0);
    assert_eq!(
        kind(send(&exec, &t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::Configuration
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn uuid_runs_every_call_with_a_fresh_uuid_and_no_record() {
    let (exec, _, store) = memory();
    let t = tool("notify", Policy::new(KeyStrategy::Uuid));
    let mut keys = Vec::new();
    for _ in 0..2 {
        let key: String = exec
            .call(
                &t,
                &CallContext::new(),
                KeyInput::Json(INPUT),
                |call| async move { Ok::<_, MailError>(call.key.unwrap()) },
            )
            .await
            .unwrap();
        assert!(uuid::Uuid::parse_str(&key).is_ok(), "{key}");
        keys.push(key);
    }
    assert_ne!(keys[0], keys[1]);
    assert!(store.is_empty());
}

#[tokio::test]
async fn none_runs_every_call_without_a_key() {
    let (exec, _, store) = memory();
    let t = tool("log", Policy::new(KeyStrategy::None));
    let runs = AtomicUsize::new(0);
    for _ in 0..3 {
        let key: Option<String> = exec
            .call(
                &t,
                &CallContext::new(),
                KeyInput::Json(INPUT),
                |call| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, MailError>(call.key)
                },
            )
            .await
            .unwrap();
        assert_eq!(key, None);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(store.is_empty());
}

#[tokio::test]
async fn the_body_sees_its_64_hex_key_and_tenant() {
    let (exec, _, _) = memory();
    let t = tool("send_email", Policy::default());
    let ctx = CallContext::new().tenant("acme");
    let (key, tenant) = exec
        .call(&t, &ctx, KeyInput::Json(INPUT), |call| async move {
            Ok::<_, MailError>((call.key.unwrap(), call.tenant))
        })
        .await
        .unwrap();
    assert_eq!(key.len(), 64);
    assert!(key
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(tenant.as_deref(), Some("acme"));
}

#[tokio::test]
async fn tenant_and_run_scope_the_key() {
    let (exec, _, _) = memory();
    let t = tool("book", Policy::default());
    let runs = AtomicUsize::new(0);
    for ctx in [
        CallContext::new(),
        CallContext::new().tenant("acme"),
        CallContext::new().tenant("globex"),
        CallContext::new().tenant("acme").run("run-2"),
        CallContext::new().tenant(""),
    ] {
        exec.call(&t, &ctx, KeyInput::Json(INPUT), |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, MailError>(1)
        })
        .await
        .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

// ---- retry behaviours ---------------------------------------------------------------------

#[tokio::test]
async fn return_cached_repeat_of_success_gets_the_result() {
    let (exec, _, _) = memory();
    let t = tool(
        "send_email",
        Policy::default().with_on_cache_hit(RetryBehavior::ReturnCached),
    );
    let runs = AtomicUsize::new(0);
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn return_cached_repeat_of_failure_fails_with_the_original_type_and_message() {
    let (exec, _, _) = memory();
    let t = tool("send_email", Policy::default().with_cache_failures(true));
    let runs = AtomicUsize::new(0);
    assert!(matches!(
        send_failing(&exec, &t, &runs).await,
        Err(CallError::Body(_))
    ));
    match send_failing(&exec, &t, &runs).await {
        Err(CallError::Idempotency(Error::CachedFailure {
            error_type,
            message,
            tool,
            key,
        })) => {
            assert_eq!(error_type, "MailError");
            assert_eq!(message, "mailbox full");
            assert_eq!(tool, "send_email");
            assert_eq!(key.len(), 64);
        }
        other => panic!("expected a cached failure, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn return_cached_if_success_repeat_of_success_gets_the_result() {
    let (exec, _, _) = memory();
    let t = tool(
        "send_email",
        Policy::default().with_on_cache_hit(RetryBehavior::ReturnCachedIfSuccess),
    );
    let runs = AtomicUsize::new(0);
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn return_cached_if_success_repeat_of_failure_runs_again() {
    let (exec, _, _) = memory();
    let t = tool(
        "send_email",
        Policy::default()
            .with_on_cache_hit(RetryBehavior::ReturnCachedIfSuccess)
            .with_cache_failures(true),
    );
    let runs = AtomicUsize::new(0);
    assert!(matches!(
        send_failing(&exec, &t, &runs).await,
        Err(CallError::Body(_))
    ));
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the failure re-ran once, then the success is remembered"
    );
}

#[tokio::test]
async fn fail_fast_repeat_of_success_fails_at_once() {
    let (exec, _, _) = memory();
    let t = tool(
        "send_email",
        Policy::default().with_on_cache_hit(RetryBehavior::FailFast),
    );
    let runs = AtomicUsize::new(0);
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    assert_eq!(
        kind(send(&exec, &t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::FailFast
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(exec.events().count(EventKind::FailedFast), 1);
}

#[tokio::test]
async fn fail_fast_repeat_of_failure_fails_at_once() {
    let (exec, _, _) = memory();
    let t = tool(
        "send_email",
        Policy::default()
            .with_on_cache_hit(RetryBehavior::FailFast)
            .with_cache_failures(true),
    );
    let runs = AtomicUsize::new(0);
    assert!(matches!(
        send_failing(&exec, &t, &runs).await,
        Err(CallError::Body(_))
    ));
    assert_eq!(
        kind(send_failing(&exec, &t, &runs).await),
        ErrorKind::FailFast
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn fail_fast_on_an_in_progress_key_fails_without_waiting() {
    let (exec, _, _) = memory();
    let t = tool(
        "send_email",
        Policy::default().with_on_cache_hit(RetryBehavior::FailFast),
    );
    let mut holder = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    assert_eq!(exec.advance(&mut holder, None).await.unwrap(), Step::Run);
    let runs = AtomicUsize::new(0);
    let started = Instant::now();
    let err = send(&exec, &t, KeyInput::Json(INPUT), &runs)
        .await
        .unwrap_err();
    assert_eq!(err.idempotency().unwrap().kind(), ErrorKind::FailFast);
    assert!(err.to_string().contains("in progress"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

// ---- failure caching -------------------------------------------------------------------

#[tokio::test]
async fn failure_without_cache_failures_is_released_and_a_retry_runs_again() {
    let (exec, _, store) = memory();
    let t = tool("send_email", Policy::default());
    let runs = AtomicUsize::new(0);
    assert!(matches!(
        send_failing(&exec, &t, &runs).await,
        Err(CallError::Body(MailError(_)))
    ));
    assert!(store.is_empty(), "the claim is released");
    assert_eq!(exec.events().count(EventKind::Released), 1);
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn failure_with_cache_failures_is_remembered() {
    let (exec, _, store) = memory();
    let t = tool("send_email", Policy::default().with_cache_failures(true));
    let runs = AtomicUsize::new(0);
    let _ = send_failing(&exec, &t, &runs).await;
    let page = store.list(&ListFilter::default(), None).await.unwrap();
    assert_eq!(page.records.len(), 1);
    match &page.records[0].outcome {
        Some(Outcome::Failure(f)) => assert_eq!(
            (f.error_type.as_str(), f.message.as_str()),
            ("MailError", "mailbox full")
        ),
        other => panic!("{other:?}"),
    }
}

// ---- TTL, leases, deadlines ------------------------------------------------------------

#[tokio::test]
async fn ttl_expiry_with_a_moved_clock_runs_again() {
    let (exec, clock, _) = memory();
    let t = tool(
        "send_email",
        Policy::default().with_ttl(Duration::from_secs(60)),
    );
    let runs = AtomicUsize::new(0);
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    clock.advance(Duration::from_secs(59));
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "still remembered before the TTL ends"
    );
    clock.advance(Duration::from_secs(1));
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "free again once the TTL ended"
    );
}

#[tokio::test]
async fn abandoned_lease_fails_with_indeterminate_outcome_naming_tool_and_key() {
    for behavior in [
        RetryBehavior::ReturnCached,
        RetryBehavior::ReturnCachedIfSuccess,
        RetryBehavior::FailFast,
    ] {
        let (exec, clock, _) = memory();
        let t = tool(
            "charge_card",
            Policy::default()
                .with_lease(Duration::from_secs(30))
                .with_on_cache_hit(behavior),
        );
        let mut holder = exec
            .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
            .unwrap();
        assert_eq!(exec.advance(&mut holder, None).await.unwrap(), Step::Run);
        // The holder dies; its lease ends.
        clock.advance(Duration::from_secs(30));
        let runs = AtomicUsize::new(0);
        let err = send(&exec, &t, KeyInput::Json(INPUT), &runs)
            .await
            .unwrap_err();
        let err = err.idempotency().unwrap();
        assert_eq!(err.kind(), ErrorKind::Indeterminate, "{behavior:?}");
        let text = err.to_string();
        assert!(
            text.contains("charge_card") && text.contains(&holder.key().unwrap().hex()),
            "{text}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        assert_eq!(exec.events().count(EventKind::Indeterminate), 1);
    }
}

#[tokio::test]
async fn a_late_outcome_turns_abandoned_into_completed() {
    let (exec, clock, _) = memory();
    let t = tool(
        "charge_card",
        Policy::default().with_lease(Duration::from_secs(30)),
    );
    let mut holder = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    exec.advance(&mut holder, None).await.unwrap();
    clock.advance(Duration::from_secs(31));
    assert_eq!(
        exec.succeed(&mut holder, r#""sent""#).await,
        idemkit::Recording::Recorded
    );
    let runs = AtomicUsize::new(0);
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_waiter_past_its_deadline_fails_with_in_progress_and_runs_nothing() {
    let (exec, _, _) = memory();
    let slow = tool("send_email", Policy::default());
    let mut holder = exec
        .prepare(&slow, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    exec.advance(&mut holder, None).await.unwrap();
    let waiting = Tool::with_timeout(
        "send_email",
        Policy::default(),
        Some(Duration::from_millis(150)),
    )
    .unwrap();
    let runs = AtomicUsize::new(0);
    let started = Instant::now();
    let err = send(&exec, &waiting, KeyInput::Json(INPUT), &runs)
        .await
        .unwrap_err();
    assert_eq!(err.idempotency().unwrap().kind(), ErrorKind::InProgress);
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(exec.events().count(EventKind::WaitTimedOut), 1);
}

#[tokio::test]
async fn a_body_overrunning_the_deadline_leaves_its_claim_in_progress() {
    let (exec, _, store) = memory();
    let t = Tool::with_timeout(
        "send_email",
        Policy::default(),
        Some(Duration::from_millis(100)),
    )
    .unwrap();
    let r: Result<String, CallError<MailError>> = exec
        .call(&t, &CallContext::new(), KeyInput::Json(INPUT), |_| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok("late".to_string())
        })
        .await;
    assert_eq!(kind(r), ErrorKind::Timeout);
    let page = store.list(&ListFilter::default(), None).await.unwrap();
    assert_eq!(page.records.len(), 1);
    assert_eq!(page.records[0].status(page.now_ms), Status::InProgress);
}

#[tokio::test]
async fn a_two_step_caller_with_a_budget_gets_pending_then_the_result() {
    let (exec, _, _) = memory();
    let t = tool("send_email", Policy::default());
    let mut holder = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    exec.advance(&mut holder, None).await.unwrap();
    let mut waiter = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    let step = exec
        .advance(&mut waiter, Some(Duration::from_millis(20)))
        .await
        .unwrap();
    assert_eq!(step, Step::Pending);
    exec.succeed(&mut holder, r#""sent""#).await;
    let step = exec
        .advance(&mut waiter, Some(Duration::from_millis(100)))
        .await
        .unwrap();
    assert_eq!(step, Step::Replay(r#""sent""#.into()));
    assert_eq!(exec.events().count(EventKind::Waited), 1);
}

#[tokio::test]
async fn a_waiters_waited_event_carries_how_long_it_waited_in_milliseconds() {
    let (exec, _, _) = memory();
    let details = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = details.clone();
    exec.events()
        .subscribe(Arc::new(move |e: &idemkit::Event<'_>| {
            if e.kind == EventKind::Waited {
                seen.lock()
                    .unwrap()
                    .push(e.detail.unwrap_or("none").to_owned());
            }
        }));
    let t = tool("send_email", Policy::default());
    let mut holder = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    exec.advance(&mut holder, None).await.unwrap();
    let mut waiter = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    let span = Instant::now();
    // The wait spans two steps: its length is counted from the first.
    let step = exec
        .advance(&mut waiter, Some(Duration::from_millis(20)))
        .await
        .unwrap();
    assert_eq!(step, Step::Pending);
    exec.succeed(&mut holder, r#""sent""#).await;
    let step = exec
        .advance(&mut waiter, Some(Duration::from_millis(100)))
        .await
        .unwrap();
    let within = span.elapsed().as_millis();
    assert_eq!(step, Step::Replay(r#""sent""#.into()));
    let details = details.lock().unwrap();
    assert_eq!(details.len(), 1, "one waited event: {details:?}");
    let waited: u128 = details[0]
        .parse()
        .unwrap_or_else(|_| panic!("the detail is whole milliseconds: {:?}", details[0]));
    assert!(
        waited <= within,
        "waited {waited} ms within a span of {within} ms"
    );
}

// ---- concurrency -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_identical_calls_run_the_body_once_and_all_get_its_result() {
    let (exec, _, _) = memory();
    let t = tool("book", Policy::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(64));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (exec, t, runs, barrier) = (exec.clone(), t.clone(), runs.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            exec.call(&t, &CallContext::new(), KeyInput::Json(INPUT), |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok::<_, MailError>("booked".to_string())
            })
            .await
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), "booked");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(exec.events().count(EventKind::Deduplicated), 63);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_fail_fast_calls_run_once_and_63_get_the_fail_fast_error() {
    let (exec, _, _) = memory();
    let t = tool(
        "book",
        Policy::default().with_on_cache_hit(RetryBehavior::FailFast),
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(tokio::sync::Barrier::new(64));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (exec, t, runs, refused, barrier) = (
            exec.clone(),
            t.clone(),
            runs.clone(),
            refused.clone(),
            barrier.clone(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let r = exec
                .call(&t, &CallContext::new(), KeyInput::Json(INPUT), |_| async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    // Hold the claim until every other caller has been refused (bounded).
                    for _ in 0..500 {
                        if refused.load(Ordering::SeqCst) == 63 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Ok::<_, MailError>("booked".to_string())
                })
                .await;
            if r.is_err() {
                refused.fetch_add(1, Ordering::SeqCst);
            }
            r
        }));
    }
    let mut kinds = Vec::new();
    for task in tasks {
        if let Err(e) = task.await.unwrap() {
            kinds.push(e.idempotency().unwrap().kind());
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(kinds.len(), 63);
    assert!(kinds.iter().all(|k| *k == ErrorKind::FailFast));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn waiters_woken_by_a_release_claim_again_and_one_runs() {
    let (exec, _, _) = memory();
    let t = tool("book", Policy::default());
    let mut holder = exec
        .prepare(&t, &CallContext::new(), KeyInput::Json(INPUT))
        .unwrap();
    exec.advance(&mut holder, None).await.unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (exec, t, runs) = (exec.clone(), t.clone(), runs.clone());
        tasks.push(tokio::spawn(async move {
            exec.call(&t, &CallContext::new(), KeyInput::Json(INPUT), |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok::<_, MailError>("second try".to_string())
            })
            .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The first holder's body fails without cacheFailures: its claim is released.
    exec.fail(
        &mut holder,
        &idemkit::Failure::new("Timeout", "smtp timed out"),
    )
    .await;
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap(), "second try");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

// ---- outcome size, store faults --------------------------------------------------------

#[tokio::test]
async fn a_result_larger_than_the_store_keeps_is_returned_once_and_repeats_get_outcome_too_large() {
    let store = Arc::new(MemoryStore::new().with_max_outcome_bytes(16));
    let exec = Executor::new(store);
    let t = tool("export", Policy::default());
    let runs = AtomicUsize::new(0);
    let big = "x".repeat(100);
    let ctx = CallContext::new();
    let call = || {
        exec.call(&t, &ctx, KeyInput::Json(INPUT), |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, MailError>(big.clone())
        })
    };
    assert_eq!(call().await.unwrap(), big);
    assert_eq!(kind(call().await), ErrorKind::OutcomeTooLarge);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A real memory store behind a switch that makes chosen operations fail, as an unreachable
/// server would. (Stopped Redis/PostgreSQL servers are tested in the store tests.)
struct Unreliable {
    inner: Arc<MemoryStore>,
    claims_fail: AtomicBool,
    completes_fail: AtomicBool,
    /// Claims fail at once but land 150 ms later, as a statement queued on a paused server
    /// runs when it resumes, after its client gave up.
    claims_land_late: AtomicBool,
    /// Releases and reads refuse to start once the instant the executor waits for them until
    /// (`store::operation_deadline`) has passed, as a store that blocks a thread on its client (a
    /// store written in Java) must.
    honours_deadlines: AtomicBool,
}

impl Unreliable {
    fn out_of_time(&self) -> Result<(), StoreError> {
        let passed = idemkit::store::operation_deadline().is_some_and(|at| at <= Instant::now());
        if passed && self.honours_deadlines.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable(
                "no time was left before the deadline",
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl Store for Unreliable {
    async fn claim(&self, r: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        if self.claims_fail.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("connection refused"));
        }
        if self.claims_land_late.load(Ordering::SeqCst) {
            let (inner, tenant, key, scope) = (
                self.inner.clone(),
                r.id.tenant.map(str::to_owned),
                *r.id.key,
                r.scope.to_owned(),
            );
            let fingerprint = r.fingerprint.map(str::to_owned);
            let (token, lease_ms, ttl_ms) = (r.token, r.lease_ms, r.ttl_ms);
            let (retry_failure, payload_checked) = (r.retry_failure, r.payload_checked);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(150)).await;
                let late = ClaimRequest {
                    id: RecordId {
                        tenant: tenant.as_deref(),
                        key: &key,
                    },
                    scope: &scope,
                    token,
                    lease_ms,
                    ttl_ms,
                    retry_failure,
                    fingerprint: fingerprint.as_deref(),
                    payload_checked,
                };
                inner.claim(&late).await.unwrap();
            });
            return Err(StoreError::unavailable("connection reset"));
        }
        self.inner.claim(r).await
    }
    async fn complete(
        &self,
        id: RecordId<'_>,
        t: Token,
        o: &Outcome,
        ttl: u64,
    ) -> Result<Completion, StoreError> {
        if self.completes_fail.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("connection reset"));
        }
        self.inner.complete(id, t, o, ttl).await
    }
    async fn release(&self, id: RecordId<'_>, t: Token) -> Result<bool, StoreError> {
        self.out_of_time()?;
        self.inner.release(id, t).await
    }
    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
        self.out_of_time()?;
        self.inner.get(id).await
    }
    async fn list(&self, f: &ListFilter, c: Option<&str>) -> Result<Page, StoreError> {
        self.inner.list(f, c).await
    }
    async fn resolve(
        &self,
        id: RecordId<'_>,
        t: Token,
        r: &Resolution,
    ) -> Result<Resolved, StoreError> {
        self.inner.resolve(id, t, r).await
    }
    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        self.inner.delete(id).await
    }
    async fn forget(&self, t: Option<&str>) -> Result<u64, StoreError> {
        self.inner.forget(t).await
    }
    async fn purge_expired(&self) -> Result<u64, StoreError> {
        self.inner.purge_expired().await
    }
    fn describe(&self) -> String {
        "unreliable memory".into()
    }
}

fn unreliable() -> Arc<Unreliable> {
    Arc::new(Unreliable {
        inner: Arc::new(MemoryStore::new()),
        claims_fail: AtomicBool::new(false),
        completes_fail: AtomicBool::new(false),
        claims_land_late: AtomicBool::new(false),
        honours_deadlines: AtomicBool::new(false),
    })
}

/// SPEC v1.1 rules 4 and 5: a claim whose reply was lost may land after the executor's first
/// release found nothing (a statement queued on a paused server runs when it resumes). The
/// release is tried again until the lease ends, so the late claim is freed and the next call
/// runs, instead of finding it in progress and, at the lease end, indeterminate.
#[tokio::test]
async fn a_lost_claim_that_lands_after_its_first_release_is_still_released() {
    let store = unreliable();
    store.claims_land_late.store(true, Ordering::SeqCst);
    let exec = Executor::new(store.clone());
    let t = tool(
        "charge_card",
        Policy::default().with_lease(Duration::from_secs(2)),
    );
    let runs = AtomicUsize::new(0);
    assert_eq!(
        kind(send(&exec, &t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::StoreUnavailable
    );
    store.claims_land_late.store(false, Ordering::SeqCst);
    // Ordering, not timing: the late claim has landed (150 ms) before the next call claims.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(exec.events().count(EventKind::Indeterminate), 0);
}

/// A lost claim that never lands needs no release: the release looks for it until the lease
/// ends and then stops without reporting a store error.
#[tokio::test]
async fn a_lost_claim_that_never_lands_ends_without_a_store_error() {
    let store = unreliable();
    store.claims_fail.store(true, Ordering::SeqCst);
    let exec = Executor::new(store.clone());
    let lease = Duration::from_millis(600);
    let t = tool("charge_card", Policy::default().with_lease(lease));
    let runs = AtomicUsize::new(0);
    assert_eq!(
        kind(send(&exec, &t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::StoreUnavailable
    );
    store.claims_fail.store(false, Ordering::SeqCst);
    tokio::time::sleep(lease + Duration::from_millis(400)).await;
    // The one store error is the claim's; the release that found nothing added none.
    assert_eq!(exec.events().count(EventKind::StoreError), 1);
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// The same on a store that refuses an operation with no time left (a store written in Java): the
/// release stops at the lease end instead of making one last try that has no time, fails, and is
/// reported as "could not release a claim whose body never ran".
#[tokio::test]
async fn a_lost_claim_that_never_lands_ends_without_a_store_error_on_a_store_that_keeps_deadlines()
{
    let store = unreliable();
    store.claims_fail.store(true, Ordering::SeqCst);
    store.honours_deadlines.store(true, Ordering::SeqCst);
    let exec = Executor::new(store.clone());
    let lease = Duration::from_millis(600);
    let t = tool("charge_card", Policy::default().with_lease(lease));
    let runs = AtomicUsize::new(0);
    assert_eq!(
        kind(send(&exec, &t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::StoreUnavailable
    );
    store.claims_fail.store(false, Ordering::SeqCst);
    tokio::time::sleep(lease + Duration::from_millis(400)).await;
    assert_eq!(exec.events().count(EventKind::StoreError), 1);
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_store_error_never_reads_as_permission_and_the_body_does_not_run() {
    let store = unreliable();
    store.claims_fail.store(true, Ordering::SeqCst);
    let exec = Executor::new(store.clone());
    let t = tool("charge_card", Policy::default());
    let runs = AtomicUsize::new(0);
    let err = send(&exec, &t, KeyInput::Json(INPUT), &runs)
        .await
        .unwrap_err();
    let err = err.idempotency().unwrap();
    assert_eq!(err.kind(), ErrorKind::StoreUnavailable);
    assert!(err.to_string().contains("charge_card"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(exec.events().count(EventKind::StoreError), 1);
    // When the store is back, calls work again.
    store.claims_fail.store(false, Ordering::SeqCst);
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn when_recording_fails_after_success_the_caller_gets_its_result_and_the_claim_is_never_rerun(
) {
    let store = unreliable();
    let exec = Executor::new(store.clone());
    let lease = Duration::from_millis(800);
    let t = tool("charge_card", Policy::default().with_lease(lease));
    let runs = AtomicUsize::new(0);
    store.completes_fail.store(true, Ordering::SeqCst);
    let started = Instant::now();
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the caller is not held"
    );
    // Recording is retried until the lease ends; only then is it reported as failed.
    assert_eq!(exec.events().count(EventKind::RecordFailed), 0);
    tokio::time::sleep(lease + Duration::from_millis(300)).await;
    assert_eq!(exec.events().count(EventKind::RecordFailed), 1);
    store.completes_fail.store(false, Ordering::SeqCst);
    // The claim was left to become abandoned: a repeat is told so, and never re-runs.
    assert_eq!(
        kind(send(&exec, &t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::Indeterminate
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn listeners_receive_every_event_with_tool_and_key() {
    let (exec, _, _) = memory();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    exec.events()
        .subscribe(Arc::new(move |e: &idemkit::Event<'_>| {
            sink.lock()
                .unwrap()
                .push((e.kind, e.tool.to_string(), e.key.map(|k| k.hex())));
        }));
    let t = tool("send_email", Policy::default());
    let runs = AtomicUsize::new(0);
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap();
    let seen = seen.lock().unwrap();
    let kinds: Vec<EventKind> = seen.iter().map(|e| e.0).collect();
    assert_eq!(kinds, vec![EventKind::Acquired, EventKind::Deduplicated]);
    assert!(seen
        .iter()
        .all(|e| e.1 == "send_email" && e.2.as_ref().is_some_and(|k| k.len() == 64)));
}

// ---- one deadline rule for every face (SPEC v1.1 rule 3), through `report` -----------------

/// A tool with a 100 ms deadline and a 30 s lease.
fn deadline_tool(name: &str, policy: Policy) -> Tool {
    Tool::with_timeout(
        name,
        policy.with_lease(Duration::from_secs(30)),
        Some(Duration::from_millis(100)),
    )
    .unwrap()
}

fn json_input(json: &str) -> idemkit::RawInput<'_> {
    idemkit::RawInput {
        json: Some(json),
        supplied_key: None,
    }
}

/// Claims `tool` for `INPUT` through the two-step protocol, as a face does.
async fn claimed(exec: &Executor, t: &Tool) -> idemkit::Attempt {
    let mut attempt = exec
        .prepare_raw(t, &CallContext::new(), json_input(INPUT))
        .unwrap();
    assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
    attempt
}

fn timeout_of(answer: idemkit::Answer) -> Error {
    match answer {
        idemkit::Answer::Error(e) if e.kind() == ErrorKind::Timeout => e,
        other => panic!("expected the timeout error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_rust_body_overrunning_its_deadline_is_cancelled_and_abandoned_at_the_lease_end() {
    let (exec, clock, _) = memory();
    let t = deadline_tool("send_email", Policy::default());
    let started = Instant::now();
    let r: Result<String, CallError<MailError>> = exec
        .call(&t, &CallContext::new(), KeyInput::Json(INPUT), |_| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok("late".to_string())
        })
        .await;
    // The caller gets the timeout at once (the body future is dropped: a cancellation).
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let error = match r {
        Err(CallError::Idempotency(e)) => e,
        other => panic!("expected the timeout, got {other:?}"),
    };
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert!(error.to_string().contains("outcome is unknown"), "{error}");
    // In progress until the lease ends, then abandoned: a repeat runs nothing.
    in_progress_then_indeterminate(&exec, &clock, &t).await;
}

#[tokio::test]
async fn a_body_reported_after_its_deadline_gets_the_timeout_and_its_late_result_is_replayed() {
    let (exec, _, _) = memory();
    let t = deadline_tool("send_email", Policy::default());
    let mut attempt = claimed(&exec, &t).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let reported = exec
        .report(&mut attempt, idemkit::BodyReport::Succeeded(r#""late""#))
        .await;
    assert_eq!(reported.recording, idemkit::Recording::Recorded);
    let error = timeout_of(reported.answer);
    assert!(
        error.to_string().contains("outcome was recorded"),
        "{error}"
    );
    assert_eq!(error.key(), attempt.key_text().as_deref());
    // A late complete is recorded as usual: the repeat replays it.
    let runs = AtomicUsize::new(0);
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "late"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_body_reported_in_time_gets_its_own_answer() {
    let (exec, _, _) = memory();
    let t = deadline_tool("send_email", Policy::default());
    let mut attempt = claimed(&exec, &t).await;
    let reported = exec
        .report(&mut attempt, idemkit::BodyReport::Succeeded(r#""sent""#))
        .await;
    assert!(matches!(reported.answer, idemkit::Answer::Body));
    assert_eq!(reported.recording, idemkit::Recording::Recorded);
}

#[tokio::test]
async fn a_failure_reported_after_its_deadline_gets_the_timeout_and_is_released() {
    let (exec, _, _) = memory();
    let t = deadline_tool("send_email", Policy::default());
    let mut attempt = claimed(&exec, &t).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let failure = idemkit::Failure::new("MailError", "mailbox full");
    let reported = exec
        .report(&mut attempt, idemkit::BodyReport::Failed(&failure))
        .await;
    assert_eq!(reported.recording, idemkit::Recording::Released);
    let error = timeout_of(reported.answer);
    assert!(error.to_string().contains("released"), "{error}");
    let runs = AtomicUsize::new(0);
    assert_eq!(
        send(&exec, &t, KeyInput::Json(INPUT), &runs).await.unwrap(),
        "sent"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_body_leaves_its_claim_in_progress_until_the_lease_ends() {
    let (exec, clock, _) = memory();
    let t = deadline_tool("send_email", Policy::default());
    let mut attempt = claimed(&exec, &t).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let reported = exec
        .report(&mut attempt, idemkit::BodyReport::Cancelled)
        .await;
    assert_eq!(reported.recording, idemkit::Recording::LeftInProgress);
    let error = timeout_of(reported.answer);
    assert!(error.to_string().contains("outcome is unknown"), "{error}");
    in_progress_then_indeterminate(&exec, &clock, &t).await;
}

#[tokio::test]
async fn a_body_that_never_ran_is_released_and_says_so() {
    let (exec, _, _) = memory();
    let t = deadline_tool("send_email", Policy::default());
    let mut attempt = claimed(&exec, &t).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Never ran: no timeout (the face gives its own reason), and the claim is released.
    let reported = exec
        .report(&mut attempt, idemkit::BodyReport::NeverRan)
        .await;
    assert!(matches!(reported.answer, idemkit::Answer::Body));
    assert_eq!(reported.recording, idemkit::Recording::Released);
    let mut again = claimed(&exec, &t).await;
    assert_eq!(
        exec.release_unrun(&mut again).await,
        idemkit::Recording::Released
    );
    // A call that holds no claim has nothing to release.
    assert_eq!(
        exec.release_unrun(&mut again).await,
        idemkit::Recording::Unprotected
    );
}

#[tokio::test]
async fn a_released_failure_is_not_reported_as_recorded() {
    let (exec, _, _) = memory();
    let t = tool("send_email", Policy::default());
    let mut attempt = claimed(&exec, &t).await;
    let failure = idemkit::Failure::new("MailError", "mailbox full");
    assert_eq!(
        exec.fail(&mut attempt, &failure).await,
        idemkit::Recording::Released
    );
    let cached = tool("send_cached", Policy::default().with_cache_failures(true));
    let mut attempt = claimed(&exec, &cached).await;
    assert_eq!(
        exec.fail(&mut attempt, &failure).await,
        idemkit::Recording::Recorded
    );
}

#[tokio::test]
async fn an_unencodable_result_is_settled_like_a_failure_not_left_to_become_abandoned() {
    let (exec, _, _) = memory();
    let t = tool("tally", Policy::default());
    let runs = AtomicUsize::new(0);
    let ctx = CallContext::new();
    let call = || {
        exec.call(&t, &ctx, KeyInput::Json(INPUT), |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            // JSON object keys must be strings: this map does not serialise.
            let mut tally = std::collections::BTreeMap::new();
            tally.insert(vec![1, 2], 3);
            Ok::<_, MailError>(tally)
        })
    };
    let first: Result<std::collections::BTreeMap<Vec<i32>, i32>, _> = call().await;
    let error = match first {
        Err(CallError::Idempotency(e)) => e,
        other => panic!("expected an idemkit error, got {other:?}"),
    };
    assert!(
        error.to_string().contains("does not serialise as JSON"),
        "{error}"
    );
    // Released like a failure: the next call runs again (never indeterminate).
    let second: Result<std::collections::BTreeMap<Vec<i32>, i32>, _> = call().await;
    assert!(matches!(second, Err(CallError::Idempotency(_))));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(exec.events().count(EventKind::Indeterminate), 0);
}

#[tokio::test]
async fn prepare_raw_keys_on_what_the_strategy_uses() {
    let (exec, _, _) = memory();
    let ctx = CallContext::new();
    let hashed = tool("h", Policy::default());
    let from_raw = exec
        .prepare_raw(
            &hashed,
            &ctx,
            idemkit::RawInput {
                json: Some(INPUT),
                supplied_key: Some(idemkit::SuppliedKey::Text("ignored")),
            },
        )
        .unwrap();
    let direct = exec.prepare(&hashed, &ctx, KeyInput::Json(INPUT)).unwrap();
    assert_eq!(from_raw.key(), direct.key());

    let explicit = tool("e", Policy::new(KeyStrategy::Explicit));
    let direct = exec
        .prepare(&explicit, &ctx, KeyInput::Explicit("order-7"))
        .unwrap();
    for supplied in [
        idemkit::SuppliedKey::Text("order-7"),
        idemkit::SuppliedKey::JsonLiteral(r#""order-7""#),
        idemkit::SuppliedKey::JsonLiteral(r#""\u006frder-7""#),
    ] {
        let raw = idemkit::RawInput {
            json: Some(INPUT),
            supplied_key: Some(supplied),
        };
        assert_eq!(
            exec.prepare_raw(&explicit, &ctx, raw).unwrap().key(),
            direct.key()
        );
    }
    // A lone surrogate in a literal key, and a missing key, are invalid keys.
    for supplied in [Some(idemkit::SuppliedKey::JsonLiteral(r#""\ud800""#)), None] {
        let raw = idemkit::RawInput {
            json: Some(INPUT),
            supplied_key: supplied,
        };
        let err = exec.prepare_raw(&explicit, &ctx, raw).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err}");
    }
    // HASH_INPUT without an input is refused naming it; UUID and NONE read nothing.
    let err = exec
        .prepare_raw(&hashed, &ctx, idemkit::RawInput::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Configuration);
    assert!(err.to_string().contains("HASH_INPUT"), "{err}");
    let uuid = tool("u", Policy::new(KeyStrategy::Uuid));
    let attempt = exec
        .prepare_raw(&uuid, &ctx, idemkit::RawInput::default())
        .unwrap();
    assert_eq!(attempt.key_text().map(|k| k.len()), Some(36));
}

/// A repeat finds the claim in progress, then abandoned (indeterminate) once the 30 s lease has
/// ended; neither repeat runs the body.
async fn in_progress_then_indeterminate(exec: &Executor, clock: &ManualClock, t: &Tool) {
    let runs = AtomicUsize::new(0);
    assert_eq!(
        kind(send(exec, t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::InProgress
    );
    clock.advance(Duration::from_secs(31));
    assert_eq!(
        kind(send(exec, t, KeyInput::Json(INPUT), &runs).await),
        ErrorKind::Indeterminate
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A body's error keeps its source chain through `CallError`: the report of a failed call shows
/// the body's error once and then its causes, and the body's error itself is reachable.
#[tokio::test]
async fn a_body_error_keeps_its_source_chain() {
    #[derive(Debug, thiserror::Error)]
    #[error("smtp refused the message")]
    struct SmtpError(#[source] std::io::Error);

    let (exec, _, _) = memory();
    let tool = tool("send_email", Policy::default());
    let result: Result<String, _> = exec
        .call(
            &tool,
            &CallContext::new(),
            KeyInput::Json(INPUT),
            |_| async {
                Err(SmtpError(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "connection reset by peer",
                )))
            },
        )
        .await;
    let error = result.unwrap_err();
    assert_eq!(error.to_string(), "smtp refused the message");
    let cause = std::error::Error::source(&error).expect("the body error's source");
    assert_eq!(cause.to_string(), "connection reset by peer");
    assert!(cause.downcast_ref::<std::io::Error>().is_some());
    assert!(error.body().is_some());
    assert!(error.idempotency().is_none());
    // As a boxed error, the whole chain is walked.
    let boxed: Box<dyn std::error::Error> = Box::new(error);
    let chain: Vec<String> = std::iter::successors(Some(&*boxed), |e| e.source())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        chain,
        ["smtp refused the message", "connection reset by peer"]
    );
}
