//! Every answer is an event (SPEC §3), also the refusals: a payload mismatch is a
//! `payload_mismatch`, and a claim whose body never ran (a face refused its arguments) is
//! answered by a `released`.

use std::sync::Arc;

use idemkit::{
    BodyReport, CallContext, ErrorKind, EventKind, Executor, KeyInput, KeyStrategy, MemoryStore,
    Policy, Step, Tool,
};
use serde_json::json;

fn executor() -> Executor {
    Executor::new(Arc::new(MemoryStore::new()))
}

#[tokio::test]
async fn a_payload_mismatch_is_one_event() {
    let executor = executor();
    let tool = Tool::new(
        "create_issue",
        Policy::new(KeyStrategy::Explicit).with_reject_payload_mismatch(true),
    )
    .unwrap();
    let call = |body: &'static str| {
        let (executor, tool) = (&executor, &tool);
        async move {
            let payload = json!({"title": "t", "body": body});
            executor
                .call(
                    tool,
                    &CallContext::new(),
                    KeyInput::ExplicitWithPayload {
                        key: "t",
                        payload: &payload,
                    },
                    |_| async { Ok::<_, String>(1) },
                )
                .await
        }
    };
    call("a").await.unwrap();
    let refused = call("b").await.unwrap_err();
    assert_eq!(
        refused.idempotency().map(|e| e.kind()),
        Some(ErrorKind::PayloadMismatch)
    );
    let events = executor.events();
    assert_eq!(events.count(EventKind::PayloadMismatch), 1);
    assert_eq!(events.count(EventKind::Acquired), 1);
    assert_eq!(
        events
            .counts()
            .iter()
            .find(|(name, _)| *name == "payload_mismatch")
            .map(|(_, n)| *n),
        Some(1)
    );
}

#[tokio::test]
async fn a_claim_whose_body_never_ran_is_released_as_an_event() {
    let executor = executor();
    let tool = Tool::new("nights", Policy::default()).unwrap();
    let mut attempt = executor
        .prepare(
            &tool,
            &CallContext::new(),
            KeyInput::Json(r#"{"nights":1.5}"#),
        )
        .unwrap();
    assert_eq!(
        executor.advance(&mut attempt, None).await.unwrap(),
        Step::Run
    );
    // The face refuses the arguments before the body starts.
    let reported = executor.report(&mut attempt, BodyReport::NeverRan).await;
    assert_eq!(reported.recording.name(), "released");
    assert_eq!(executor.events().count(EventKind::Acquired), 1);
    assert_eq!(executor.events().count(EventKind::Released), 1);
}
