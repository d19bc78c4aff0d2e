//! The payload fingerprint (SPEC v1.1 rule 9), on the memory store and on real Redis and
//! PostgreSQL servers (`IDEMKIT_REDIS_URL`, `IDEMKIT_POSTGRES_URL`, set by `scripts/test.sh`).
//!
//! - A record keeps the fingerprint of the claiming call's whole input.
//! - An `EXPLICIT` repeat with another payload fails with `PAYLOAD_MISMATCH` and runs nothing,
//!   whether the record is completed or still in progress, when the key came from outside the
//!   application or the policy asks (`reject_payload_mismatch`).
//! - A key the application derives (`EXPLICIT` from a supplier, `HASH_INPUT` with
//!   `key_arguments`) lets the other fields differ, unless the policy asks (SPEC v1.2 §9 rule 1).
//! - A record without a fingerprint (v1) and a call without a payload never mismatch.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idemkit::store::{ClaimRequest, RecordId};
use idemkit::{
    derive_key, fingerprint, CallContext, CallError, ErrorKind, Executor, KeyInput, KeyOrigin,
    KeyScope, KeyStrategy, Outcome, Policy, RawInput, Step, Store, SuppliedKey, Token, Tool,
};
use serde_json::{json, Value};

#[macro_use]
mod common;

/// A tool name no other test (or earlier run on a shared server) uses.
fn fresh(name: &str) -> String {
    format!("{name}_{}", &Token::random().hex()[..8])
}

fn explicit_tool(name: &str) -> Tool {
    Tool::new(fresh(name), Policy::new(KeyStrategy::Explicit)).unwrap()
}

/// An `EXPLICIT` tool that refuses another payload under a used key.
fn strict_tool(name: &str) -> Tool {
    Tool::new(
        fresh(name),
        Policy::new(KeyStrategy::Explicit).with_reject_payload_mismatch(true),
    )
    .unwrap()
}

/// Calls `tool` under the explicit `key` with `payload`; the body counts its runs and answers
/// the payload's amount.
async fn charge(
    executor: &Executor,
    tool: &Tool,
    key: &str,
    payload: &Value,
    runs: &AtomicUsize,
) -> Result<i64, CallError<String>> {
    executor
        .call(
            tool,
            &CallContext::new(),
            KeyInput::ExplicitWithPayload { key, payload },
            |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(payload["amount"].as_i64().unwrap())
            },
        )
        .await
}

fn explicit_key(tool: &Tool, key: &str) -> idemkit::Key {
    derive_key(&KeyScope::new(tool.name()), KeyInput::Explicit(key), &[]).unwrap()
}

async fn record(store: &Arc<dyn Store>, key: &idemkit::Key) -> idemkit::Record {
    let id = RecordId { tenant: None, key };
    store.get(id).await.unwrap().0.expect("a record")
}

fn mismatch<T: std::fmt::Debug>(result: Result<T, CallError<String>>) -> idemkit::Error {
    match result {
        Err(CallError::Idempotency(e)) if e.kind() == ErrorKind::PayloadMismatch => e,
        other => panic!("expected PAYLOAD_MISMATCH, got {other:?}"),
    }
}

async fn an_explicit_repeat_with_another_payload_is_refused_and_runs_nothing(
    store: Arc<dyn Store>,
) {
    let executor = Executor::new(store.clone());
    let tool = strict_tool("charge");
    let runs = AtomicUsize::new(0);
    let first = json!({"amount": 100, "currency": "EUR"});
    assert_eq!(
        charge(&executor, &tool, "abc-123", &first, &runs)
            .await
            .unwrap(),
        100
    );
    let key = explicit_key(&tool, "abc-123");
    let kept = record(&store, &key).await;
    assert_eq!(
        kept.fingerprint,
        fingerprint(KeyInput::Value(&first)).unwrap(),
        "the record keeps the payload's fingerprint"
    );

    // The same payload (members in another order, 100.0 for 100): deduplicated.
    let same = json!({"currency": "EUR", "amount": 100});
    assert_eq!(
        charge(&executor, &tool, "abc-123", &same, &runs)
            .await
            .unwrap(),
        100
    );
    // Another payload under the same key: refused, nothing ran, the record is unchanged.
    let other = json!({"amount": 250, "currency": "EUR"});
    let error = mismatch(charge(&executor, &tool, "abc-123", &other, &runs).await);
    assert_eq!(error.key(), Some(key.hex().as_str()));
    let text = error.to_string();
    assert!(
        text.contains(tool.name()) && text.contains(&key.hex()),
        "{text}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(record(&store, &key).await, kept);

    // An explicit key without a payload cannot be compared: it gets the remembered result.
    let plain = executor
        .call(
            &tool,
            &CallContext::new(),
            KeyInput::Explicit("abc-123"),
            |_| async { Ok::<i64, String>(-1) },
        )
        .await
        .unwrap();
    assert_eq!(plain, 100);
}

async fn a_mismatch_against_an_in_progress_claim_is_refused_without_waiting(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let tool = Tool::new(
        fresh("book"),
        Policy::new(KeyStrategy::Explicit)
            .with_lease(Duration::from_secs(60))
            .with_reject_payload_mismatch(true),
    )
    .unwrap();
    let first = json!({"flight": "BA117"});
    // The first call holds the claim (its body "runs" and has not reported).
    let mut holder = executor
        .prepare(
            &tool,
            &CallContext::new(),
            KeyInput::ExplicitWithPayload {
                key: "req-1",
                payload: &first,
            },
        )
        .unwrap();
    assert!(matches!(
        executor.advance(&mut holder, None).await.unwrap(),
        Step::Run
    ));
    let runs = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let other = json!({"flight": "LH400", "amount": 1});
    mismatch(charge(&executor, &tool, "req-1", &other, &runs).await);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "refused at once, not after waiting for the holder's lease"
    );
    // The holder is undisturbed: it still completes.
    let recording = executor.succeed(&mut holder, "\"booked\"").await;
    assert_eq!(recording.name(), "recorded", "the holder completes");
    let kept = record(&store, &explicit_key(&tool, "req-1")).await;
    assert_eq!(kept.outcome, Some(Outcome::success("\"booked\"").unwrap()));
}

async fn key_arguments_let_other_arguments_differ_unless_the_policy_refuses_it(
    store: Arc<dyn Store>,
) {
    let executor = Executor::new(store.clone());
    let book = |reject: bool| {
        Tool::new(
            fresh("book_flight"),
            Policy::new(KeyStrategy::HashInput)
                .with_key_arguments(["flight"])
                .with_reject_payload_mismatch(reject),
        )
        .unwrap()
    };
    let call = |tool: Tool, input: &'static str, runs: Arc<AtomicUsize>| {
        let executor = executor.clone();
        async move {
            executor
                .call(
                    &tool,
                    &CallContext::new(),
                    KeyInput::Json(input),
                    |_| async {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, String>(input.to_owned())
                    },
                )
                .await
        }
    };
    let first = r#"{"flight":"BA117","request_id":"r-1"}"#;
    let retry = r#"{"flight":"BA117","request_id":"r-2"}"#;

    // Default: request_id is fresh per attempt, and the booking is answered from the record.
    let lenient = book(false);
    let runs = Arc::new(AtomicUsize::new(0));
    call(lenient.clone(), first, runs.clone()).await.unwrap();
    assert_eq!(
        call(lenient.clone(), retry, runs.clone()).await.unwrap(),
        first
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Asked for: the whole input must match.
    let strict = book(true);
    let runs = Arc::new(AtomicUsize::new(0));
    call(strict.clone(), first, runs.clone()).await.unwrap();
    assert_eq!(
        call(strict.clone(), first, runs.clone()).await.unwrap(),
        first
    );
    mismatch(call(strict.clone(), retry, runs.clone()).await);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let key = derive_key(
        &KeyScope::new(strict.name()),
        KeyInput::Json(first),
        &["flight".to_owned()],
    )
    .unwrap();
    assert_eq!(
        record(&store, &key).await.fingerprint,
        fingerprint(KeyInput::Json(first)).unwrap(),
        "the fingerprint covers the whole input, not only the key arguments"
    );
}

async fn a_record_without_a_fingerprint_never_mismatches(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let tool = explicit_tool("legacy");
    let key = explicit_key(&tool, "v1-key");
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    // A record as idemkit 1.0 made it: no fingerprint.
    let token = Token::random();
    let request = ClaimRequest {
        id,
        scope: tool.scope(),
        token,
        lease_ms: 60_000,
        ttl_ms: 60_000,
        retry_failure: false,
        fingerprint: None,
        payload_checked: false,
    };
    store.claim(&request).await.unwrap();
    store
        .complete(id, token, &Outcome::success("7").unwrap(), 60_000)
        .await
        .unwrap();
    assert_eq!(record(&store, &key).await.fingerprint, None);
    let runs = AtomicUsize::new(0);
    let any = json!({"amount": 999});
    let replayed = executor
        .call(
            &tool,
            &CallContext::new(),
            KeyInput::ExplicitWithPayload {
                key: "v1-key",
                payload: &any,
            },
            |_| async {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<i64, String>(0)
            },
        )
        .await
        .unwrap();
    assert_eq!(replayed, 7);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// The faces' path (Java, C): `prepare_raw_with_payload` takes an `EXPLICIT` call's JSON input as
/// its payload; `prepare_raw`, whose `json` the faces fill with the supplied key itself (C: any
/// text, not JSON), keeps no fingerprint and still works.
async fn a_faces_explicit_call_passes_its_input_as_the_payload(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let tool = strict_tool("face_charge");
    // As the C face calls it today: the key text in both fields.
    let as_c = RawInput {
        json: Some("k-0 not json"),
        supplied_key: Some(SuppliedKey::Text("k-0 not json")),
    };
    let mut plain = executor
        .prepare_raw(&tool, &CallContext::new(), as_c)
        .expect("the key text is not taken for a payload");
    assert!(matches!(
        executor.advance(&mut plain, None).await.unwrap(),
        Step::Run
    ));
    assert_eq!(executor.succeed(&mut plain, "0").await.name(), "recorded");
    let plain_key = explicit_key(&tool, "k-0 not json");
    assert_eq!(record(&store, &plain_key).await.fingerprint, None);

    let raw = RawInput {
        json: None,
        supplied_key: Some(SuppliedKey::Text("k-1")),
    };
    let prepare = |payload: &'static str| {
        executor.prepare_raw_with_payload(&tool, &CallContext::new(), raw, Some(payload))
    };
    let mut first = prepare(r#"{"amount":1}"#).unwrap();
    assert!(matches!(
        executor.advance(&mut first, None).await.unwrap(),
        Step::Run
    ));
    assert_eq!(executor.succeed(&mut first, "1").await.name(), "recorded");
    let key = explicit_key(&tool, "k-1");
    assert_eq!(
        record(&store, &key).await.fingerprint,
        fingerprint(KeyInput::Json(r#"{"amount":1}"#)).unwrap()
    );
    let mut same = prepare(r#"{"amount":1.0}"#).unwrap();
    assert_eq!(
        executor.advance(&mut same, None).await.unwrap(),
        Step::Replay("1".to_owned())
    );
    let mut other = prepare(r#"{"amount":2}"#).unwrap();
    let error = executor.advance(&mut other, None).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::PayloadMismatch);
    assert_eq!(error.kind().code(), 11);
}

/// The seed's `create_issue`: the application keys on the title so that an edited body does
/// not open a second issue (SPEC v1.2 §9 rule 1). A key the application derives checks the
/// payload only when the policy asks; the fingerprint is kept either way.
async fn an_application_key_lets_the_other_fields_differ_unless_the_policy_refuses_it(
    store: Arc<dyn Store>,
) {
    let executor = Executor::new(store.clone());
    let runs = AtomicUsize::new(0);
    let create_issue = |tool: &Tool, body: &str| {
        let input = json!({"title": "Login fails", "body": body});
        let (executor, tool, runs) = (&executor, tool.clone(), &runs);
        async move {
            executor
                .call(
                    &tool,
                    &CallContext::new(),
                    KeyInput::ExplicitWithPayload {
                        key: input["title"].as_str().unwrap(),
                        payload: &input,
                    },
                    |_| async {
                        let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                        Ok::<_, String>(format!("issue #{n}"))
                    },
                )
                .await
        }
    };
    let lenient = explicit_tool("create_issue");
    assert_eq!(
        create_issue(&lenient, "500 on submit").await.unwrap(),
        "issue #1"
    );
    let edited = create_issue(&lenient, "500 on submit (Firefox only)").await;
    assert_eq!(
        edited.unwrap(),
        "issue #1",
        "the edited body is answered from the record"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one issue");
    let kept = record(&store, &explicit_key(&lenient, "Login fails")).await;
    let first = json!({"title": "Login fails", "body": "500 on submit"});
    assert_eq!(
        kept.fingerprint,
        fingerprint(KeyInput::Value(&first)).unwrap(),
        "the fingerprint is stored though it is not checked"
    );

    // Opted in: the whole input must match.
    let strict = strict_tool("create_issue");
    assert_eq!(
        create_issue(&strict, "500 on submit").await.unwrap(),
        "issue #2"
    );
    mismatch(create_issue(&strict, "edited").await);
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // A key from outside the application (a caller's Idempotency-Key) is checked by default,
    // on the Rust face and on the faces' path alike.
    let inbound = explicit_tool("create_issue");
    let call = |payload: Value| {
        let (executor, tool, runs) = (&executor, &inbound, &runs);
        async move {
            executor
                .call(
                    tool,
                    &CallContext::new(),
                    KeyInput::OutsideKey {
                        key: "req-7",
                        payload: &payload,
                    },
                    |_| async {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, String>("created".to_owned())
                    },
                )
                .await
        }
    };
    call(json!({"title": "a", "body": "b"})).await.unwrap();
    mismatch(call(json!({"title": "a", "body": "edited"})).await);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    let raw = RawInput {
        json: None,
        supplied_key: Some(SuppliedKey::Text("req-7")),
    };
    let mut face = executor
        .prepare_raw_with_payload_from(
            &inbound,
            &CallContext::new(),
            raw,
            Some(r#"{"title":"a","body":"edited"}"#),
            KeyOrigin::Outside,
        )
        .unwrap();
    let error = executor.advance(&mut face, None).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::PayloadMismatch);
    let mut supplied = executor
        .prepare_raw_with_payload(
            &inbound,
            &CallContext::new(),
            raw,
            Some(r#"{"title":"a","body":"edited"}"#),
        )
        .unwrap();
    assert_eq!(
        executor.advance(&mut supplied, None).await.unwrap(),
        Step::Replay("\"created\"".to_owned()),
        "the same key from a supplier is the application's: answered from the record"
    );
}

/// `RETURN_CACHED_IF_SUCCESS` runs a remembered failure again, but a call with another payload
/// gets the payload mismatch instead: the store's claim does not replace the failure for it.
async fn a_remembered_failure_is_retried_only_for_the_same_payload(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let tool = Tool::new(
        fresh("charge_retry"),
        Policy::new(KeyStrategy::Explicit)
            .with_on_cache_hit(idemkit::RetryBehavior::ReturnCachedIfSuccess)
            .with_cache_failures(true)
            .with_reject_payload_mismatch(true),
    )
    .unwrap();
    let runs = AtomicUsize::new(0);
    let call = |payload: Value, fails: bool| {
        let (executor, tool, runs) = (&executor, &tool, &runs);
        async move {
            executor
                .call(
                    tool,
                    &CallContext::new(),
                    KeyInput::ExplicitWithPayload {
                        key: "order-9",
                        payload: &payload,
                    },
                    |_| async {
                        runs.fetch_add(1, Ordering::SeqCst);
                        if fails {
                            Err("declined".to_owned())
                        } else {
                            Ok::<i64, String>(payload["amount"].as_i64().unwrap())
                        }
                    },
                )
                .await
        }
    };
    assert!(matches!(
        call(json!({"amount": 5}), true).await,
        Err(CallError::Body(_))
    ));
    let key = explicit_key(&tool, "order-9");
    let failed = record(&store, &key).await;
    assert!(matches!(failed.outcome, Some(Outcome::Failure(_))));

    mismatch(call(json!({"amount": 6}), false).await);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "another payload ran nothing"
    );
    assert_eq!(
        record(&store, &key).await,
        failed,
        "the failure is unchanged"
    );

    assert_eq!(call(json!({"amount": 5}), false).await.unwrap(), 5);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the same payload ran again");
}

on_every_store!(
    an_explicit_repeat_with_another_payload_is_refused_and_runs_nothing,
    a_mismatch_against_an_in_progress_claim_is_refused_without_waiting,
    key_arguments_let_other_arguments_differ_unless_the_policy_refuses_it,
    a_record_without_a_fingerprint_never_mismatches,
    a_faces_explicit_call_passes_its_input_as_the_payload,
    a_remembered_failure_is_retried_only_for_the_same_payload,
    an_application_key_lets_the_other_fields_differ_unless_the_policy_refuses_it,
);
