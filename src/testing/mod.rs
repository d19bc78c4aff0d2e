//! The store conformance suite (feature `testing`): every store obligation of SPEC §4, checked
//! against a real store. Any `Store` — including one a user writes — must pass it.
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread")]
//! async fn my_store_conforms() {
//!     idemkit::testing::check_store(|| async { Arc::new(MyStore::connect().await) as Arc<dyn Store> }).await;
//! }
//! ```
//!
//! The checks use fresh random keys and tenants, so they can run against a store that holds
//! other data (they never forget a tenant they did not make). They move time by sleeping for
//! short leases and TTLs (hundreds of milliseconds), so a store's own clock is what counts.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::key::{derive_key, Key, KeyInput, KeyScope};
use crate::record::{Failure, Outcome, Record, RecordState, Status, Token};
use crate::store::{
    Claim, ClaimReply, ClaimRequest, Completion, ListFilter, RecordId, Resolution, Resolved, Store,
    TakeOver, TakeOverRequest,
};

/// Lease used where a check needs a lease to end.
const SHORT_LEASE_MS: u64 = 300;
/// TTL used where a check needs a record to expire.
const SHORT_TTL_MS: u64 = 300;
/// Lease and TTL where nothing should end during the check.
const LONG_MS: u64 = 600_000;

/// A fresh random key.
pub fn random_key() -> Key {
    let seed = Token::random().hex();
    derive_key(
        &KeyScope {
            scope: "conformance",
            tenant: None,
            run: None,
        },
        KeyInput::Explicit(&seed),
        &[],
    )
    .expect("a random explicit key derives")
}

/// A fresh random tenant name.
pub fn random_tenant() -> String {
    format!("conformance-{}", &Token::random().hex()[..12])
}

fn request<'a>(id: RecordId<'a>, token: Token, lease_ms: u64, ttl_ms: u64) -> ClaimRequest<'a> {
    ClaimRequest {
        id,
        scope: "conformance_tool",
        token,
        lease_ms,
        ttl_ms,
        retry_failure: false,
        fingerprint: None,
        payload_checked: false,
    }
}

/// Claims `id` for `token` and answers what the store found (panics on a store error).
async fn claim(
    store: &Arc<dyn Store>,
    id: RecordId<'_>,
    token: Token,
    lease_ms: u64,
    ttl_ms: u64,
) -> ClaimReply {
    store
        .claim(&request(id, token, lease_ms, ttl_ms))
        .await
        .unwrap_or_else(|e| panic!("{}: claim failed: {e}", name(store)))
}

/// Leaves a completed record with `outcome` at `id`, kept for `ttl_ms` (a fresh owner claims and
/// completes it).
async fn remember(store: &Arc<dyn Store>, id: RecordId<'_>, outcome: &Outcome, ttl_ms: u64) {
    let token = Token::random();
    claim(store, id, token, LONG_MS, ttl_ms).await;
    let done = store
        .complete(id, token, outcome, ttl_ms)
        .await
        .unwrap_or_else(|e| panic!("{}: complete failed: {e}", name(store)));
    assert_eq!(
        done,
        Completion::Recorded,
        "{}: owner's complete",
        name(store)
    );
}

fn success(json: &str) -> Outcome {
    Outcome::success(json).expect("valid JSON")
}

/// Runs every check against stores made by `make_store` (called once per check).
pub async fn check_store<F, Fut>(make_store: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    claim_on_a_free_key_acquires(make_store().await).await;
    concurrent_claims_have_exactly_one_winner(make_store().await).await;
    concurrent_takeovers_of_an_expired_record_have_exactly_one_winner(make_store().await).await;
    concurrent_retries_of_a_failure_have_exactly_one_winner(make_store().await).await;
    a_claim_with_the_holders_token_acquires_again(make_store().await).await;
    complete_and_release_act_only_for_the_owner(make_store().await).await;
    complete_is_safe_to_retry(make_store().await).await;
    success_outcome_is_returned_exactly(make_store().await).await;
    release_frees_the_key(make_store().await).await;
    failure_is_replaced_only_when_asked(make_store().await).await;
    a_failure_of_another_payload_is_not_replaced_when_checked(make_store().await).await;
    a_held_failure_is_kept_never_replaced_and_resolvable(make_store().await).await;
    lease_end_makes_a_claim_abandoned_and_never_taken_over(make_store().await).await;
    concurrent_take_overs_of_an_abandoned_claim_have_exactly_one_winner(make_store().await).await;
    take_over_moves_only_an_abandoned_claim_of_the_expected_token(make_store().await).await;
    late_complete_turns_abandoned_into_completed(make_store().await).await;
    expired_records_are_invisible_and_free(make_store().await).await;
    tenants_are_separate(make_store().await).await;
    forget_removes_one_tenant_only(make_store().await).await;
    delete_removes_exactly_one_record(make_store().await).await;
    purge_expired_removes_expired_records(make_store().await).await;
    record_fields_are_kept(make_store().await).await;
    the_fingerprint_is_kept(make_store().await).await;
    resolve_settles_only_unfinished_records_with_the_expected_token(make_store().await).await;
    list_filters_by_tenant_and_status(make_store().await).await;
    wait_for_change_returns_when_an_outcome_lands(make_store().await).await;
}

fn name(store: &Arc<dyn Store>) -> String {
    store.describe()
}

/// A claim on a key nobody holds answers `Acquired` with `lease_end` in the future.
pub async fn claim_on_a_free_key_acquires(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    match reply.claim {
        Claim::Acquired { lease_end } => assert!(
            lease_end > reply.now_ms,
            "{}: lease_end {lease_end} must be after now {}",
            name(&store),
            reply.now_ms
        ),
        other => panic!(
            "{}: a free key must be acquired, got {other:?}",
            name(&store)
        ),
    }
}

/// 64 concurrent claimers with distinct tokens: exactly one acquires, 63 see it in progress.
pub async fn concurrent_claims_have_exactly_one_winner(store: Arc<dyn Store>) {
    let key = random_key();
    let tenant = random_tenant();
    let start = Arc::new(tokio::sync::Barrier::new(64));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let store = store.clone();
        let tenant = tenant.clone();
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            store
                .claim(&request(id, Token::random(), LONG_MS, LONG_MS))
                .await
        }));
    }
    let (mut acquired, mut in_progress) = (0, 0);
    for task in tasks {
        match task
            .await
            .expect("claim task")
            .expect("claim answers")
            .claim
        {
            Claim::Acquired { .. } => acquired += 1,
            Claim::InProgress(_) => in_progress += 1,
            other => panic!("{}: unexpected answer {other:?}", name(&store)),
        }
    }
    assert_eq!(
        (acquired, in_progress),
        (1, 63),
        "{}: one winner among 64 claimers",
        name(&store)
    );
}

/// 64 concurrent claims of a key whose record has expired: exactly one takes it over.
pub async fn concurrent_takeovers_of_an_expired_record_have_exactly_one_winner(
    store: Arc<dyn Store>,
) {
    let key = random_key();
    let tenant = random_tenant();
    {
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        remember(&store, id, &success("1"), SHORT_TTL_MS).await;
    }
    tokio::time::sleep(Duration::from_millis(SHORT_TTL_MS + 150)).await;
    let winners = race(&store, &key, &tenant, false).await;
    assert_eq!(
        winners,
        1,
        "{}: one takeover of an expired record among 64",
        name(&store)
    );
    store.forget(Some(&tenant)).await.unwrap();
}

/// 64 concurrent `retry_failure` claims of a remembered failure: exactly one replaces it.
pub async fn concurrent_retries_of_a_failure_have_exactly_one_winner(store: Arc<dyn Store>) {
    let key = random_key();
    let tenant = random_tenant();
    {
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        let failure = Outcome::Failure(Failure::new("Timeout", "upstream timed out"));
        remember(&store, id, &failure, LONG_MS).await;
    }
    let winners = race(&store, &key, &tenant, true).await;
    assert_eq!(
        winners,
        1,
        "{}: one retry of a remembered failure among 64",
        name(&store)
    );
    store.forget(Some(&tenant)).await.unwrap();
}

/// 64 claimers with distinct tokens at once; answers how many acquired (the rest must see the
/// key in progress).
async fn race(store: &Arc<dyn Store>, key: &Key, tenant: &str, retry_failure: bool) -> usize {
    let start = Arc::new(tokio::sync::Barrier::new(64));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (store, start, key, tenant) = (store.clone(), start.clone(), *key, tenant.to_owned());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            let mut claim = request(id, Token::random(), LONG_MS, LONG_MS);
            claim.retry_failure = retry_failure;
            store.claim(&claim).await
        }));
    }
    let mut acquired = 0;
    for task in tasks {
        match task
            .await
            .expect("claim task")
            .expect("claim answers")
            .claim
        {
            Claim::Acquired { .. } => acquired += 1,
            Claim::InProgress(_) => {}
            other => panic!("{}: unexpected answer in a race: {other:?}", name(store)),
        }
    }
    acquired
}

/// A claim whose reply was lost can be retried: the same token acquires again.
pub async fn a_claim_with_the_holders_token_acquires_again(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let token = Token::random();
    let first = claim(&store, id, token, LONG_MS, LONG_MS).await;
    assert!(matches!(first.claim, Claim::Acquired { .. }));
    let again = claim(&store, id, token, LONG_MS, LONG_MS).await;
    assert!(
        matches!(again.claim, Claim::Acquired { .. }),
        "{}: the holder's own token must acquire again, got {:?}",
        name(&store),
        again.claim
    );
    let other = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    assert!(
        matches!(other.claim, Claim::InProgress(_)),
        "{}: {:?}",
        name(&store),
        other.claim
    );
}

/// A stale holder can never overwrite or free someone else's claim.
pub async fn complete_and_release_act_only_for_the_owner(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let owner = Token::random();
    let stranger = Token::random();
    claim(&store, id, owner, LONG_MS, LONG_MS).await;
    let done = store
        .complete(id, stranger, &success("1"), LONG_MS)
        .await
        .unwrap();
    assert!(
        matches!(done, Completion::NotOwner(Some(_))),
        "{}: {done:?}",
        name(&store)
    );
    assert!(
        !store.release(id, stranger).await.unwrap(),
        "{}: stranger released",
        name(&store)
    );
    let (record, _) = store.get(id).await.unwrap();
    let record = record.expect("record still there");
    assert_eq!(record.state, RecordState::InProgress);
    assert_eq!(record.token, owner);
    assert_eq!(
        store
            .complete(id, owner, &success("1"), LONG_MS)
            .await
            .unwrap(),
        Completion::Recorded
    );
    // After completion neither a stranger nor the owner can release it.
    assert!(
        !store.release(id, owner).await.unwrap(),
        "{}: completed record released",
        name(&store)
    );
    let after = store
        .complete(id, stranger, &success("2"), LONG_MS)
        .await
        .unwrap();
    assert!(matches!(after, Completion::NotOwner(Some(_))));
    let (record, _) = store.get(id).await.unwrap();
    assert_eq!(record.unwrap().outcome, Some(success("1")));
}

/// `complete(T)` on a record already completed with `T` answers ok and changes nothing.
pub async fn complete_is_safe_to_retry(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let token = Token::random();
    claim(&store, id, token, LONG_MS, LONG_MS).await;
    for _ in 0..2 {
        assert_eq!(
            store
                .complete(id, token, &success(r#""ok""#), LONG_MS)
                .await
                .unwrap(),
            Completion::Recorded,
            "{}",
            name(&store)
        );
    }
    let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    match reply.claim {
        Claim::Completed(r) => assert_eq!(r.outcome, Some(success(r#""ok""#))),
        other => panic!("{}: expected completed, got {other:?}", name(&store)),
    }
}

/// The success JSON comes back byte for byte: big integers, unicode, nesting.
pub async fn success_outcome_is_returned_exactly(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let token = Token::random();
    let json =
        r#"{"id":9007199254740993,"name":"Jos\u00e9 \ud83d\ude00 日本","n":[1.5e300,null,true]}"#;
    claim(&store, id, token, LONG_MS, LONG_MS).await;
    store
        .complete(id, token, &success(json), LONG_MS)
        .await
        .unwrap();
    let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    match reply.claim {
        Claim::Completed(r) => {
            assert_eq!(r.state, RecordState::Completed);
            assert_eq!(
                r.outcome.as_ref().and_then(|o| o.success_json()),
                Some(json),
                "{}",
                name(&store)
            );
        }
        other => panic!("{}: expected completed, got {other:?}", name(&store)),
    }
}

/// `release(T)` deletes the claim, so the next claim acquires.
pub async fn release_frees_the_key(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let token = Token::random();
    claim(&store, id, token, LONG_MS, LONG_MS).await;
    assert!(
        store.release(id, token).await.unwrap(),
        "{}: owner release",
        name(&store)
    );
    assert_eq!(store.get(id).await.unwrap().0, None);
    let next = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    assert!(
        matches!(next.claim, Claim::Acquired { .. }),
        "{}: {:?}",
        name(&store),
        next.claim
    );
}

/// A remembered failure answers `Completed`, unless the claim asks to replace it.
pub async fn failure_is_replaced_only_when_asked(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let failure = Outcome::Failure(Failure::new("SmtpError", "mailbox full"));
    remember(&store, id, &failure, LONG_MS).await;
    let plain = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    match plain.claim {
        Claim::Completed(r) => assert_eq!(r.outcome, Some(failure.clone())),
        other => panic!("{}: expected the failure, got {other:?}", name(&store)),
    }
    let retrier = Token::random();
    let mut retry = request(id, retrier, LONG_MS, LONG_MS);
    retry.retry_failure = true;
    let reply = store.claim(&retry).await.unwrap();
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: {:?}",
        name(&store),
        reply.claim
    );
    let (record, _) = store.get(id).await.unwrap();
    let record = record.unwrap();
    assert_eq!(
        (record.state, record.token, record.outcome),
        (RecordState::InProgress, retrier, None)
    );
    // A remembered success is never replaced.
    store
        .complete(id, retrier, &success("7"), LONG_MS)
        .await
        .unwrap();
    let mut again = request(id, Token::random(), LONG_MS, LONG_MS);
    again.retry_failure = true;
    assert!(matches!(
        store.claim(&again).await.unwrap().claim,
        Claim::Completed(_)
    ));
}

/// SPEC v1.1 rule 9 inside the claim: a `retry_failure` claim whose payload is checked does not
/// replace a remembered failure made by another payload — it answers the failure unchanged, in
/// the same atomic operation — but replaces one made by the same payload, one made without a
/// fingerprint, and, when the payload is not checked, any.
pub async fn a_failure_of_another_payload_is_not_replaced_when_checked(store: Arc<dyn Store>) {
    let ours = crate::key::fingerprint(KeyInput::Json(r#"{"amount":5}"#))
        .expect("a JSON input has a fingerprint")
        .expect("a JSON input has a fingerprint");
    let theirs = crate::key::fingerprint(KeyInput::Json(r#"{"amount":6}"#))
        .expect("a JSON input has a fingerprint")
        .expect("a JSON input has a fingerprint");
    let failure = Outcome::Failure(Failure::new("CardDeclined", "insufficient funds"));
    let tenant = random_tenant();
    let key = random_key();
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    let retry = |token: Token, fingerprint: Option<&'static str>, checked: bool| ClaimRequest {
        retry_failure: true,
        payload_checked: checked,
        fingerprint,
        ..request(id, token, LONG_MS, LONG_MS)
    };
    let ours: &'static str = Box::leak(ours.into_boxed_str());
    let theirs: &'static str = Box::leak(theirs.into_boxed_str());
    // A failure recorded by a call with our payload.
    let maker = Token::random();
    let made = store.claim(&retry(maker, Some(ours), true)).await.unwrap();
    assert!(
        matches!(made.claim, Claim::Acquired { .. }),
        "{}",
        name(&store)
    );
    store.complete(id, maker, &failure, LONG_MS).await.unwrap();

    // Another payload, checked: the failure is answered, unchanged.
    for _ in 0..2 {
        let reply = store
            .claim(&retry(Token::random(), Some(theirs), true))
            .await
            .unwrap();
        match reply.claim {
            Claim::Completed(r) => assert_eq!(
                (r.token, r.outcome, r.fingerprint.as_deref()),
                (maker, Some(failure.clone()), Some(ours)),
                "{}: the failure of another payload is answered as it is",
                name(&store)
            ),
            other => panic!(
                "{}: a checked claim with another payload replaced a failure: {other:?}",
                name(&store)
            ),
        }
    }
    let (record, _) = store.get(id).await.unwrap();
    let record = record.expect("the record");
    assert_eq!(
        (record.state, record.token, record.fingerprint.as_deref()),
        (RecordState::Completed, maker, Some(ours)),
        "{}: the record is unchanged",
        name(&store)
    );

    // The same payload replaces it.
    let again = Token::random();
    let reply = store.claim(&retry(again, Some(ours), true)).await.unwrap();
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: the same payload replaces the failure: {:?}",
        name(&store),
        reply.claim
    );
    store.complete(id, again, &failure, LONG_MS).await.unwrap();

    // Unchecked (key_arguments without the refusal), another payload replaces it too.
    let lenient = Token::random();
    let reply = store
        .claim(&retry(lenient, Some(theirs), false))
        .await
        .unwrap();
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: an unchecked claim replaces the failure: {:?}",
        name(&store),
        reply.claim
    );
    let (record, _) = store.get(id).await.unwrap();
    assert_eq!(
        record.expect("the record").fingerprint.as_deref(),
        Some(theirs),
        "{}: the replacing claim keeps its own fingerprint",
        name(&store)
    );

    // A failure without a fingerprint (an older record) never differs.
    let key = random_key();
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    remember(&store, id, &failure, LONG_MS).await;
    let checked = ClaimRequest {
        retry_failure: true,
        payload_checked: true,
        fingerprint: Some(theirs),
        ..request(id, Token::random(), LONG_MS, LONG_MS)
    };
    let reply = store.claim(&checked).await.unwrap();
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: a failure without a fingerprint is replaced: {:?}",
        name(&store),
        reply.claim
    );
    store.forget(Some(&tenant)).await.unwrap();
}

/// When the lease ends without an outcome the record reads as abandoned, and no claim takes it over.
pub async fn lease_end_makes_a_claim_abandoned_and_never_taken_over(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let holder = Token::random();
    claim(&store, id, holder, SHORT_LEASE_MS, LONG_MS).await;
    tokio::time::sleep(Duration::from_millis(SHORT_LEASE_MS + 150)).await;
    for _ in 0..2 {
        let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
        match reply.claim {
            Claim::Abandoned(r) => assert_eq!(r.token, holder, "{}", name(&store)),
            other => panic!("{}: expected abandoned, got {other:?}", name(&store)),
        }
    }
    let (record, now) = store.get(id).await.unwrap();
    assert_eq!(record.unwrap().status(now), Status::Abandoned);
}

fn take_over_request<'a>(id: RecordId<'a>, expected: Token, token: Token) -> TakeOverRequest<'a> {
    TakeOverRequest {
        id,
        expected,
        token,
        lease_ms: LONG_MS,
        ttl_ms: LONG_MS,
    }
}

/// 16 concurrent take-overs of one abandoned claim (SPEC v1.1 rule 12): exactly one moves the
/// owner token; the others change nothing and see the winner's claim. The old holder can no
/// longer settle it; the winner can.
pub async fn concurrent_take_overs_of_an_abandoned_claim_have_exactly_one_winner(
    store: Arc<dyn Store>,
) {
    let key = random_key();
    let tenant = random_tenant();
    let holder = Token::random();
    {
        let id = RecordId {
            tenant: Some(&tenant),
            key: &key,
        };
        claim(&store, id, holder, SHORT_LEASE_MS, LONG_MS).await;
    }
    tokio::time::sleep(Duration::from_millis(SHORT_LEASE_MS + 150)).await;
    let start = Arc::new(tokio::sync::Barrier::new(16));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (store, start, tenant) = (store.clone(), start.clone(), tenant.clone());
        tasks.push(tokio::spawn(async move {
            let token = Token::random();
            start.wait().await;
            let id = RecordId {
                tenant: Some(&tenant),
                key: &key,
            };
            let answer = store.take_over(&take_over_request(id, holder, token)).await;
            (token, answer)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for task in tasks {
        let (token, answer) = task.await.expect("take-over task");
        match answer.unwrap_or_else(|e| panic!("{}: take_over failed: {e}", name(&store))) {
            TakeOver::Acquired { .. } => winners.push(token),
            TakeOver::Lost(found) => losers.push(found),
            TakeOver::Unsupported => panic!(
                "{}: take_over is not implemented; SPEC v1.1 rule 12 needs it as one atomic operation",
                name(&store)
            ),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "{}: one take-over of an abandoned claim among 16",
        name(&store)
    );
    let winner = winners[0];
    for found in losers {
        let found = found.unwrap_or_else(|| panic!("{}: a loser saw no record", name(&store)));
        assert_eq!(
            found.token,
            winner,
            "{}: a loser sees the winner",
            name(&store)
        );
    }
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    let (record, now) = store.get(id).await.unwrap();
    let record = record.expect("the taken-over record");
    assert_eq!(record.token, winner, "{}", name(&store));
    assert_eq!(record.status(now), Status::InProgress, "{}", name(&store));
    assert_eq!(record.scope, "conformance_tool", "{}", name(&store));
    let other = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    assert!(
        matches!(other.claim, Claim::InProgress(ref r) if r.token == winner),
        "{}: a claim after the take-over waits for the winner: {:?}",
        name(&store),
        other.claim
    );
    assert!(
        matches!(
            store
                .complete(id, holder, &success("1"), LONG_MS)
                .await
                .unwrap(),
            Completion::NotOwner(_)
        ),
        "{}: the old holder no longer owns the claim",
        name(&store)
    );
    assert_eq!(
        store
            .complete(id, winner, &success("2"), LONG_MS)
            .await
            .unwrap(),
        Completion::Recorded,
        "{}",
        name(&store)
    );
    store.forget(Some(&tenant)).await.unwrap();
}

/// A take-over changes nothing unless the record is an abandoned claim of the expected token:
/// not a live claim, not another token, not a completed record, not a missing one.
pub async fn take_over_moves_only_an_abandoned_claim_of_the_expected_token(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let lost = |answer: TakeOver, what: &str| {
        assert!(
            matches!(answer, TakeOver::Lost(_)),
            "{}: {what}: {answer:?}",
            name(&store)
        )
    };
    lost(
        store
            .take_over(&take_over_request(id, Token::random(), Token::random()))
            .await
            .unwrap(),
        "no record",
    );
    let holder = Token::random();
    claim(&store, id, holder, LONG_MS, LONG_MS).await;
    lost(
        store
            .take_over(&take_over_request(id, holder, Token::random()))
            .await
            .unwrap(),
        "a live claim",
    );
    store.release(id, holder).await.unwrap();
    claim(&store, id, holder, SHORT_LEASE_MS, LONG_MS).await;
    tokio::time::sleep(Duration::from_millis(SHORT_LEASE_MS + 150)).await;
    lost(
        store
            .take_over(&take_over_request(id, Token::random(), Token::random()))
            .await
            .unwrap(),
        "another token",
    );
    store
        .complete(id, holder, &success("1"), LONG_MS)
        .await
        .unwrap();
    lost(
        store
            .take_over(&take_over_request(id, holder, Token::random()))
            .await
            .unwrap(),
        "a completed record",
    );
    let (record, _) = store.get(id).await.unwrap();
    assert_eq!(record.unwrap().token, holder, "{}", name(&store));
    store.delete(id).await.unwrap();
}

/// `complete(T)` works after the lease ended: a late outcome turns abandoned into completed.
pub async fn late_complete_turns_abandoned_into_completed(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let holder = Token::random();
    claim(&store, id, holder, SHORT_LEASE_MS, LONG_MS).await;
    tokio::time::sleep(Duration::from_millis(SHORT_LEASE_MS + 150)).await;
    assert_eq!(
        store
            .complete(id, holder, &success("42"), LONG_MS)
            .await
            .unwrap(),
        Completion::Recorded,
        "{}",
        name(&store)
    );
    let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    assert!(
        matches!(reply.claim, Claim::Completed(_)),
        "{}: {:?}",
        name(&store),
        reply.claim
    );
}

/// After `expires_at` a record is invisible to every read and the key is free.
pub async fn expired_records_are_invisible_and_free(store: Arc<dyn Store>) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    remember(&store, id, &success("1"), SHORT_TTL_MS).await;
    assert!(store.get(id).await.unwrap().0.is_some());
    tokio::time::sleep(Duration::from_millis(SHORT_TTL_MS + 150)).await;
    assert_eq!(
        store.get(id).await.unwrap().0,
        None,
        "{}: expired record visible",
        name(&store)
    );
    let filter = ListFilter {
        tenant: Some(None),
        status: None,
        limit: 0,
    };
    let mut cursor: Option<String> = None;
    loop {
        let page = store.list(&filter, cursor.as_deref()).await.unwrap();
        assert!(
            page.records.iter().all(|r| r.key != key.hex()),
            "{}: expired record listed",
            name(&store)
        );
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: {:?}",
        name(&store),
        reply.claim
    );
}

/// The same key under two tenants is two records.
pub async fn tenants_are_separate(store: Arc<dyn Store>) {
    let key = random_key();
    let (a, b) = (random_tenant(), random_tenant());
    let ida = RecordId {
        tenant: Some(&a),
        key: &key,
    };
    let idb = RecordId {
        tenant: Some(&b),
        key: &key,
    };
    let idn = RecordId {
        tenant: None,
        key: &key,
    };
    for id in [ida, idb, idn] {
        let reply = claim(&store, id, Token::random(), LONG_MS, LONG_MS).await;
        assert!(
            matches!(reply.claim, Claim::Acquired { .. }),
            "{}: {:?}",
            name(&store),
            reply.claim
        );
    }
    let empty = String::new();
    let ide = RecordId {
        tenant: Some(&empty),
        key: &key,
    };
    let empty_holder = Token::random();
    let reply = claim(&store, ide, empty_holder, LONG_MS, LONG_MS).await;
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: \"\" is a tenant distinct from none",
        name(&store)
    );
    // Clean up by token: the store may hold other "" records that are not ours to forget.
    assert!(store.release(ide, empty_holder).await.unwrap());
}

/// `forget(tenant)` deletes that tenant's records and leaves every other tenant's alone.
pub async fn forget_removes_one_tenant_only(store: Arc<dyn Store>) {
    let (gone, kept) = (random_tenant(), random_tenant());
    let keys: Vec<Key> = (0..5).map(|_| random_key()).collect();
    for key in &keys {
        for tenant in [&gone, &kept] {
            let id = RecordId {
                tenant: Some(tenant),
                key,
            };
            remember(&store, id, &success("1"), LONG_MS).await;
        }
    }
    assert_eq!(
        store.forget(Some(&gone)).await.unwrap(),
        5,
        "{}: forget count",
        name(&store)
    );
    for key in &keys {
        assert_eq!(
            store
                .get(RecordId {
                    tenant: Some(&gone),
                    key
                })
                .await
                .unwrap()
                .0,
            None
        );
        assert!(
            store
                .get(RecordId {
                    tenant: Some(&kept),
                    key
                })
                .await
                .unwrap()
                .0
                .is_some(),
            "{}: other tenant lost a record",
            name(&store)
        );
    }
    assert_eq!(store.forget(Some(&kept)).await.unwrap(), 5);
}

/// `delete(id)` removes that record whatever its state, answers whether there was a live one,
/// and leaves the same key under another tenant and the tenant's other keys alone.
pub async fn delete_removes_exactly_one_record(store: Arc<dyn Store>) {
    let (tenant, other) = (random_tenant(), random_tenant());
    let (key, sibling) = (random_key(), random_key());
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    let same_key_other_tenant = RecordId {
        tenant: Some(&other),
        key: &key,
    };
    let sibling_id = RecordId {
        tenant: Some(&tenant),
        key: &sibling,
    };
    remember(&store, id, &success("1"), LONG_MS).await;
    remember(&store, sibling_id, &success("2"), LONG_MS).await;
    let holder = Token::random();
    claim(&store, same_key_other_tenant, holder, LONG_MS, LONG_MS).await;

    assert!(
        store.delete(id).await.unwrap(),
        "{}: delete of a completed record",
        name(&store)
    );
    assert_eq!(store.get(id).await.unwrap().0, None, "{}", name(&store));
    assert!(
        !store.delete(id).await.unwrap(),
        "{}: a second delete found a record",
        name(&store)
    );
    let kept = store.get(same_key_other_tenant).await.unwrap().0;
    assert_eq!(
        kept.map(|r| r.token),
        Some(holder),
        "{}: the key's record under another tenant changed",
        name(&store)
    );
    assert!(
        store.get(sibling_id).await.unwrap().0.is_some(),
        "{}: the tenant's other record was deleted",
        name(&store)
    );

    // An in-progress record too: its key is free afterwards.
    assert!(store.delete(same_key_other_tenant).await.unwrap());
    let reply = claim(
        &store,
        same_key_other_tenant,
        Token::random(),
        LONG_MS,
        LONG_MS,
    )
    .await;
    assert!(
        matches!(reply.claim, Claim::Acquired { .. }),
        "{}: {:?}",
        name(&store),
        reply.claim
    );

    // An expired record is not there to delete.
    let expiring = random_key();
    let expiring_id = RecordId {
        tenant: Some(&tenant),
        key: &expiring,
    };
    remember(&store, expiring_id, &success("3"), SHORT_TTL_MS).await;
    tokio::time::sleep(Duration::from_millis(SHORT_TTL_MS + 150)).await;
    assert!(
        !store.delete(expiring_id).await.unwrap(),
        "{}: delete found an expired record",
        name(&store)
    );

    assert!(store.delete(same_key_other_tenant).await.unwrap());
    assert!(store.delete(sibling_id).await.unwrap());
}

/// `purge_expired` deletes expired records and keeps live ones.
pub async fn purge_expired_removes_expired_records(store: Arc<dyn Store>) {
    let tenant = random_tenant();
    let short = random_key();
    let long = random_key();
    for (key, ttl) in [(&short, SHORT_TTL_MS), (&long, LONG_MS)] {
        let id = RecordId {
            tenant: Some(&tenant),
            key,
        };
        remember(&store, id, &success("1"), ttl).await;
    }
    tokio::time::sleep(Duration::from_millis(SHORT_TTL_MS + 150)).await;
    store.purge_expired().await.unwrap();
    assert_eq!(
        store
            .get(RecordId {
                tenant: Some(&tenant),
                key: &short
            })
            .await
            .unwrap()
            .0,
        None
    );
    assert!(
        store
            .get(RecordId {
                tenant: Some(&tenant),
                key: &long
            })
            .await
            .unwrap()
            .0
            .is_some(),
        "{}: purge removed a live record",
        name(&store)
    );
    assert_eq!(
        store.forget(Some(&tenant)).await.unwrap(),
        1,
        "{}: the expired record should be gone from storage",
        name(&store)
    );
}

/// A record keeps key, tenant, scope, token and consistent timestamps; never the input.
pub async fn record_fields_are_kept(store: Arc<dyn Store>) {
    let key = random_key();
    let tenant = random_tenant();
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    let token = Token::random();
    let reply = claim(&store, id, token, 60_000, 120_000).await;
    let (record, now) = store.get(id).await.unwrap();
    let r = record.expect("claimed record");
    assert_eq!(r.key, key.hex());
    assert_eq!(r.tenant.as_deref(), Some(tenant.as_str()));
    assert_eq!(r.scope, "conformance_tool");
    assert_eq!(r.token, token);
    assert_eq!(r.state, RecordState::InProgress);
    assert_eq!(r.format, crate::record::RECORD_FORMAT);
    assert!(
        (r.claimed_at - reply.now_ms).abs() <= 1000,
        "{}: claimed_at {} vs now {}",
        name(&store),
        r.claimed_at,
        reply.now_ms
    );
    assert_eq!(
        r.lease_end - r.claimed_at,
        60_000,
        "{}: lease_end = claimed_at + lease",
        name(&store)
    );
    assert_eq!(
        r.expires_at - r.lease_end,
        120_000,
        "{}: expires_at = lease_end + ttl",
        name(&store)
    );
    assert!(now >= r.claimed_at);
    store
        .complete(id, token, &success("true"), 90_000)
        .await
        .unwrap();
    let (record, now) = store.get(id).await.unwrap();
    let r = record.unwrap();
    assert_eq!(r.state, RecordState::Completed);
    assert!(
        (r.expires_at - now - 90_000).abs() <= 1000,
        "{}: expires_at = now + ttl after completion",
        name(&store)
    );
    store.forget(Some(&tenant)).await.unwrap();
}

/// SPEC v1.1 rule 9: the fingerprint a claim carries is kept in the record it makes — in the
/// claim's own answers, `get`, `list` and after completion — and a claim without one makes a
/// record without one. A repeat's claim never rewrites the holder's fingerprint.
pub async fn the_fingerprint_is_kept(store: Arc<dyn Store>) {
    let fingerprint = crate::key::fingerprint(KeyInput::Json(r#"{"flight":"BA117"}"#))
        .expect("a JSON input has a fingerprint")
        .expect("a JSON input has a fingerprint");
    let other = "0".repeat(64);
    let tenant = random_tenant();
    let key = random_key();
    let id = RecordId {
        tenant: Some(&tenant),
        key: &key,
    };
    let token = Token::random();
    let with = |token: Token, fingerprint: Option<&'static str>| ClaimRequest {
        fingerprint,
        ..request(id, token, LONG_MS, LONG_MS)
    };
    let fingerprint: &'static str = Box::leak(fingerprint.into_boxed_str());
    let other: &'static str = Box::leak(other.into_boxed_str());
    store.claim(&with(token, Some(fingerprint))).await.unwrap();
    let read = |r: Option<crate::record::Record>| r.expect("the record").fingerprint;
    assert_eq!(
        read(store.get(id).await.unwrap().0).as_deref(),
        Some(fingerprint),
        "{}: get keeps the fingerprint of the claim",
        name(&store)
    );
    // Another caller's claim (another fingerprint) finds the holder's record, unchanged.
    let repeat = store
        .claim(&with(Token::random(), Some(other)))
        .await
        .unwrap();
    match repeat.claim {
        Claim::InProgress(r) => assert_eq!(
            r.fingerprint.as_deref(),
            Some(fingerprint),
            "{}: an in-progress answer carries the holder's fingerprint",
            name(&store)
        ),
        other => panic!("{}: expected InProgress, got {other:?}", name(&store)),
    }
    store
        .complete(id, token, &success("1"), LONG_MS)
        .await
        .unwrap();
    let repeat = store
        .claim(&with(Token::random(), Some(other)))
        .await
        .unwrap();
    match repeat.claim {
        Claim::Completed(r) => assert_eq!(
            r.fingerprint.as_deref(),
            Some(fingerprint),
            "{}: a completed answer carries the fingerprint of the call that ran",
            name(&store)
        ),
        other => panic!("{}: expected Completed, got {other:?}", name(&store)),
    }
    // Every page: on a server shared with other data, a page may be empty and name the next.
    let listed = collect_records(
        &store,
        ListFilter {
            tenant: Some(Some(tenant.clone())),
            ..ListFilter::default()
        },
    )
    .await;
    let fingerprints: Vec<Option<String>> = listed.into_iter().map(|r| r.fingerprint).collect();
    assert_eq!(
        fingerprints,
        vec![Some(fingerprint.to_owned())],
        "{}: list keeps the fingerprint",
        name(&store)
    );

    // A claim without a fingerprint (a call with no input, or a v1.0 writer) makes a record
    // without one.
    let bare = random_key();
    let bare_id = RecordId {
        tenant: Some(&tenant),
        key: &bare,
    };
    claim(&store, bare_id, Token::random(), LONG_MS, LONG_MS).await;
    assert_eq!(
        read(store.get(bare_id).await.unwrap().0),
        None,
        "{}: a claim without a fingerprint keeps none",
        name(&store)
    );
    store.forget(Some(&tenant)).await.unwrap();
}

/// Operators settle in-progress/abandoned records whose token they name; completed ones are refused.
pub async fn resolve_settles_only_unfinished_records_with_the_expected_token(
    store: Arc<dyn Store>,
) {
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    assert_eq!(
        store
            .resolve(id, Token::random(), &Resolution::Release)
            .await
            .unwrap(),
        Resolved::NotFound
    );
    let holder = Token::random();
    claim(&store, id, holder, SHORT_LEASE_MS, LONG_MS).await;
    tokio::time::sleep(Duration::from_millis(SHORT_LEASE_MS + 100)).await;
    let wrong = store
        .resolve(id, Token::random(), &Resolution::Release)
        .await
        .unwrap();
    assert!(
        matches!(wrong, Resolved::TokenMismatch(_)),
        "{}: {wrong:?}",
        name(&store)
    );
    let settle = Resolution::Complete {
        outcome: success(r#"{"resolved":true}"#),
        ttl_ms: LONG_MS,
    };
    assert_eq!(
        store.resolve(id, holder, &settle).await.unwrap(),
        Resolved::Done,
        "{}",
        name(&store)
    );
    match claim(&store, id, Token::random(), LONG_MS, LONG_MS)
        .await
        .claim
    {
        Claim::Completed(r) => assert_eq!(r.outcome, Some(success(r#"{"resolved":true}"#))),
        other => panic!(
            "{}: expected the resolved outcome, got {other:?}",
            name(&store)
        ),
    }
    let again = store
        .resolve(id, holder, &Resolution::Release)
        .await
        .unwrap();
    assert!(
        matches!(again, Resolved::AlreadyCompleted(_)),
        "{}: {again:?}",
        name(&store)
    );

    let key2 = random_key();
    let id2 = RecordId {
        tenant: None,
        key: &key2,
    };
    let holder2 = Token::random();
    claim(&store, id2, holder2, LONG_MS, LONG_MS).await;
    assert_eq!(
        store
            .resolve(id2, holder2, &Resolution::Release)
            .await
            .unwrap(),
        Resolved::Done
    );
    assert_eq!(
        store.get(id2).await.unwrap().0,
        None,
        "{}: released record remains",
        name(&store)
    );
}

/// A held failure (an `EFFECTFUL` body's, SPEC v1.1 rule 7) reads back as it was recorded,
/// answers `Completed` even to a claim that replaces failures, and is resolved by its token like
/// an abandoned claim (release, or record an outcome).
pub async fn a_held_failure_is_kept_never_replaced_and_resolvable(store: Arc<dyn Store>) {
    let held = Outcome::Indeterminate(Failure::new("PaymentTimeout", "no answer in 30 s"));
    for resolution in [
        Resolution::Release,
        Resolution::Complete {
            outcome: success(r#""charged""#),
            ttl_ms: LONG_MS,
        },
    ] {
        let key = random_key();
        let id = RecordId {
            tenant: None,
            key: &key,
        };
        let holder = Token::random();
        claim(&store, id, holder, LONG_MS, LONG_MS).await;
        let done = store.complete(id, holder, &held, LONG_MS).await.unwrap();
        assert_eq!(done, Completion::Recorded, "{}", name(&store));
        let (record, _) = store.get(id).await.unwrap();
        let record = record.unwrap();
        assert_eq!(
            (record.state, record.outcome.clone()),
            (RecordState::Completed, Some(held.clone())),
            "{}",
            name(&store)
        );
        assert!(record.is_held());
        for retry_failure in [false, true] {
            let mut repeat = request(id, Token::random(), LONG_MS, LONG_MS);
            repeat.retry_failure = retry_failure;
            match store.claim(&repeat).await.unwrap().claim {
                Claim::Completed(r) => assert_eq!(r.outcome, Some(held.clone())),
                other => panic!(
                    "{}: a held failure must answer every claim (retry_failure {retry_failure}), got {other:?}",
                    name(&store)
                ),
            }
        }
        let wrong = store
            .resolve(id, Token::random(), &resolution)
            .await
            .unwrap();
        assert!(
            matches!(wrong, Resolved::TokenMismatch(_)),
            "{}: {wrong:?}",
            name(&store)
        );
        assert_eq!(
            store.resolve(id, holder, &resolution).await.unwrap(),
            Resolved::Done,
            "{}: {resolution:?}",
            name(&store)
        );
        let after = store.get(id).await.unwrap().0;
        match &resolution {
            Resolution::Release => assert_eq!(after, None, "{}", name(&store)),
            Resolution::Complete { outcome, .. } => {
                assert_eq!(after.unwrap().outcome.as_ref(), Some(outcome))
            }
        }
    }
}

/// `list` returns live records filtered by tenant and by worked-out status.
pub async fn list_filters_by_tenant_and_status(store: Arc<dyn Store>) {
    let tenant = random_tenant();
    let (done, running, dead) = (random_key(), random_key(), random_key());
    let token = Token::random();
    let id = |key| RecordId {
        tenant: Some(&tenant),
        key,
    };
    claim(&store, id(&done), token, LONG_MS, LONG_MS).await;
    store
        .complete(id(&done), token, &success("1"), LONG_MS)
        .await
        .unwrap();
    claim(&store, id(&running), Token::random(), LONG_MS, LONG_MS).await;
    claim(&store, id(&dead), Token::random(), SHORT_LEASE_MS, LONG_MS).await;
    tokio::time::sleep(Duration::from_millis(SHORT_LEASE_MS + 100)).await;
    let all = collect(
        &store,
        ListFilter {
            tenant: Some(Some(tenant.clone())),
            status: None,
            limit: 2,
        },
    )
    .await;
    assert_eq!(
        all.len(),
        3,
        "{}: three records in the tenant, paged by 2",
        name(&store)
    );
    for (status, key) in [
        (Status::Completed, &done),
        (Status::InProgress, &running),
        (Status::Abandoned, &dead),
    ] {
        let found = collect(
            &store,
            ListFilter {
                tenant: Some(Some(tenant.clone())),
                status: Some(status),
                limit: 0,
            },
        )
        .await;
        assert_eq!(
            found,
            vec![key.hex()],
            "{}: list --state {}",
            name(&store),
            status
        );
    }
    store.forget(Some(&tenant)).await.unwrap();
}

async fn collect(store: &Arc<dyn Store>, filter: ListFilter) -> Vec<String> {
    collect_records(store, filter)
        .await
        .into_iter()
        .map(|r| r.key)
        .collect()
}

/// Every record `list` answers for `filter`, following the cursor to the end.
async fn collect_records(store: &Arc<dyn Store>, filter: ListFilter) -> Vec<Record> {
    let mut records = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10_000 {
        let page = store.list(&filter, cursor.as_deref()).await.unwrap();
        records.extend(page.records);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return records,
        }
    }
    panic!("{}: list never finished", name(store));
}

/// A waiter on an in-progress record returns soon after the holder completes (well before `until`).
pub async fn wait_for_change_returns_when_an_outcome_lands(store: Arc<dyn Store>) {
    let key = random_key();
    let holder = Token::random();
    {
        let id = RecordId {
            tenant: None,
            key: &key,
        };
        claim(&store, id, holder, LONG_MS, LONG_MS).await;
    }
    let completer = {
        let store = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let id = RecordId {
                tenant: None,
                key: &key,
            };
            store
                .complete(id, holder, &success("1"), LONG_MS)
                .await
                .unwrap();
        })
    };
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let started = Instant::now();
    let until = started + Duration::from_secs(10);
    let mut attempt = 0;
    loop {
        store
            .wait_for_change(id, holder, until, attempt)
            .await
            .unwrap();
        attempt += 1;
        let (record, _) = store.get(id).await.unwrap();
        if record.is_some_and(|r| r.state == RecordState::Completed) {
            break;
        }
        assert!(
            Instant::now() < until,
            "{}: the waiter never saw the outcome",
            name(&store)
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{}: waited {:?}",
        name(&store),
        started.elapsed()
    );
    completer.await.unwrap();
}
