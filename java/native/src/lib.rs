//! The JNI entry points of idemkit's Java binding (`dev.idemkit`), and nothing else.
//!
//! Every export is one call through [`boundary::entry`], which catches panics and maps
//! `idemkit::Error` kinds to Java exceptions; the work lives in [`ops`]. Handles are `jlong`s
//! from `Arc`/`Box::into_raw` ([`handles`]). No export blocks for more than about 100 ms: a wait
//! for another caller's claim answers "pending" and Java loops.

mod boundary;
mod handles;
mod ops;

use jni::objects::{JByteArray, JClass, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::EnvUnowned;

use boundary::entry;

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
pub extern "system" fn Java_dev_idemkit_NativeBridge_succeed<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
    result: JByteArray<'l>,
    length: jint,
) -> JString<'l> {
    entry(&mut env, |env| ops::succeed(env, attempt, &result, length))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_fail<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
    error_type: JString<'l>,
    message: JString<'l>,
) -> JString<'l> {
    entry(&mut env, |env| {
        ops::fail(env, attempt, &error_type, &message)
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_abandonUnrun<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
) {
    entry(&mut env, |_| ops::abandon_unrun(attempt))
}

#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeBridge_overran<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    attempt: jlong,
) -> jboolean {
    entry(&mut env, |_| ops::overran(attempt))
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

/// Test support (`dev.idemkit.NativeTestSupport`, in the test sources): a panic at the boundary.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_panic<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
) {
    entry(&mut env, |_| ops::provoke_panic())
}

/// Test support: an `idemkit::Error` of the kind with this code.
#[no_mangle]
pub extern "system" fn Java_dev_idemkit_NativeTestSupport_throwKind<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    code: jint,
) {
    entry(&mut env, |_| ops::provoke_kind(code))
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
    explicit: jboolean,
    budget_ms: jint,
) -> JByteArray<'l> {
    entry(&mut env, |env| {
        ops::begin(
            env, store, tool, context, &input, length, explicit, budget_ms,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_dev_idemkit_NativeBridge_deriveKey<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    tool: jlong,
    context: jlong,
    input: JByteArray<'l>,
    length: jint,
    explicit: jboolean,
) -> JString<'l> {
    entry(&mut env, |env| {
        ops::derive_key(env, tool, context, &input, length, explicit)
    })
}
