//! Record identity (SPEC v1.1 rules 1 and 2): tenants, runs and scopes identify records in their
//! NFC form and are at most 1,024 bytes after NFC; `key_arguments` names equal after NFC are
//! one name. On the memory store and on real Redis and PostgreSQL servers
//! (`IDEMKIT_REDIS_URL`, `IDEMKIT_POSTGRES_URL`, set by `scripts/test.sh`).

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idemkit::key::MAX_IDENTITY_BYTES;
use idemkit::store::ListFilter;
use idemkit::{
    derive_key, CallContext, CallError, ErrorKind, Executor, KeyError, KeyInput, KeyScope,
    MemoryStore, Policy, Store, Token, Tool,
};

mod common;

/// Tenant `"é"` as one code point (NFC) and as `e` + combining acute (NFD).
const COMPOSED: &str = "\u{e9}";
const DECOMPOSED: &str = "e\u{301}";
const INPUT: &str = r#"{"to":"ana@example.com"}"#;

/// Calls `tool` for `tenant` with `input`; the body counts its runs and answers `answer`.
async fn call(
    executor: &Executor,
    tool: &Tool,
    context: &CallContext,
    input: KeyInput<'_>,
    runs: &AtomicUsize,
    answer: &str,
) -> Result<String, CallError<std::io::Error>> {
    executor
        .call(tool, context, input, |_| async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(answer.to_owned())
        })
        .await
}

/// The second spelling of one tenant gets the first call's result; the body runs once.
async fn nfc_equal_tenants_share_one_record(store: Arc<dyn Store>, tool_name: &str) {
    let executor = Executor::new(store);
    let tool = Tool::new(tool_name, Policy::default()).unwrap();
    let runs = AtomicUsize::new(0);
    let composed = CallContext::new().tenant(COMPOSED);
    let decomposed = CallContext::new().tenant(DECOMPOSED);
    // (spelling, input, what the body would return, what the caller gets)
    let other = r#"{"to":"bo@example.com"}"#;
    let calls = [
        (&composed, INPUT, "first", "first"),
        // The NFD spelling gets the record.
        (&decomposed, INPUT, "second", "first"),
        // And the other way round, for a tenant first seen in NFD.
        (&decomposed, other, "third", "third"),
        (&composed, other, "fourth", "third"),
    ];
    for (i, (context, input, returns, expected)) in calls.into_iter().enumerate() {
        let got = call(
            &executor,
            &tool,
            context,
            KeyInput::Json(input),
            &runs,
            returns,
        )
        .await;
        assert_eq!(got.unwrap(), expected, "call {}", i + 1);
        let ran = if i < 2 { 1 } else { 2 };
        assert_eq!(
            runs.load(Ordering::SeqCst),
            ran,
            "the body ran once per record"
        );
    }
}

fn key_of(tool: &str, tenant: &str, input: &str) -> idemkit::Key {
    let scope = KeyScope {
        scope: tool,
        tenant: Some(tenant),
        run: None,
    };
    derive_key(&scope, KeyInput::Json(input), &[]).unwrap()
}

#[tokio::test]
async fn memory_nfc_equal_tenants_share_one_record() {
    let store = Arc::new(MemoryStore::new());
    nfc_equal_tenants_share_one_record(store.clone(), "send_email").await;
    let page = store.list(&ListFilter::default(), None).await.unwrap();
    assert_eq!(page.records.len(), 2);
    assert!(page
        .records
        .iter()
        .all(|r| r.tenant.as_deref() == Some(COMPOSED)));
}

#[tokio::test]
async fn a_tool_name_in_nfd_is_recorded_as_its_nfc_scope() {
    let store = Arc::new(MemoryStore::new());
    nfc_equal_tenants_share_one_record(store.clone(), "re\u{301}sume\u{301}").await;
    let page = store.list(&ListFilter::default(), None).await.unwrap();
    assert!(page.records.iter().all(|r| r.scope == "r\u{e9}sum\u{e9}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_nfc_equal_tenants_share_one_record_under_the_nfc_hex_segment() {
    let Some(url) = common::env_url("IDEMKIT_REDIS_URL") else {
        return;
    };
    let prefix = common::unique_prefix("idemkit-identity");
    let store = idemkit::store::open(&url, &common::prefix_options(&prefix))
        .await
        .unwrap();
    nfc_equal_tenants_share_one_record(store, "send_email").await;
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = key_of("send_email", COMPOSED, INPUT).hex();
    let exists = |name: String| {
        let mut conn = conn.clone();
        async move {
            redis::cmd("EXISTS")
                .arg(name)
                .query_async::<i64>(&mut conn)
                .await
                .unwrap()
        }
    };
    assert_eq!(exists(format!("{prefix}tc3a9:{key}")).await, 1);
    assert_eq!(exists(format!("{prefix}t65cc81:{key}")).await, 0);
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys
        .iter()
        .all(|k| k.starts_with(&format!("{prefix}tc3a9:"))));
}

/// A table of its own, dropped at the end.
async fn postgres_table(url: &str) -> (String, Arc<dyn Store>, tokio_postgres::Client) {
    let name = format!("idemkit_identity_{}", &Token::random().hex()[..12]);
    let options = idemkit::StoreOptions {
        table: Some(name.clone()),
        ..idemkit::StoreOptions::default()
    };
    let store = idemkit::store::postgres::PostgresStore::connect(url, &options)
        .await
        .unwrap();
    store.create_table_if_missing().await.unwrap();
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    (name, Arc::new(store), client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_nfc_equal_tenants_share_one_record_in_the_nfc_tenant_column() {
    let Some(url) = common::env_url("IDEMKIT_POSTGRES_URL") else {
        return;
    };
    let (table, store, client) = postgres_table(&url).await;
    nfc_equal_tenants_share_one_record(store, "send_email").await;
    let rows = client
        .query(&format!("SELECT tenant FROM {table}"), &[])
        .await
        .unwrap();
    let tenants: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    client
        .batch_execute(&format!(
            "DROP TABLE {table}; DROP FUNCTION IF EXISTS {table}_claim"
        ))
        .await
        .unwrap();
    assert_eq!(tenants, vec![COMPOSED.to_owned(), COMPOSED.to_owned()]);
}

// ---- lengths ----------------------------------------------------------------------------

fn kind<T: std::fmt::Debug>(r: Result<T, CallError<std::io::Error>>) -> ErrorKind {
    match r {
        Err(CallError::Idempotency(e)) => e.kind(),
        other => panic!("expected an idemkit error, got {other:?}"),
    }
}

/// Tenant, run and scope of exactly 1,024 bytes (after NFC) work and deduplicate; one byte
/// more is refused naming the field, before the store is touched.
async fn identity_limits(store: Arc<dyn Store>) {
    let executor = Executor::new(store.clone());
    let longest_name = "s".repeat(MAX_IDENTITY_BYTES);
    let tool = Tool::new(longest_name.as_str(), Policy::default()).unwrap();
    // 512 × "é": 1,024 bytes in NFC (1,536 in NFD, which the limit does not count).
    let tenant = COMPOSED.repeat(MAX_IDENTITY_BYTES / 2);
    let run = "r".repeat(MAX_IDENTITY_BYTES);
    let context = CallContext::new().tenant(tenant.clone()).run(run.clone());
    let runs = AtomicUsize::new(0);
    let first = call(
        &executor,
        &tool,
        &context,
        KeyInput::Json(INPUT),
        &runs,
        "a",
    );
    assert_eq!(first.await.unwrap(), "a");
    let nfd = CallContext::new()
        .tenant(DECOMPOSED.repeat(MAX_IDENTITY_BYTES / 2))
        .run(run.clone());
    let repeat = call(&executor, &tool, &nfd, KeyInput::Json(INPUT), &runs, "b");
    assert_eq!(repeat.await.unwrap(), "a");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let before = store.list(&ListFilter::default(), None).await.unwrap();
    let refused = |context: CallContext, tool: Tool| {
        let (executor, runs) = (executor.clone(), &runs);
        async move {
            let result = call(&executor, &tool, &context, KeyInput::Json(INPUT), runs, "x").await;
            let message = result.as_ref().err().map(|e| e.to_string());
            assert_eq!(kind(result), ErrorKind::InvalidKey);
            message.unwrap()
        }
    };
    let short = Tool::new("send_email", Policy::default()).unwrap();
    let message = refused(
        CallContext::new().tenant(format!("{tenant}x")),
        short.clone(),
    )
    .await;
    assert!(message.contains("tenant: 1025 bytes"), "{message}");
    assert!(message.contains("limit of 1024"), "{message}");
    let message = refused(CallContext::new().run(format!("{run}x")), short.clone()).await;
    assert!(message.contains("run: 1025 bytes"), "{message}");
    let uuid = Tool::new("send_email", Policy::new(idemkit::KeyStrategy::Uuid)).unwrap();
    let message = refused(CallContext::new().tenant(format!("{tenant}x")), uuid).await;
    assert!(message.contains("tenant: 1025 bytes"), "{message}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "no refused call ran");
    let after = store.list(&ListFilter::default(), None).await.unwrap();
    assert_eq!(after.records.len(), before.records.len());

    let error = Tool::new(format!("{longest_name}x"), Policy::default()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Configuration);
    assert!(error.to_string().contains("1025 bytes"), "{error}");
    assert!(!error.to_string().contains(&longest_name), "{error}");
}

#[tokio::test]
async fn memory_accepts_identities_up_to_1024_bytes_and_refuses_longer() {
    identity_limits(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_accepts_identities_up_to_1024_bytes_and_refuses_longer() {
    let Some(url) = common::env_url("IDEMKIT_REDIS_URL") else {
        return;
    };
    let prefix = common::unique_prefix("idemkit-identity");
    let store = idemkit::store::open(&url, &common::prefix_options(&prefix))
        .await
        .unwrap();
    identity_limits(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_accepts_identities_up_to_1024_bytes_and_refuses_longer() {
    let Some(url) = common::env_url("IDEMKIT_POSTGRES_URL") else {
        return;
    };
    let (table, store, client) = postgres_table(&url).await;
    identity_limits(store).await;
    let count: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0);
    client
        .batch_execute(&format!(
            "DROP TABLE {table}; DROP FUNCTION IF EXISTS {table}_claim"
        ))
        .await
        .unwrap();
    assert_eq!(count, 1);
}

#[test]
fn derive_key_refuses_an_over_long_identity_naming_the_field() {
    let long = "x".repeat(MAX_IDENTITY_BYTES + 1);
    let ok = "x".repeat(MAX_IDENTITY_BYTES);
    let derive = |scope: &str, tenant: Option<&str>, run: Option<&str>| {
        let scope = KeyScope { scope, tenant, run };
        derive_key(&scope, KeyInput::Explicit("k"), &[])
    };
    assert!(derive(&ok, Some(&ok), Some(&ok)).is_ok());
    for (field, result) in [
        ("tenant", derive("t", Some(&long), None)),
        ("run", derive("t", None, Some(&long))),
        ("scope", derive(&long, None, None)),
    ] {
        assert_eq!(
            result,
            Err(KeyError::TooLong {
                field,
                bytes: MAX_IDENTITY_BYTES + 1,
                limit: MAX_IDENTITY_BYTES
            })
        );
    }
}

// ---- key_arguments ----------------------------------------------------------------------

#[test]
fn key_arguments_equal_after_nfc_are_refused_when_a_tool_is_built() {
    for names in [["a", "a"], [COMPOSED, DECOMPOSED]] {
        let error = Tool::new("book", Policy::default().with_key_arguments(names)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Configuration);
        assert!(error.to_string().contains("twice"), "{error}");
    }
    assert!(Tool::new("book", Policy::default().with_key_arguments(["a", "b"])).is_ok());
}

#[test]
fn key_arguments_equal_after_nfc_are_refused_by_key_derivation() {
    let input = format!(r#"{{"{COMPOSED}":1,"a":2}}"#);
    let scope = KeyScope::new("book");
    for names in [["a", "a"], [COMPOSED, DECOMPOSED]] {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let error = derive_key(&scope, KeyInput::Json(&input), &names).unwrap_err();
        assert!(
            matches!(error, KeyError::DuplicateKeyArgument { .. }),
            "{error}"
        );
        let value: serde_json::Value = serde_json::from_str(&input).unwrap();
        assert!(derive_key(&scope, KeyInput::Value(&value), &names).is_err());
    }
    let distinct = vec![COMPOSED.to_owned(), "a".to_owned()];
    assert!(derive_key(&scope, KeyInput::Json(&input), &distinct).is_ok());
}

#[test]
fn the_cli_key_command_refuses_key_arguments_equal_after_nfc() {
    let input = format!(r#"{{"{COMPOSED}":1,"a":2}}"#);
    for names in ["a,a".to_owned(), format!("{COMPOSED},{DECOMPOSED}")] {
        let output = Command::new(env!("CARGO_BIN_EXE_idemkit"))
            .args(["key", "--scope", "book", "--input", &input])
            .args(["--key-arguments", &names])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{names}: accepted");
        assert!(stderr.contains("listed more than once"), "{stderr}");
        assert!(output.stdout.is_empty());
    }
}
