//! Redis record v2 and the rolling upgrade (SPEC v1.2 §9 rule 2): this version reads and answers
//! every operation on records written in the v1 layout (one hash per record), and a process of
//! the previous version that meets a v2 record (one string) fails with a store error, never a
//! free key. The v1 claim script is kept as it was (`tests/fixtures/redis_v1_*.lua`).

use std::time::Duration;

use idemkit::store::redis::RedisStore;
use idemkit::store::{
    Claim, ClaimRequest, Completion, Deleted, ListFilter, RecordId, Resolution, Resolved, TakeOver,
    TakeOverRequest,
};
use idemkit::testing::{random_key, random_tenant};
use idemkit::{Outcome, RecordState, Store, Token};

mod common;

use common::prefix_options as options;

/// The claim script of the v1 layout, exactly as the previous version ran it.
const V1_CLAIM: &str = concat!(
    include_str!("fixtures/redis_v1_prelude.lua"),
    include_str!("fixtures/redis_v1_claim.lua")
);

fn redis_url() -> Option<String> {
    common::env_url("IDEMKIT_REDIS_URL")
}

async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

fn request<'a>(id: RecordId<'a>, token: Token, lease_ms: u64, ttl_ms: u64) -> ClaimRequest<'a> {
    common::claim_request(id, "v2_test", token, lease_ms, ttl_ms)
}

async fn server_now(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    secs * 1000 + micros / 1000
}

/// A record in the v1 layout, as the v1 claim script left it: `HSET` of the fields (`tenant`
/// among them when there is one), then `PEXPIREAT expires_at`.
#[allow(clippy::too_many_arguments)]
async fn write_v1(
    conn: &mut redis::aio::MultiplexedConnection,
    name: &str,
    id: RecordId<'_>,
    token: Token,
    claimed_at: i64,
    lease_ms: i64,
    ttl_ms: i64,
    outcome: Option<(&str, &str)>,
) {
    let lease_end = claimed_at + lease_ms;
    let expires_at = lease_end + ttl_ms;
    let mut fields: Vec<(&str, String)> = vec![
        ("v", "1".into()),
        ("key", id.key.hex()),
        ("scope", "old_tool".into()),
        ("token", token.hex()),
        ("claimed_at", claimed_at.to_string()),
        ("lease_end", lease_end.to_string()),
        ("ttl_ms", ttl_ms.to_string()),
        ("expires_at", expires_at.to_string()),
    ];
    if let Some(tenant) = id.tenant {
        fields.push(("tenant", tenant.into()));
    }
    match outcome {
        None => fields.push(("state", "in_progress".into())),
        Some((json, kind)) => {
            fields.push(("state", "completed".into()));
            fields.push(("outcome", json.into()));
            fields.push(("outcome_kind", kind.into()));
        }
    }
    let mut pipe = redis::pipe();
    pipe.cmd("DEL").arg(name).ignore();
    pipe.cmd("HSET").arg(name).arg(&fields).ignore();
    pipe.cmd("PEXPIREAT").arg(name).arg(expires_at).ignore();
    let () = pipe.query_async(conn).await.unwrap();
}

async fn kind_of(conn: &mut redis::aio::MultiplexedConnection, name: &str) -> String {
    redis::cmd("TYPE")
        .arg(name)
        .query_async(conn)
        .await
        .unwrap()
}

/// Every store operation answers a v1 record as the v1 code did; whatever it writes is v2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_a_v1_record() {
    let Some(url) = redis_url() else { return };
    let prefix = common::unique_prefix("idemkit-v2");
    let store = RedisStore::connect(&url, &options(&prefix)).await.unwrap();
    let mut conn = raw(&url).await;
    let named = random_tenant();
    for tenant in [None, Some(named.as_str())] {
        let now = server_now(&mut conn).await;
        let key = random_key();
        let id = RecordId { tenant, key: &key };
        let name = store.record_key(id);
        let owner = Token::random();

        // A live v1 claim: read whole, in progress for others, acquired again by its owner.
        write_v1(&mut conn, &name, id, owner, now, 60_000, 120_000, None).await;
        let (record, _) = store.get(id).await.unwrap();
        let record = record.expect("a live v1 claim is read");
        assert_eq!(
            (
                record.key.as_str(),
                record.tenant.as_deref(),
                record.scope.as_str(),
                record.state,
                record.token,
                record.claimed_at,
                record.lease_end,
                record.expires_at
            ),
            (
                key.hex().as_str(),
                tenant,
                "old_tool",
                RecordState::InProgress,
                owner,
                now,
                now + 60_000,
                now + 180_000
            )
        );
        let other = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        assert!(
            matches!(&other.claim, Claim::InProgress(r) if r.token == owner),
            "{:?}",
            other.claim
        );
        let again = store
            .claim(&request(id, owner, 60_000, 120_000))
            .await
            .unwrap();
        assert_eq!(
            again.claim,
            Claim::Acquired {
                lease_end: now + 60_000
            }
        );
        // Only its owner releases it.
        assert!(!store.release(id, Token::random()).await.unwrap());
        assert!(store.release(id, owner).await.unwrap());
        assert_eq!(store.get(id).await.unwrap().0, None);

        // An abandoned v1 claim: answered abandoned, taken over (written v2), completed late.
        write_v1(&mut conn, &name, id, owner, now - 1_000, 500, 120_000, None).await;
        let found = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        assert!(
            matches!(&found.claim, Claim::Abandoned(r) if r.token == owner),
            "{:?}",
            found.claim
        );
        let successor = Token::random();
        let taken = store
            .take_over(&TakeOverRequest {
                id,
                expected: owner,
                token: successor,
                lease_ms: 60_000,
                ttl_ms: 120_000,
            })
            .await
            .unwrap();
        assert!(matches!(taken, TakeOver::Acquired { .. }), "{taken:?}");
        assert_eq!(kind_of(&mut conn, &name).await, "string");
        let (record, _) = store.get(id).await.unwrap();
        let record = record.unwrap();
        assert_eq!(
            (
                record.token,
                record.scope.as_str(),
                record.tenant.as_deref()
            ),
            (successor, "old_tool", tenant)
        );
        write_v1(&mut conn, &name, id, owner, now - 1_000, 500, 120_000, None).await;
        let late = store
            .complete(id, owner, &Outcome::success(r#"{"id":7}"#).unwrap(), 90_000)
            .await
            .unwrap();
        assert_eq!(late, Completion::Recorded);
        assert_eq!(kind_of(&mut conn, &name).await, "string");
        let repeat = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        let Claim::Completed(record) = repeat.claim else {
            panic!("{:?}", repeat.claim)
        };
        assert_eq!(
            (
                record.outcome,
                record.token,
                record.claimed_at,
                record.lease_end,
                record.scope.as_str()
            ),
            (
                Some(Outcome::success(r#"{"id":7}"#).unwrap()),
                owner,
                now - 1_000,
                now - 500,
                "old_tool"
            )
        );

        // A completed v1 record: answered, never replaced unless a failure is retried.
        write_v1(
            &mut conn,
            &name,
            id,
            owner,
            now,
            60_000,
            120_000,
            Some((r#"{"success":{"n":1}}"#, "success")),
        )
        .await;
        let repeat = store
            .claim(&request(id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        assert!(
            matches!(&repeat.claim, Claim::Completed(r) if r.outcome == Some(Outcome::success(r#"{"n":1}"#).unwrap())),
            "{:?}",
            repeat.claim
        );
        assert_eq!(
            store
                .resolve(id, owner, &Resolution::Release)
                .await
                .unwrap(),
            Resolved::AlreadyCompleted(store.get(id).await.unwrap().0.unwrap())
        );
        write_v1(
            &mut conn,
            &name,
            id,
            owner,
            now,
            60_000,
            120_000,
            Some((r#"{"failure":{"type":"E","message":"m"}}"#, "failure")),
        )
        .await;
        let mut retry = request(id, Token::random(), 60_000, 120_000);
        retry.retry_failure = true;
        assert!(matches!(
            store.claim(&retry).await.unwrap().claim,
            Claim::Acquired { .. }
        ));
        assert_eq!(kind_of(&mut conn, &name).await, "string");

        // Operators: resolve and delete_held by token, list, forget and purge see v1 records.
        write_v1(&mut conn, &name, id, owner, now - 1_000, 500, 120_000, None).await;
        assert!(matches!(
            store
                .resolve(id, Token::random(), &Resolution::Release)
                .await
                .unwrap(),
            Resolved::TokenMismatch(_)
        ));
        let settled = Resolution::Complete {
            outcome: Outcome::success("1").unwrap(),
            ttl_ms: 60_000,
        };
        assert_eq!(
            store.resolve(id, owner, &settled).await.unwrap(),
            Resolved::Done
        );
        assert_eq!(
            store.get(id).await.unwrap().0.unwrap().outcome,
            Some(Outcome::success("1").unwrap())
        );
        write_v1(&mut conn, &name, id, owner, now - 1_000, 500, 120_000, None).await;
        assert_eq!(
            store
                .resolve(id, owner, &Resolution::Release)
                .await
                .unwrap(),
            Resolved::Done
        );
        write_v1(&mut conn, &name, id, owner, now - 1_000, 500, 120_000, None).await;
        assert!(matches!(
            store.delete_held(id, Token::random()).await.unwrap(),
            Deleted::Changed(_)
        ));
        assert_eq!(store.delete_held(id, owner).await.unwrap(), Deleted::Done);

        // list shows a v1 and a v2 record side by side; forget removes both.
        write_v1(&mut conn, &name, id, owner, now, 60_000, 120_000, None).await;
        let fresh = random_key();
        let fresh_id = RecordId {
            tenant,
            key: &fresh,
        };
        store
            .claim(&request(fresh_id, Token::random(), 60_000, 120_000))
            .await
            .unwrap();
        let page = store
            .list(
                &ListFilter {
                    tenant: Some(tenant.map(str::to_owned)),
                    ..ListFilter::default()
                },
                None,
            )
            .await
            .unwrap();
        let mut keys: Vec<String> = page.records.iter().map(|r| r.key.clone()).collect();
        keys.sort();
        let mut wanted = vec![key.hex(), fresh.hex()];
        wanted.sort();
        assert_eq!(keys, wanted);
        assert_eq!(store.forget(tenant).await.unwrap(), 2);

        // purge finds a v1 record expired but still present (its native expiry removed).
        write_v1(&mut conn, &name, id, owner, now - 10_000, 500, 60_000, None).await;
        let _: i64 = redis::cmd("HSET")
            .arg(&name)
            .arg("expires_at")
            .arg(now - 8_500)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: i64 = redis::cmd("PERSIST")
            .arg(&name)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(store.get(id).await.unwrap().0, None);
        assert_eq!(store.purge_expired().await.unwrap(), 1);
    }
}

/// A process of the previous version meets a v2 record: its claim script's `HMGET` on a string
/// answers WRONGTYPE, a store error, for a claim in progress and for a completed record alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v1_claim_script_fails_on_a_v2_record() {
    let Some(url) = redis_url() else { return };
    let prefix = common::unique_prefix("idemkit-v2");
    let store = RedisStore::connect(&url, &options(&prefix)).await.unwrap();
    let mut conn = raw(&url).await;
    let v1_claim = redis::Script::new(V1_CLAIM);
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let owner = Token::random();
    store
        .claim(&request(id, owner, 60_000, 120_000))
        .await
        .unwrap();
    let old_claim = || {
        let mut invocation = v1_claim.key(store.record_key(id));
        invocation
            .arg(Token::random().hex())
            .arg(60_000)
            .arg(120_000)
            .arg("0")
            .arg(1)
            .arg(key.hex())
            .arg("v2_test")
            .arg("0")
            .arg("")
            .arg("")
            .arg("0");
        invocation
    };
    for stage in ["in progress", "completed"] {
        let answer: Result<redis::Value, redis::RedisError> =
            old_claim().invoke_async(&mut conn).await;
        let error = answer.expect_err(stage);
        assert!(error.to_string().contains("WRONGTYPE"), "{stage}: {error}");
        if stage == "in progress" {
            store
                .complete(id, owner, &Outcome::success("true").unwrap(), 60_000)
                .await
                .unwrap();
        }
    }
    // The v2 record is untouched, and this version still answers it.
    let repeat = store
        .claim(&request(id, Token::random(), 60_000, 120_000))
        .await
        .unwrap();
    assert!(
        matches!(&repeat.claim, Claim::Completed(r) if r.token == owner),
        "{:?}",
        repeat.claim
    );
    store.forget(None).await.unwrap();
}

/// The v2 claim of a free key and the answer of a completed record are one plain command each
/// (`SET ... NX GET`), and the value stays small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_record_is_one_small_string() {
    let Some(url) = redis_url() else { return };
    let prefix = common::unique_prefix("idemkit-v2");
    let store = RedisStore::connect(&url, &options(&prefix)).await.unwrap();
    let mut conn = raw(&url).await;
    let key = random_key();
    let id = RecordId {
        tenant: None,
        key: &key,
    };
    let owner = Token::random();
    let claimed = store
        .claim(&request(id, owner, 60_000, 120_000))
        .await
        .unwrap();
    let Claim::Acquired { lease_end } = claimed.claim else {
        panic!("{:?}", claimed.claim)
    };
    let record = store.get(id).await.unwrap().0.unwrap();
    // The estimate the plain command reports is the server's clock, within a round trip or so.
    assert!((record.lease_end - lease_end).abs() < 1_000, "{record:?}");
    store
        .complete(
            id,
            owner,
            &Outcome::success(r#""0123456789abcdefghij""#).unwrap(),
            60_000,
        )
        .await
        .unwrap();
    let bytes: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(store.record_key(id))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(bytes < 400, "{bytes} bytes");
    tokio::time::sleep(Duration::from_millis(1)).await;
    store.forget(None).await.unwrap();
}
