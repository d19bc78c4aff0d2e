//! Tools whose upstream honours the `Idempotency-Key` (SPEC v1.1 rule 12), on the memory store
//! and on real Redis and PostgreSQL servers (`IDEMKIT_REDIS_URL`, `IDEMKIT_POSTGRES_URL`).
//!
//! - What a failed exchange means is decided by the core from what the face saw: a request that
//!   never reached the upstream is sent again; one that reached it is sent again (same key, claim
//!   kept) only when the upstream honours the key; otherwise the outcome is unknown and settled
//!   by the effect (`EFFECTFUL` holds it).
//! - An abandoned claim of a key-honouring tool is taken over by one later call, which sends the
//!   request again under the same key; without the declaration it stays indeterminate.
//! - One key can be released or resolved in-process (`settle_key`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idemkit::store::{settle_key, KeySettled, RecordId, Resolution};
use idemkit::{
    Answer, BodyReport, CallContext, Effect, ErrorKind, Exchange, Executor, Failure, KeyInput,
    Outcome, Policy, Recording, RetryPolicy, Step, Store, Token, Tool,
};

#[macro_use]
mod common;

fn input() -> String {
    format!(r#"{{"amount":1200,"order":"{}"}}"#, Token::random().hex())
}

fn honoring(name: &str, lease: Duration, timeout: Option<Duration>) -> Tool {
    let policy = Policy::default()
        .with_lease(lease)
        .with_effect(Effect::Effectful)
        .with_upstream_honors_key(true);
    Tool::with_timeout(name, policy, timeout).unwrap()
}

fn http_error(status: u16) -> Failure {
    Failure::new("WebServiceException", format!("answered {status}"))
}

fn types() -> Vec<String> {
    vec!["WebServiceException".to_owned()]
}

/// A call cut short while its request was out (the face reports it cancelled) leaves its claim;
/// after the lease a call of the same request takes it over, runs (sends) once more under the
/// same key and records the answer. Without the declaration the claim reads as indeterminate.
async fn an_abandoned_claim_is_taken_over_only_when_the_upstream_honours_the_key(
    store: Arc<dyn Store>,
) {
    let exec = Executor::new(store.clone());
    let input = input();
    for honors in [true, false] {
        let policy = Policy::default()
            .with_lease(Duration::from_millis(300))
            .with_effect(Effect::Effectful)
            .with_upstream_honors_key(honors);
        let tool = Tool::new(format!("charge_{honors}"), policy).unwrap();
        let context = CallContext::new();
        let mut first = exec
            .prepare(&tool, &context, KeyInput::Json(&input))
            .unwrap();
        assert_eq!(exec.advance(&mut first, None).await.unwrap(), Step::Run);
        let cut = exec.report(&mut first, BodyReport::Cancelled).await;
        assert_eq!(cut.recording, Recording::LeftInProgress);
        tokio::time::sleep(Duration::from_millis(450)).await;

        let mut later = exec
            .prepare(&tool, &context, KeyInput::Json(&input))
            .unwrap();
        assert_eq!(later.key(), first.key(), "the same request, the same key");
        let step = exec.advance(&mut later, None).await;
        if !honors {
            let error = step.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Indeterminate, "{error}");
            assert!(
                error.to_string().contains("IdempotencyStore.releaseKey"),
                "{error}"
            );
            continue;
        }
        assert_eq!(
            step.unwrap(),
            Step::Run,
            "taken over: the request is sent again"
        );
        let id = RecordId {
            tenant: None,
            key: later.key().unwrap(),
        };
        let (record, _) = store.get(id).await.unwrap();
        assert_eq!(
            record.unwrap().token,
            later.token(),
            "the owner token moved"
        );
        let done = exec
            .report(&mut later, BodyReport::Succeeded(r#"{"charge":"ch_1"}"#))
            .await;
        assert_eq!(done.recording, Recording::Recorded);
        // The first caller's late outcome no longer lands on the record.
        let mut repeat = exec
            .prepare(&tool, &context, KeyInput::Json(&input))
            .unwrap();
        assert_eq!(
            exec.advance(&mut repeat, None).await.unwrap(),
            Step::Replay(r#"{"charge":"ch_1"}"#.to_owned())
        );
    }
}

/// 16 concurrent calls of one request whose claim is abandoned: exactly one takes it over and
/// sends; the others wait for it (here until their deadline).
async fn concurrent_calls_take_an_abandoned_claim_over_once(store: Arc<dyn Store>) {
    let exec = Executor::new(store.clone());
    let tool = honoring(
        "charge_race",
        Duration::from_millis(400),
        Some(Duration::from_millis(200)),
    );
    let input = input();
    let mut first = exec
        .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
        .unwrap();
    assert_eq!(exec.advance(&mut first, None).await.unwrap(), Step::Run);
    exec.report(&mut first, BodyReport::Cancelled).await;
    tokio::time::sleep(Duration::from_millis(550)).await;

    let runs = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (exec, tool, input, runs, start) = (
            exec.clone(),
            tool.clone(),
            input.clone(),
            runs.clone(),
            start.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut attempt = exec
                .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
                .unwrap();
            start.wait().await;
            match exec.advance(&mut attempt, None).await {
                Ok(Step::Run) => {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Some(attempt)
                }
                Ok(other) => panic!("unexpected step {other:?}"),
                Err(error) => {
                    assert_eq!(error.kind(), ErrorKind::InProgress, "{error}");
                    None
                }
            }
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        if let Some(attempt) = task.await.unwrap() {
            winners.push(attempt);
        }
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "one take-over among 16 calls"
    );
    let mut winner = winners.pop().unwrap();
    exec.release_unrun(&mut winner).await;
}

/// A 5xx from a key-honouring upstream: the claim is kept while the request is sent again
/// (another caller meanwhile finds it in progress); when the retry budget ends, it is released.
async fn a_5xx_is_sent_again_with_the_claim_kept_when_the_upstream_honours_the_key(
    store: Arc<dyn Store>,
) {
    let exec = Executor::new(store.clone());
    let tool = honoring("charge_5xx", Duration::from_secs(60), None);
    let input = input();
    let mut attempt = exec
        .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
        .unwrap();
    attempt.set_retry(Some(
        RetryPolicy::attempts(3).with_backoff(Duration::from_millis(1), Duration::from_millis(2)),
    ));
    let key = *attempt.key().unwrap();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    for run in 1..=3 {
        assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
        assert_eq!(attempt.runs(), run);
        let reported = exec
            .report_exchange(
                &mut attempt,
                &http_error(503),
                &types(),
                Exchange::Answered(503),
                true,
            )
            .await;
        let (record, _) = store.get(id).await.unwrap();
        if run < 3 {
            assert!(matches!(reported.answer, Answer::Retry(_)), "{reported:?}");
            assert_eq!(reported.recording, Recording::Kept);
            assert_eq!(record.unwrap().token, attempt.token(), "the claim is kept");
        } else {
            assert!(matches!(reported.answer, Answer::Body), "{reported:?}");
            assert_eq!(reported.recording, Recording::Released);
            assert!(record.is_none(), "released: a later call sends again");
        }
    }
}

/// Without the declaration a request that reached the upstream is never sent again: a 5xx or
/// no answer is an unknown outcome, which `EFFECTFUL` holds and `IDEMPOTENT` releases. A request
/// that never left (nothing written) is sent again all the same.
async fn without_the_declaration_only_an_unsent_request_is_sent_again(store: Arc<dyn Store>) {
    let exec = Executor::new(store.clone());
    let retry =
        RetryPolicy::attempts(3).with_backoff(Duration::from_millis(1), Duration::from_millis(2));
    for (effect, exchange, expected) in [
        (Effect::Effectful, Exchange::Answered(503), "held"),
        (Effect::Effectful, Exchange::NoAnswer, "held"),
        (Effect::Idempotent, Exchange::Answered(503), "released"),
        (Effect::Idempotent, Exchange::Answered(409), "released"),
        (Effect::Idempotent, Exchange::Answered(422), "released"),
        (Effect::Effectful, Exchange::NotSent, "resent"),
    ] {
        let tool = Tool::new("charge_plain", Policy::default().with_effect(effect)).unwrap();
        let input = input();
        let mut attempt = exec
            .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
            .unwrap();
        attempt.set_retry(Some(retry.clone()));
        assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
        let reported = exec
            .report_exchange(&mut attempt, &http_error(503), &types(), exchange, true)
            .await;
        let what = format!("{effect:?} {exchange:?}: {reported:?}");
        match expected {
            "held" => {
                assert_eq!(reported.recording, Recording::Held, "{what}");
                let Answer::Error(error) = reported.answer else {
                    panic!("{what}")
                };
                assert_eq!(error.kind(), ErrorKind::Indeterminate, "{what}");
            }
            "released" => {
                assert_eq!(reported.recording, Recording::Released, "{what}");
                assert!(matches!(reported.answer, Answer::Body), "{what}");
            }
            _ => {
                assert!(matches!(reported.answer, Answer::Retry(_)), "{what}");
                assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
                let done = exec.report(&mut attempt, BodyReport::Succeeded("1")).await;
                assert_eq!(done.recording, Recording::Recorded, "{what}");
            }
        }
    }
}

/// A 409 ("still in progress") from a key-honouring upstream is asked again even without a
/// retry policy; a 422 or 417 is the payload-mismatch error, with the claim released.
async fn a_409_is_asked_again_and_a_422_is_a_payload_mismatch(store: Arc<dyn Store>) {
    let exec = Executor::new(store.clone());
    let tool = honoring("charge_409", Duration::from_secs(60), None);
    let input = input();
    let mut attempt = exec
        .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
        .unwrap();
    assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
    let reported = exec
        .report_exchange(
            &mut attempt,
            &http_error(409),
            &types(),
            Exchange::Answered(409),
            true,
        )
        .await;
    assert!(matches!(reported.answer, Answer::Retry(_)), "{reported:?}");
    assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
    for status in [422u16, 417] {
        if status == 417 {
            attempt = exec
                .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
                .unwrap();
            assert_eq!(exec.advance(&mut attempt, None).await.unwrap(), Step::Run);
        }
        let reported = exec
            .report_exchange(
                &mut attempt,
                &http_error(status),
                &types(),
                Exchange::Answered(status),
                true,
            )
            .await;
        assert_eq!(reported.recording, Recording::Released);
        let Answer::Error(error) = reported.answer else {
            panic!("{reported:?}")
        };
        assert_eq!(error.kind(), ErrorKind::PayloadMismatch, "{error}");
        assert!(error.to_string().contains(&status.to_string()), "{error}");
    }
    // A request that did not carry the key (a GET) gets no such reading of a 422.
    let mut plain = exec
        .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
        .unwrap();
    assert_eq!(exec.advance(&mut plain, None).await.unwrap(), Step::Run);
    let reported = exec
        .report_exchange(
            &mut plain,
            &http_error(422),
            &types(),
            Exchange::Answered(422),
            false,
        )
        .await;
    assert_eq!(reported.recording, Recording::Held, "{reported:?}");
}

/// One key released or resolved in-process: an abandoned claim and a held failure are
/// settled; a live claim only with `force`; a known outcome never.
async fn one_key_is_released_or_resolved_in_process(store: Arc<dyn Store>) {
    let exec = Executor::new(store.clone());
    let tool = Tool::new(
        "charge_settled",
        Policy::default()
            .with_lease(Duration::from_millis(300))
            .with_effect(Effect::Effectful),
    )
    .unwrap();
    let input = input();
    let mut first = exec
        .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
        .unwrap();
    assert_eq!(exec.advance(&mut first, None).await.unwrap(), Step::Run);
    exec.report(&mut first, BodyReport::Cancelled).await;
    let key = *first.key().unwrap();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let live = settle_key(store.as_ref(), id, &Resolution::Release, false)
        .await
        .unwrap();
    assert!(matches!(live, KeySettled::Live(_)), "{live:?}");
    assert!(live.describe(&key.hex()).contains("force"));
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(
        settle_key(store.as_ref(), id, &Resolution::Release, false)
            .await
            .unwrap(),
        KeySettled::Done
    );
    assert_eq!(
        settle_key(store.as_ref(), id, &Resolution::Release, false)
            .await
            .unwrap(),
        KeySettled::NotFound
    );
    // Released: the next call runs; its success is known and never overridden.
    let mut next = exec
        .prepare(&tool, &CallContext::new(), KeyInput::Json(&input))
        .unwrap();
    assert_eq!(exec.advance(&mut next, None).await.unwrap(), Step::Run);
    exec.report(&mut next, BodyReport::Succeeded("7")).await;
    let outcome = Resolution::Complete {
        outcome: Outcome::success("8").unwrap(),
        ttl_ms: 60_000,
    };
    let known = settle_key(store.as_ref(), id, &outcome, true)
        .await
        .unwrap();
    assert!(matches!(known, KeySettled::Completed(_)), "{known:?}");
    store.delete(id).await.unwrap();
}

on_every_store!(
    an_abandoned_claim_is_taken_over_only_when_the_upstream_honours_the_key,
    concurrent_calls_take_an_abandoned_claim_over_once,
    a_5xx_is_sent_again_with_the_claim_kept_when_the_upstream_honours_the_key,
    without_the_declaration_only_an_unsent_request_is_sent_again,
    a_409_is_asked_again_and_a_422_is_a_payload_mismatch,
    one_key_is_released_or_resolved_in_process,
);
