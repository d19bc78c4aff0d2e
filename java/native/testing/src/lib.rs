//! The test library of idemkit's Java binding, `libidemkit_jni_testing`: every JNI export of the
//! production library (`idemkit-jni`, linked in as an rlib: one copy of the core) plus the
//! test-only exports of `dev.idemkit.NativeTestSupport` (in the Java test sources). The Java
//! tests load this library *instead of* `libidemkit_jni` (`-Didemkit.native.path`, set by
//! Maven's surefire configuration); the jar bundles only the production library, which exports
//! no test-only symbol.
//!
//! The test exports go through the production crate's own boundary (`entry`), so a panic or an
//! error here reaches Java exactly as one in a real export would.

// Brings in the production exports: without a use of the crate, its `#[no_mangle]` entry points
// would not be linked into this library.
#[allow(unused_imports)]
pub use idemkit_jni::*;

use idemkit::key::KeyError;
use idemkit::{CallContext, Error, KeyInput, KeyStrategy, Policy, Tool};
use idemkit_jni::__testing::{entry, Failure, Result};
use jni::objects::{JClass, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{Env, EnvUnowned};

fn string(env: &Env<'_>, s: &JString<'_>) -> Result<Option<String>> {
    if s.is_null() {
        return Ok(None);
    }
    Ok(Some(s.try_to_string(env)?))
}

/// Answers whether this is the test library (`NativeTestSupport` checks it once, to say which
/// library to load when the production one was loaded instead).
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_isTestLibrary<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jni::sys::jboolean {
    entry(&mut env, |_| Ok(true))
}

/// A panic at the boundary.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_panic<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) {
    entry(&mut env, |_| -> Result<()> {
        panic!("provoked by NativeTestSupport.panic()")
    })
}

/// An `idemkit::Error` of the kind with this code, as the executor would raise it.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_throwKind<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    code: jint,
) {
    entry(&mut env, |_| provoke_kind(code))
}

fn provoke_kind(code: jint) -> Result<()> {
    use idemkit::ErrorKind as K;
    let tool = "test_tool".to_owned();
    let key = "0".repeat(64);
    let kind = K::from_code(code)
        .ok_or_else(|| Failure::IllegalArgument(format!("no error kind has code {code}")))?;
    let error = match kind {
        K::InvalidKey => Error::InvalidKey {
            tool,
            source: KeyError::BlankExplicitKey,
        },
        K::Configuration => {
            Error::Configuration("ttlSeconds must be > 0 on `test_tool`; it was 0".into())
        }
        K::CachedFailure => Error::CachedFailure {
            tool,
            key,
            error_type: "java.io.IOException".into(),
            message: "disk full".into(),
        },
        K::FailFast => Error::FailFast {
            tool,
            key,
            state: "completed",
        },
        K::InProgress => Error::InProgress {
            tool,
            key,
            waited_ms: 5,
        },
        K::Indeterminate => Error::Indeterminate {
            tool,
            key,
            tenant: None,
            held: None,
            ran: false,
        },
        K::StoreUnavailable => Error::StoreUnavailable {
            tool,
            message: "connection refused".into(),
            source: None,
        },
        K::OutcomeTooLarge => Error::OutcomeTooLarge {
            tool,
            key,
            bytes: 2 << 20,
        },
        K::Timeout => Error::Timeout {
            tool,
            key,
            timeout_ms: 10,
            outcome: "its outcome is unknown".into(),
        },
        K::PayloadMismatch => Error::PayloadMismatch {
            tool,
            key,
            tenant: None,
        },
        K::Internal => Error::Internal("provoked".into()),
        other => {
            return Err(Failure::IllegalArgument(format!(
                "no provoked error for kind {other}"
            )))
        }
    };
    Err(Failure::Idemkit(error))
}

/// A Rust `Executor::call` on the Java store `store` (through the public
/// `idemkit_jni::executor_of`, as a Rust application would), whose body returns the JSON
/// `result`. Answers `{"ran":<body runs>,"result":<the call's result>}`.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_rustCall<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    tool: JString<'l>,
    tenant: JString<'l>,
    run: JString<'l>,
    input: JString<'l>,
    result: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        rust_call(env, store, &tool, &tenant, &run, &input, &result)
    })
}

fn rust_call<'l>(
    env: &mut Env<'l>,
    store: jlong,
    tool: &JString<'_>,
    tenant: &JString<'_>,
    run: &JString<'_>,
    input: &JString<'_>,
    result: &JString<'_>,
) -> Result<JString<'l>> {
    // SAFETY: the Java caller holds the store open across this call (`NativeTestSupport`), and
    // this library is the one that opened it.
    let executor =
        unsafe { executor_of(store) }.ok_or(Failure::NullHandle("the idempotency store"))?;
    let tool = Tool::new(
        string(env, tool)?.unwrap_or_default(),
        Policy::new(KeyStrategy::HashInput),
    )?;
    let context = CallContext {
        tenant: string(env, tenant)?,
        run: string(env, run)?,
    };
    let input = string(env, input)?.unwrap_or_else(|| "null".to_owned());
    let result = string(env, result)?.unwrap_or_else(|| "null".to_owned());
    let result: serde_json::Value = serde_json::from_str(&result)
        .map_err(|e| Failure::IllegalArgument(format!("result is not JSON: {e}")))?;
    let ran = std::sync::atomic::AtomicU64::new(0);
    let answer = idemkit::runtime::block_on(executor.call(
        &tool,
        &context,
        KeyInput::Json(&input),
        |_| async {
            ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(result)
        },
    ));
    let value: serde_json::Value = match answer {
        Ok(value) => value,
        Err(idemkit::CallError::Idempotency(e) | idemkit::CallError::Held { error: e, .. }) => {
            return Err(Failure::Idemkit(e))
        }
        Err(idemkit::CallError::Body(e)) => return Err(Failure::IllegalArgument(e)),
        Err(other) => return Err(Failure::IllegalArgument(format!("{other:?}"))),
    };
    let reply = serde_json::json!({ "ran": ran.into_inner(), "result": value });
    Ok(JString::from_str(env, reply.to_string())?)
}

/// The core's `Store` behind a Java store handle (a Java-written store: its upcalls).
fn core_store(store: jlong) -> Result<std::sync::Arc<dyn idemkit::store::Store>> {
    // SAFETY: the Java caller holds the store open across the native call (`NativeTestSupport`),
    // and this library is the one that opened it.
    let executor =
        unsafe { executor_of(store) }.ok_or(Failure::NullHandle("the idempotency store"))?;
    Ok(executor.store().clone())
}

/// The take-over checks of the core's store conformance suite (SPEC v1.1 rule 12:
/// `idemkit::testing`) on the store behind `store` — for a Java-written store, through its
/// upcalls: 16 concurrent take-overs of one abandoned claim have exactly one winner, and only an
/// abandoned claim of the expected token is taken over. A failed check is a panic, which reaches
/// Java as an error carrying its message.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_takeOverConformance<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) {
    entry(&mut env, |_| {
        let store = core_store(store)?;
        idemkit::runtime::block_on(async move {
            idemkit::testing::concurrent_take_overs_of_an_abandoned_claim_have_exactly_one_winner(
                store.clone(),
            )
            .await;
            idemkit::testing::take_over_moves_only_an_abandoned_claim_of_the_expected_token(store)
                .await;
        });
        Ok(())
    })
}

/// The core's whole store conformance suite (`idemkit::testing::check_store`, SPEC §4 and v1.1)
/// on the store behind `store` — for a Java-written store, through its upcalls: among them the
/// 64-claimer races on a free key, on an expired record and on a remembered failure, the
/// owner-only settling checks, expiry, `forget`, `purge_expired`, `list` and the fingerprint.
/// Every check uses fresh random tenants and keys, so the one store serves them all. A failed
/// check is a panic, which reaches Java as an error carrying its message.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_storeConformance<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) {
    entry(&mut env, |_| {
        let store = core_store(store)?;
        idemkit::runtime::block_on(idemkit::testing::check_store(move || {
            let store = store.clone();
            async move { store }
        }));
        Ok(())
    })
}

/// Logs `count` warnings through the `log` facade, as the core logs them (target
/// `idemkit::testing`), each `message` followed by its number from 0.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_logWarnings<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    count: jint,
    message: JString<'l>,
) {
    entry(&mut env, |env| -> Result<()> {
        let message = string(env, &message)?.unwrap_or_default();
        for i in 0..count {
            log::warn!(target: "idemkit::testing", "{message} {i}");
        }
        Ok(())
    })
}

/// Lists the records of `tenant` in the store behind `store` through the core's `Store` trait
/// (for a Java-written store: its `list` upcalls): with `newest` false every page of
/// `Store::list` at `limit` per page, answering `{"pages":[<records per page>],"records":
/// [[<key hex>,<claimed_at>],...]}` in page order; with `newest` true one `Store::newest` of
/// `limit`, answering `{"records":[...]}` newest first.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_listThroughCore<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    tenant: JString<'l>,
    limit: jint,
    newest: jboolean,
) -> JString<'l> {
    entry(&mut env, |env| {
        let store = core_store(store)?;
        let filter = idemkit::store::ListFilter {
            tenant: Some(string(env, &tenant)?),
            status: None,
            limit: usize::try_from(limit).unwrap_or(0),
        };
        let row = |r: &idemkit::Record| serde_json::json!([r.key, r.claimed_at]);
        let reply = idemkit::runtime::block_on(async move {
            if newest {
                let page = store.newest(&filter).await?;
                let records: Vec<_> = page.records.iter().map(row).collect();
                return Ok::<_, idemkit::StoreError>(serde_json::json!({ "records": records }));
            }
            let mut pages = Vec::new();
            let mut records = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let page = store.list(&filter, cursor.as_deref()).await?;
                pages.push(page.records.len());
                records.extend(page.records.iter().map(row));
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            Ok(serde_json::json!({ "pages": pages, "records": records }))
        })
        .map_err(|e| Failure::IllegalArgument(e.to_string()))?;
        Ok(JString::from_str(env, reply.to_string())?)
    })
}
