//! The JNI entry points of idemkit's Java binding (`dev.idemkit`), and one Rust function,
//! [`executor_of`], that hands a Java store to Rust code in the same process.
//!
//! Every export is one call through `boundary::entry`, which catches panics and maps
//! `idemkit::Error` kinds to Java exceptions; the work lives in `ops` (and in `keys` for
//! `IdempotencyKeys`). Handles are `jlong`s from `Arc`/`Box::into_raw` (`handles`). No export
//! blocks for more than about 100 ms: a wait for another caller's claim answers "pending" and
//! Java loops.
//!
//! # Sharing a store with Rust code in the same process
//!
//! One public Rust function, [`executor_of`], turns the handle of an open Java store
//! (`NativeIdempotencyStore.nativeHandle()`, passed down through a native method of your own) into
//! an [`idemkit::Executor`] over the same store and the same event counts. Rust calls through it
//! deduplicate against the Java dispatchers on that store, and the other way round, with the same
//! tool name, policy, tenant and run.
//!
//! This works only when the JNI exports and your Rust code are **one library with one copy of the
//! core**: build your own `cdylib` that depends on this crate (it is also an `rlib`), declare your
//! native methods in it, and load that library instead of the bundled one
//! (`-Didemkit.native.path=/path/to/libyourapp.so`; this crate's `Java_dev_idemkit_*` exports
//! come with it). A handle passed to a second, separately built library that links its own copy
//! of `idemkit` points at types that library does not share: never do that.
//!
//! ```toml
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! idemkit-jni = { path = "path/to/idemkit/java/native" }
//! idemkit = { path = "path/to/idemkit" }   # the same core the binding uses
//! jni = "0.22"
//! ```
//!
//! Stores opened by URL (Redis, PostgreSQL) need no such sharing: a Rust process that opens the
//! same URL deduplicates against Java through the store itself.

mod boundary;
mod handles;
mod java_store;
mod keys;
mod native_log;
mod ops;

/// Not part of the API: what the binding's test library (`java/native/testing`, which re-exports
/// every entry point of this crate) builds its test-only exports from, so that they cross the
/// same boundary as the real ones. The production library exports no test-only symbol.
#[doc(hidden)]
pub mod __testing {
    pub use crate::boundary::{entry, Failure, Result};
}

use jni::objects::{JByteArray, JClass, JLongArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::EnvUnowned;

use boundary::entry;

/// The executor over the Java store behind `handle`: a clone that shares the store and its event
/// counts, and stays valid after the Java store is closed or collected (it holds its own `Arc`;
/// closing the Java store only drops Java's reference). `None` for handle 0.
///
/// # Safety
///
/// `handle` must be 0 or the value of `NativeIdempotencyStore.nativeHandle()` of a store that is
/// open for the whole of this call, in this process and this library (see the crate doc): the
/// Java caller keeps the store reachable and does not close it until the native method that calls
/// this has returned (`Reference.reachabilityFence(store)` after the call, as every entry point of
/// the binding does). Any other value, or the handle of a store already closed, is undefined
/// behaviour. The returned executor itself has no such condition.
pub unsafe fn executor_of(handle: jlong) -> Option<idemkit::Executor> {
    handles::store(handle)
        .ok()
        .map(|store| store.executor.clone())
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeOpen<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    url: JString<'l>,
    key_prefix: JString<'l>,
    table: JString<'l>,
    allow_evicting: jboolean,
    max_outcome_bytes: jlong,
) -> jlong {
    entry(&mut env, |env| {
        ops::store_open(
            env,
            &url,
            &key_prefix,
            &table,
            allow_evicting,
            max_outcome_bytes,
        )
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeOpenJava<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    bridge: JObject<'l>,
    description: JString<'l>,
    max_outcome_bytes: jlong,
) -> jlong {
    entry(&mut env, |env| {
        ops::store_open_java(env, &bridge, &description, max_outcome_bytes)
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeDestroy<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) {
    entry(&mut env, |_| {
        handles::store_destroy(store);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeForget<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    tenant: JString<'l>,
) -> jlong {
    entry(&mut env, |env| ops::store_forget(env, store, &tenant))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storePurgeExpired<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> jlong {
    entry(&mut env, |_| ops::store_purge_expired(store))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeDescribe<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> JString<'l> {
    entry(&mut env, |env| ops::store_describe(env, store))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeEventCounts<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> JLongArray<'l> {
    entry(&mut env, |env| ops::store_event_counts(env, store))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_idemkit_NativeBridge_toolNew<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
    strategy: JString<'l>,
    ttl_seconds: jlong,
    on_cache_hit: JString<'l>,
    cache_failures: jboolean,
    key_arguments: JObjectArray<'l, JString<'l>>,
    lease_seconds: jlong,
    timeout_ms: jlong,
    parameters: JObjectArray<'l, JString<'l>>,
    effect: JString<'l>,
    no_effect: JObjectArray<'l, JString<'l>>,
    permanent: JObjectArray<'l, JString<'l>>,
    retry: JLongArray<'l>,
    retry_on: JObjectArray<'l, JString<'l>>,
    reject_payload_mismatch: jboolean,
    upstream_honors_key: jboolean,
) -> jlong {
    entry(&mut env, |env| {
        ops::tool_new(
            env,
            &name,
            &strategy,
            ttl_seconds,
            &on_cache_hit,
            cache_failures,
            &key_arguments,
            lease_seconds,
            timeout_ms,
            &parameters,
            &effect,
            &no_effect,
            &permanent,
            &retry,
            &retry_on,
            reject_payload_mismatch,
            upstream_honors_key,
        )
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_toolDestroy<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    tool: jlong,
) {
    entry(&mut env, |_| {
        handles::tool_destroy(tool);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_advance<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
    budget_ms: jint,
) -> JByteArray<'l> {
    entry(&mut env, |env| ops::advance(env, attempt, budget_ms))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_idemkit_NativeBridge_report<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
    body: jint,
    result: JByteArray<'l>,
    length: jint,
    error_type: JString<'l>,
    message: JString<'l>,
    types: JObjectArray<'l, JString<'l>>,
) -> JString<'l> {
    entry(&mut env, |env| {
        ops::report(
            env,
            attempt,
            body,
            &result,
            length,
            &error_type,
            &message,
            &types,
        )
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_reportExchange<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
    error_type: JString<'l>,
    message: JString<'l>,
    types: JObjectArray<'l, JString<'l>>,
    exchange: jint,
    status: jint,
    key_sent: jboolean,
) -> JString<'l> {
    entry(&mut env, |env| {
        ops::report_exchange(
            env,
            attempt,
            &error_type,
            &message,
            &types,
            exchange,
            status,
            key_sent,
        )
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeSettleKey<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    tenant: JString<'l>,
    key: JString<'l>,
    result: JString<'l>,
    ttl_seconds: jlong,
    force: jboolean,
) -> jboolean {
    entry(&mut env, |env| {
        ops::store_settle_key(env, store, &tenant, &key, &result, ttl_seconds, force)
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_attemptRetryPause<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
) -> jlong {
    entry(&mut env, |_| ops::attempt_retry_pause(attempt))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeListen<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) {
    entry(&mut env, |_| ops::store_listen(store))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_storeDrainEvents<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| ops::store_drain_events(env, store))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_logDrain<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, ops::log_drain)
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_policyDefaults<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JLongArray<'l> {
    entry(&mut env, ops::policy_defaults)
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_attemptDestroy<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
) {
    entry(&mut env, |_| {
        handles::attempt_destroy(attempt);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_postgresCreateTable<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    url: JString<'l>,
    table: JString<'l>,
) {
    entry(&mut env, |env| {
        ops::postgres_create_table(env, &url, &table)
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_postgresStatements<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    table: JString<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, |env| ops::postgres_statements(env, &table))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_redisScripts<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JObjectArray<'l, JString<'l>> {
    entry(&mut env, ops::redis_scripts)
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_contextNew<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    tenant: JString<'l>,
    run: JString<'l>,
) -> jlong {
    entry(&mut env, |env| ops::context_new(env, &tenant, &run))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_contextDestroy<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    context: jlong,
) {
    entry(&mut env, |_| {
        handles::context_destroy(context);
        Ok(())
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_idemkit_NativeBridge_begin<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    tool: jlong,
    context: jlong,
    input: JByteArray<'l>,
    length: jint,
    budget_ms: jint,
) -> JByteArray<'l> {
    entry(&mut env, |env| {
        ops::begin(env, store, tool, context, &input, length, budget_ms)
    })
}

/// `begin` for an `EXPLICIT` call that also hands over its whole input, whose fingerprint the
/// record keeps (SPEC v1.1 rule 9).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_idemkit_NativeBridge_beginWithPayload<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    store: jlong,
    tool: jlong,
    context: jlong,
    input: JByteArray<'l>,
    length: jint,
    payload: JByteArray<'l>,
    payload_length: jint,
    budget_ms: jint,
) -> JByteArray<'l> {
    entry(&mut env, |env| {
        ops::begin_with_payload(
            env,
            store,
            tool,
            context,
            (&input, length),
            (&payload, payload_length),
            budget_ms,
        )
    })
}

/// `IdempotencyKeys.derive*`: the core's key derivation over JSON text, touching no store.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_fingerprint<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    input: JByteArray<'l>,
    length: jint,
) -> JString<'l> {
    entry(&mut env, |env| keys::fingerprint(env, &input, length))
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_idemkit_NativeBridge_deriveKey<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    scope: JByteArray<'l>,
    tenant: JByteArray<'l>,
    run: JByteArray<'l>,
    key_arguments: JByteArray<'l>,
    input: JByteArray<'l>,
    length: jint,
    explicit: jboolean,
) -> JString<'l> {
    entry(&mut env, |env| {
        keys::derive(
            env,
            &scope,
            &tenant,
            &run,
            &key_arguments,
            &input,
            length,
            explicit,
        )
    })
}
