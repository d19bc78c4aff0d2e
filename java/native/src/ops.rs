//! What each export does, in plain Rust over `Env`: open stores, build tools, and step calls
//! through the executor's two-step protocol (`prepare_raw` → `advance` → `report`). The executor
//! decides what every answer means; this file only translates between Java and the core.

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use idemkit::error::{Setting, StoreOperation};
use idemkit::store::{settle_key, KeySettled, RecordId, Resolution, StoreOptions};
use idemkit::{
    Answer, BodyReport, CallContext, Effect, Error, Exchange, Executor, Failure as BodyFailure,
    KeyStrategy, Outcome, Policy, RawInput, Recording, RetryBehavior, RetryPolicy, Step,
    SuppliedKey, Tool,
};
use jni::objects::ReleaseMode;
use jni::objects::{JByteArray, JLongArray, JObjectArray, JString};
use jni::sys::{jint, jlong};
use jni::Env;

use crate::boundary::{Failure, Result};
use crate::handles::{self, AttemptHandle, EventQueue, StoreHandle, ToolHandle};

/// Step codes, the first byte of an answer (mirrored in `NativeBridge.java`).
pub(crate) const STEP_RUN: u8 = 0;
pub(crate) const STEP_REPLAY: u8 = 1;
pub(crate) const STEP_PENDING: u8 = 2;

/// An answer's header: the step (1 byte), the key's length (1 byte), the attempt handle (8 bytes,
/// little-endian; 0 for a replay). The key (ASCII) and, for a replay, the remembered JSON follow.
const HEADER: usize = 10;

/// Inputs up to this size are copied onto the stack (one JNI call) instead of read in place
/// (a critical region: three calls).
const SMALL_INPUT: usize = 512;

/// Answers up to this size are assembled on the stack and copied into Java in one call.
const SMALL_ANSWER: usize = 1024;

/// No native call blocks longer than this, whatever Java asks (SPEC §7).
const MAX_BUDGET: Duration = Duration::from_millis(100);

/// Runs one step of a call from this (JNI) thread: on a caller lane that this thread drives
/// itself, store I/O included (see `idemkit::runtime::block_on_caller`); a step that is ready
/// at once (the memory store's claims and replays) costs one poll.
fn drive<F: Future>(future: F) -> F::Output {
    idemkit::runtime::block_on_caller(future)
}

fn string(env: &Env<'_>, s: &JString<'_>) -> Result<Option<String>> {
    if s.is_null() {
        return Ok(None);
    }
    Ok(Some(s.try_to_string(env)?))
}

fn strings(
    env: &mut Env<'_>,
    array: &JObjectArray<'_, JString<'_>>,
) -> Result<Option<Vec<String>>> {
    if array.is_null() {
        return Ok(None);
    }
    let len = array.len(env)?;
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        let item: JString = array.get_element(env, i)?;
        out.push(string(env, &item)?.unwrap_or_default());
    }
    Ok(Some(out))
}

fn bytes(env: &Env<'_>, array: &JByteArray<'_>, length: jint) -> Result<Vec<u8>> {
    let length = usize::try_from(length)
        .map_err(|_| Failure::IllegalArgument(format!("negative input length {length}")))?;
    let mut buf = vec![0i8; length];
    array.get_region(env, 0, &mut buf)?;
    // i8 → u8 reinterprets each byte.
    Ok(buf.into_iter().map(|b| b as u8).collect())
}

fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|e| {
        Failure::IllegalArgument(format!("the input is not UTF-8 ({e}); a binding bug"))
    })
}

pub(crate) fn store_open(
    env: &mut Env<'_>,
    url: &JString<'_>,
    key_prefix: &JString<'_>,
    table: &JString<'_>,
    allow_evicting: bool,
    max_outcome_bytes: jlong,
) -> Result<jlong> {
    crate::native_log::install();
    let url = string(env, url)?.ok_or(Failure::IllegalArgument("the store URL is null".into()))?;
    let options = StoreOptions {
        key_prefix: string(env, key_prefix)?,
        table: string(env, table)?,
        allow_evicting,
        max_outcome_bytes: usize::try_from(max_outcome_bytes).ok().filter(|&m| m > 0),
        ..StoreOptions::default()
    };
    let store = idemkit::runtime::block_on(idemkit::store::open(&url, &options))?;
    Ok(handles::store_into_handle(Arc::new(StoreHandle {
        executor: Executor::new(store),
        events: Arc::new(EventQueue::default()),
    })))
}

/// `NativeIdempotencyStore(StoreOperations)`: a store written in Java, driven by the executor
/// through `bridge` (a `dev.idemkit.StoreBridge`; see `java_store`).
pub(crate) fn store_open_java(
    env: &mut Env<'_>,
    bridge: &jni::objects::JObject<'_>,
    description: &JString<'_>,
    max_outcome_bytes: jlong,
) -> Result<jlong> {
    crate::native_log::install();
    if bridge.is_null() {
        return Err(Failure::IllegalArgument("the store bridge is null".into()));
    }
    let description = string(env, description)?.unwrap_or_else(|| "a Java store".to_owned());
    let max_outcome_bytes = usize::try_from(max_outcome_bytes).unwrap_or(0);
    let store = crate::java_store::JavaStore::new(env, bridge, description, max_outcome_bytes)?;
    Ok(handles::store_into_handle(Arc::new(StoreHandle {
        executor: Executor::new(Arc::new(store)),
        events: Arc::new(EventQueue::default()),
    })))
}

pub(crate) fn store_forget(env: &mut Env<'_>, store: jlong, tenant: &JString<'_>) -> Result<jlong> {
    let store = handles::store(store)?;
    let tenant = string(env, tenant)?;
    let forgotten = idemkit::runtime::block_on(store.executor.store().forget(tenant.as_deref()))
        .map_err(|e| store_error(StoreOperation::Forget { tenant }, &store, e))?;
    Ok(forgotten as jlong)
}

pub(crate) fn store_purge_expired(store: jlong) -> Result<jlong> {
    let store = handles::store(store)?;
    let purged = idemkit::runtime::block_on(store.executor.store().purge_expired())
        .map_err(|e| store_error(StoreOperation::PurgeExpired, &store, e))?;
    Ok(purged as jlong)
}

fn store_error(
    operation: StoreOperation,
    store: &StoreHandle,
    error: idemkit::StoreError,
) -> Failure {
    Failure::Idemkit(Error::StoreOperation {
        operation,
        message: format!("{error} ({})", store.executor.store().describe()),
        source: error.driver_error().cloned(),
    })
}

pub(crate) fn store_describe<'l>(env: &mut Env<'l>, store: jlong) -> Result<JString<'l>> {
    let store = handles::store(store)?;
    Ok(JString::from_str(env, store.executor.store().describe())?)
}

pub(crate) fn store_event_counts<'l>(env: &mut Env<'l>, store: jlong) -> Result<JLongArray<'l>> {
    let store = handles::store(store)?;
    let counts: Vec<jlong> = idemkit::EventKind::ALL
        .iter()
        .map(|k| store.executor.events().count(*k) as jlong)
        .collect();
    let array = JLongArray::new(env, counts.len())?;
    array.set_region(env, 0, &counts)?;
    Ok(array)
}

/// A setting as Java users write it (`@Idempotent(ttlSeconds = ...)`, `Policy.keyArguments`).
pub(crate) fn java_name(setting: Setting) -> &'static str {
    match setting {
        Setting::Ttl => "ttlSeconds",
        Setting::Lease => "leaseSeconds",
        Setting::Timeout => "timeoutMs",
        Setting::KeyArguments => "keyArguments",
        Setting::CacheFailures => "cacheFailures",
        Setting::Effect => "effect",
        Setting::NoEffectErrors => "noEffect",
        Setting::PermanentErrors => "permanent",
        Setting::MaxAttempts => "maxAttempts",
        Setting::InitialBackoff => "initialBackoff",
        Setting::MaxBackoff => "maxBackoff",
        Setting::RetryOn => "retryOn",
        other => other.rust_name(),
    }
}

/// A setting error as Java users write the settings; the core decided what is wrong, this only
/// names the settings.
fn java_names(error: Error) -> Failure {
    match error {
        Error::InvalidSetting(message) => {
            Failure::Idemkit(Error::Configuration(message.render(java_name)))
        }
        other => Failure::Idemkit(other),
    }
}

/// `IdempotencyStore.addListener`: from now on the store's events wait for Java listeners.
pub(crate) fn store_listen(store: jlong) -> Result<()> {
    let store = handles::store(store)?;
    store.events.subscribe(&store.executor);
    Ok(())
}

/// The events waiting for Java listeners, oldest first, five strings each (kind, tool, key,
/// tenant, detail; null when absent); null when nothing waits. The count of events dropped
/// because nobody drained them comes first as a sixth field of a leading `dropped` event.
pub(crate) fn store_drain_events<'l>(
    env: &mut Env<'l>,
    store: jlong,
) -> Result<JObjectArray<'l, JString<'l>>> {
    let store = handles::store(store)?;
    if !store.events.is_subscribed() {
        return Ok(JObjectArray::<JString>::null());
    }
    let mut events = store.events.drain();
    let dropped = store.events.dropped.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        events.insert(
            0,
            [
                Some("dropped".to_owned()),
                None,
                None,
                None,
                Some(dropped.to_string()),
            ],
        );
    }
    if events.is_empty() {
        return Ok(JObjectArray::<JString>::null());
    }
    let array = JObjectArray::<JString>::new(env, events.len() * 5, JString::null())?;
    for (i, event) in events.iter().enumerate() {
        for (j, field) in event.iter().enumerate() {
            if let Some(text) = field {
                let text = JString::from_str(env, text)?;
                array.set_element(env, i * 5 + j, &text)?;
            }
        }
    }
    Ok(array)
}

/// The core's log lines waiting for Java (see `native_log`), oldest first, three strings each:
/// level (`ERROR`, `WARN`, `INFO`), target, message; null when nothing waits. The count of lines
/// dropped because nobody drained them comes first, as a line of level `DROPPED` whose message
/// is the count.
pub(crate) fn log_drain<'l>(env: &mut Env<'l>) -> Result<JObjectArray<'l, JString<'l>>> {
    let (lines, dropped) = crate::native_log::drain();
    if lines.is_empty() && dropped == 0 {
        return Ok(JObjectArray::<JString>::null());
    }
    let leading = usize::from(dropped > 0);
    let array = JObjectArray::<JString>::new(env, (lines.len() + leading) * 3, JString::null())?;
    if dropped > 0 {
        let level = JString::from_str(env, "DROPPED")?;
        array.set_element(env, 0, &level)?;
        let count = JString::from_str(env, dropped.to_string())?;
        array.set_element(env, 2, &count)?;
    }
    for (i, (level, target, message)) in lines.iter().enumerate() {
        let at = (i + leading) * 3;
        for (j, field) in [level.as_str(), target.as_str(), message.as_str()]
            .into_iter()
            .enumerate()
        {
            let text = JString::from_str(env, field)?;
            array.set_element(env, at + j, &text)?;
        }
    }
    Ok(array)
}

fn seconds(tool: &str, field: &str, value: jlong) -> Result<Duration> {
    if value <= 0 {
        return Err(Failure::Idemkit(Error::Configuration(format!(
            "{field} must be > 0 on `{tool}`; it was {value}"
        ))));
    }
    Ok(Duration::from_secs(value as u64))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn tool_new(
    env: &mut Env<'_>,
    name: &JString<'_>,
    strategy: &JString<'_>,
    ttl_seconds: jlong,
    on_cache_hit: &JString<'_>,
    cache_failures: bool,
    key_arguments: &JObjectArray<'_, JString<'_>>,
    lease_seconds: jlong,
    timeout_ms: jlong,
    parameters: &JObjectArray<'_, JString<'_>>,
    effect: &JString<'_>,
    no_effect: &JObjectArray<'_, JString<'_>>,
    permanent: &JObjectArray<'_, JString<'_>>,
    retry: &JLongArray<'_>,
    retry_on: &JObjectArray<'_, JString<'_>>,
    reject_payload_mismatch: bool,
    upstream_honors_key: bool,
) -> Result<jlong> {
    let name = string(env, name)?.unwrap_or_default();
    let strategy_name = string(env, strategy)?.unwrap_or_default();
    let strategy = KeyStrategy::from_name(&strategy_name)
        .ok_or_else(|| Failure::IllegalArgument(format!("unknown strategy {strategy_name}")))?;
    let behavior_name = string(env, on_cache_hit)?.unwrap_or_default();
    let on_cache_hit = RetryBehavior::from_name(&behavior_name)
        .ok_or_else(|| Failure::IllegalArgument(format!("unknown onCacheHit {behavior_name}")))?;
    let effect_name = string(env, effect)?.unwrap_or_else(|| "IDEMPOTENT".to_owned());
    let effect = Effect::from_name(&effect_name)
        .ok_or_else(|| Failure::IllegalArgument(format!("unknown effect {effect_name}")))?;
    let policy = Policy::new(strategy)
        .with_ttl(seconds(&name, "ttlSeconds", ttl_seconds)?)
        .with_lease(seconds(&name, "leaseSeconds", lease_seconds)?)
        .with_on_cache_hit(on_cache_hit)
        .with_cache_failures(cache_failures)
        .with_key_arguments(strings(env, key_arguments)?.unwrap_or_default())
        .with_effect(effect)
        .with_no_effect_errors(strings(env, no_effect)?.unwrap_or_default())
        .with_permanent_errors(strings(env, permanent)?.unwrap_or_default())
        .with_reject_payload_mismatch(reject_payload_mismatch)
        .with_upstream_honors_key(upstream_honors_key);
    let retry = if retry.is_null() {
        None
    } else {
        let mut values = [0 as jlong; 3];
        retry.get_region(env, 0, &mut values)?;
        let millis = |v: jlong| Duration::from_millis(v.max(0) as u64);
        let policy = RetryPolicy::attempts(u32::try_from(values[0]).unwrap_or(0))
            .with_backoff(millis(values[1]), millis(values[2]))
            .with_retry_on(strings(env, retry_on)?.unwrap_or_default());
        policy.validate().map_err(java_names)?;
        Some(policy)
    };
    let timeout = match timeout_ms {
        0 => None,
        t if t < 0 => {
            return Err(Failure::Idemkit(Error::Configuration(format!(
                "timeoutMs must be > 0 on `{name}`; it was {t}. Leave it 0 for no deadline"
            ))))
        }
        t => Some(Duration::from_millis(t as u64)),
    };
    let tool = Tool::with_timeout(name, policy, timeout).map_err(java_names)?;
    if let Some(parameters) = strings(env, parameters)? {
        tool.check_parameters(&parameters).map_err(java_names)?;
    }
    Ok(handles::tool_into_handle(ToolHandle { tool, retry }))
}

/// The call's key as ASCII: the 64-hex key, the UUID (36 characters), or nothing (`NONE`).
struct KeyText {
    bytes: [u8; 64],
    len: usize,
}

impl KeyText {
    fn of(attempt: &idemkit::Attempt) -> KeyText {
        let mut text = KeyText {
            bytes: [0; 64],
            len: 0,
        };
        if let Some(key) = attempt.key() {
            key.write_hex(&mut text.bytes);
            text.len = 64;
        } else if let Some(uuid) = attempt.key_text() {
            let n = uuid.len().min(64);
            text.bytes[..n].copy_from_slice(&uuid.as_bytes()[..n]);
            text.len = n;
        }
        text
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn as_str(&self) -> Option<&str> {
        (self.len > 0).then(|| std::str::from_utf8(self.as_bytes()).unwrap_or_default())
    }
}

/// The answer of `begin`/`advance` as one `byte[]` (see [`HEADER`]): one array for Java to
/// allocate and read, and no `long[]` out-parameter to write.
fn answer<'l>(
    env: &mut Env<'l>,
    step: &Step,
    handle: jlong,
    key: &KeyText,
) -> Result<JByteArray<'l>> {
    let (code, replay) = match step {
        Step::Run => (STEP_RUN, &[][..]),
        Step::Replay(json) => (STEP_REPLAY, json.as_bytes()),
        Step::Pending => (STEP_PENDING, &[][..]),
        other => {
            return Err(Failure::Idemkit(Error::Internal(format!(
                "step {other:?} is unknown to this build of the Java binding"
            ))))
        }
    };
    let mut head = [0u8; HEADER + 64];
    head[0] = code;
    head[1] = key.len as u8;
    head[2..HEADER].copy_from_slice(&handle.to_le_bytes());
    head[HEADER..HEADER + key.len].copy_from_slice(key.as_bytes());
    let head = &head[..HEADER + key.len];
    let total = head.len() + replay.len();
    let array = JByteArray::new(env, total)?;
    if total <= SMALL_ANSWER {
        // One copy into the Java array (each JNI call costs an exception check).
        let mut buf = [0u8; SMALL_ANSWER];
        buf[..head.len()].copy_from_slice(head);
        buf[head.len()..total].copy_from_slice(replay);
        array.set_region(env, 0, as_jbytes(&buf[..total]))?;
    } else {
        array.set_region(env, 0, as_jbytes(head))?;
        array.set_region(env, head.len() as jint, as_jbytes(replay))?;
    }
    Ok(array)
}

fn as_jbytes(bytes: &[u8]) -> &[i8] {
    // SAFETY: i8 and u8 have the same size and alignment; only the bit patterns cross.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const i8, bytes.len()) }
}

/// An error of the call names its key, if the call has one (the core's store errors do not).
fn with_key(error: Error, key: &KeyText) -> Failure {
    match (error.key(), key.as_str()) {
        (None, Some(key)) => Failure::Keyed(error, key.to_owned()),
        _ => Failure::Idemkit(error),
    }
}

fn budget(ms: jint) -> Duration {
    Duration::from_millis(ms.max(1) as u64).min(MAX_BUDGET)
}

/// Derives the key and claims it, waiting at most the budget: tenant and run come as a context
/// handle (converted once per dispatcher view) and the input is read in place (a critical region
/// held only while the key is derived, with no JNI call). One crossing answers a cache hit.
#[allow(clippy::too_many_arguments)]
pub(crate) fn begin<'l>(
    env: &mut Env<'l>,
    store: jlong,
    tool: jlong,
    context: jlong,
    input: &JByteArray<'_>,
    length: jint,
    budget_ms: jint,
) -> Result<JByteArray<'l>> {
    let store = handles::store(store)?;
    let tool = handles::tool(tool)?;
    let context = handles::context(context)?;
    let mut attempt = with_input(env, input, length, |input| {
        prepare(&store.executor, &tool.tool, context, input, None)
    })?;
    if tool.retry.is_some() {
        attempt.set_retry(tool.retry.clone());
    }
    step(env, store.executor.clone(), attempt, budget_ms)
}

/// [`begin`] for an `EXPLICIT` call that hands over its whole input (ASCII JSON) too: the core
/// keeps its fingerprint and refuses a repeat of the key with another one (SPEC v1.1 rule 9).
/// The payload is copied out of its array first, so the key's array may be read in place.
pub(crate) fn begin_with_payload<'l>(
    env: &mut Env<'l>,
    store: jlong,
    tool: jlong,
    context: jlong,
    (input, length): (&JByteArray<'_>, jint),
    (payload, payload_length): (&JByteArray<'_>, jint),
    budget_ms: jint,
) -> Result<JByteArray<'l>> {
    let store = handles::store(store)?;
    let tool = handles::tool(tool)?;
    let context = handles::context(context)?;
    let payload = if payload.is_null() {
        None
    } else {
        Some(bytes(env, payload, payload_length)?)
    };
    let payload = payload.as_deref().map(text).transpose()?;
    let mut attempt = with_input(env, input, length, |input| {
        prepare(&store.executor, &tool.tool, context, input, payload)
    })?;
    if tool.retry.is_some() {
        attempt.set_retry(tool.retry.clone());
    }
    step(env, store.executor.clone(), attempt, budget_ms)
}

/// Runs `f` over the input bytes (`None` for a null array): a small input copied onto the stack,
/// a larger one read in place from the Java array.
fn with_input<T>(
    env: &Env<'_>,
    input: &JByteArray<'_>,
    length: jint,
    f: impl FnOnce(Option<&[u8]>) -> Result<T>,
) -> Result<T> {
    if input.is_null() {
        return f(None);
    }
    let length = usize::try_from(length)
        .map_err(|_| Failure::IllegalArgument(format!("negative input length {length}")))?;
    if length <= SMALL_INPUT {
        let mut buf = [0i8; SMALL_INPUT];
        // Throws (and answers an error) when `length` is beyond the array.
        input.get_region(env, 0, &mut buf[..length])?;
        // SAFETY: i8 and u8 have the same size and alignment.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, length) };
        return f(Some(bytes));
    }
    // SAFETY: no JNI call is made while the critical region is held (`f` is plain Rust: key
    // derivation), and the elements are only read.
    let elements = unsafe { input.get_elements_critical(env, ReleaseMode::NoCopyBack)? };
    if length > elements.len() {
        return Err(Failure::IllegalArgument(format!(
            "input length {length} is beyond the array ({})",
            elements.len()
        )));
    }
    // SAFETY: i8 and u8 have the same size and alignment.
    let bytes = unsafe { std::slice::from_raw_parts(elements.as_ptr() as *const u8, length) };
    f(Some(bytes))
}

/// Derives the key (`Executor::prepare_raw`, which picks by the tool's strategy what it keys
/// on). Java hands over one text: the JSON input, or the supplied key as a JSON string literal
/// (non-ASCII escaped, so that a lone surrogate reaches the key module and is refused there).
/// `payload`: an `EXPLICIT` call's whole input, for its fingerprint.
fn prepare(
    executor: &Executor,
    tool: &Tool,
    context: &CallContext,
    input: Option<&[u8]>,
    payload: Option<&str>,
) -> Result<idemkit::Attempt> {
    let input = input.map(text).transpose()?;
    let raw = RawInput {
        json: input,
        supplied_key: input.map(SuppliedKey::JsonLiteral),
    };
    Ok(executor.prepare_raw_with_payload(tool, context, raw, payload)?)
}

/// Claims (waiting at most the budget) and answers the step; keeps the attempt unless replayed.
fn step<'l>(
    env: &mut Env<'l>,
    executor: Executor,
    mut attempt: idemkit::Attempt,
    budget_ms: jint,
) -> Result<JByteArray<'l>> {
    let key = KeyText::of(&attempt);
    let step = drive(executor.advance(&mut attempt, Some(budget(budget_ms))))
        .map_err(|e| with_key(e, &key))?;
    let handle = match step {
        Step::Replay(_) => 0,
        _ => handles::attempt_into_handle(AttemptHandle {
            executor,
            attempt: Mutex::new(attempt),
            retry_after_ms: AtomicI64::new(-1),
        }),
    };
    answer(env, &step, handle, &key)
}

pub(crate) fn context_new(
    env: &mut Env<'_>,
    tenant: &JString<'_>,
    run: &JString<'_>,
) -> Result<jlong> {
    Ok(handles::context_into_handle(CallContext {
        tenant: string(env, tenant)?,
        run: string(env, run)?,
    }))
}

fn locked(handle: &AttemptHandle) -> std::sync::MutexGuard<'_, idemkit::Attempt> {
    handle.attempt.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn advance<'l>(
    env: &mut Env<'l>,
    attempt: jlong,
    budget_ms: jint,
) -> Result<JByteArray<'l>> {
    let handle = handles::attempt(attempt)?;
    let (step, key) = {
        let mut guard = locked(handle);
        let key = KeyText::of(&guard);
        let step = drive(handle.executor.advance(&mut guard, Some(budget(budget_ms))))
            .map_err(|e| with_key(e, &key))?;
        (step, key)
    };
    answer(env, &step, attempt, &key)
}

/// What the body did, as `NativeBridge.BODY_*` codes (mirrored in `NativeBridge.java`).
const BODY_SUCCEEDED: jint = 0;
const BODY_FAILED: jint = 1;
const BODY_UNENCODABLE: jint = 2;
const BODY_NEVER_RAN: jint = 3;
const BODY_CANCELLED: jint = 4;

/// Reports what the body did (`Executor::report`) and translates the executor's answer: the
/// timeout error is thrown (it says what became of the outcome); otherwise the answer is null,
/// or the detail of an outcome not settled yet (for a log line), and the caller gets the body's
/// own answer. `result` is read for a success, `error_type` and `message` for a failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn report<'l>(
    env: &mut Env<'l>,
    attempt: jlong,
    body: jint,
    result: &JByteArray<'_>,
    length: jint,
    error_type: &JString<'_>,
    message: &JString<'_>,
    types: &JObjectArray<'_, JString<'_>>,
) -> Result<JString<'l>> {
    let handle = handles::attempt(attempt)?;
    handle.retry_after_ms.store(-1, Ordering::Relaxed);
    let types = match body {
        BODY_FAILED => strings(env, types)?,
        _ => None,
    };
    let result = match body {
        BODY_SUCCEEDED => bytes(env, result, length)?,
        _ => Vec::new(),
    };
    let failure = match body {
        BODY_FAILED | BODY_UNENCODABLE => BodyFailure::new(
            string(env, error_type)?.unwrap_or_default(),
            string(env, message)?.unwrap_or_default(),
        ),
        _ => BodyFailure::new("", ""),
    };
    let report = match body {
        BODY_SUCCEEDED => BodyReport::Succeeded(text(&result)?),
        BODY_FAILED => match &types {
            // The exception's class, superclasses and interfaces, for the policy's lists.
            Some(types) => BodyReport::FailedAs {
                failure: &failure,
                types,
                class: None,
            },
            None => BodyReport::Failed(&failure),
        },
        BODY_UNENCODABLE => BodyReport::Unencodable(&failure),
        BODY_NEVER_RAN => BodyReport::NeverRan,
        BODY_CANCELLED => BodyReport::Cancelled,
        other => {
            return Err(Failure::IllegalArgument(format!(
                "body report code {other} is not one of NativeBridge.BODY_*; a binding bug"
            )))
        }
    };
    let reported = {
        let mut guard = locked(handle);
        drive(handle.executor.report(&mut guard, report))
    };
    answered(env, handle, reported)
}

/// Translates the executor's answer to a report: an error is thrown; a retry leaves its pause
/// for `attemptRetryPause`; otherwise null, or the detail of an outcome not settled yet.
fn answered<'l>(
    env: &mut Env<'l>,
    handle: &AttemptHandle,
    reported: idemkit::Reported,
) -> Result<JString<'l>> {
    match reported.answer {
        Answer::Error(error) => Err(Failure::Idemkit(error)),
        Answer::Retry(pause) => {
            // The attempt is ready to advance again; Java pauses, then asks (`attemptRetryPause`).
            let ms = i64::try_from(pause.as_millis()).unwrap_or(i64::MAX);
            handle.retry_after_ms.store(ms, Ordering::Relaxed);
            Ok(JString::default())
        }
        Answer::Body => Ok(match reported.recording {
            Recording::Failed(detail) => JString::from_str(env, detail)?,
            _ => JString::default(),
        }),
    }
}

/// What a failed exchange came to, as `NativeBridge.EXCHANGE_*` codes (mirrored there).
const EXCHANGE_NOT_SENT: jint = 0;
const EXCHANGE_NO_ANSWER: jint = 1;
const EXCHANGE_ANSWERED: jint = 2;

/// Reports a failed exchange with an upstream (`Executor::report_exchange`): Java says what it
/// saw — nothing written, no answer, or a status — and whether the request carried the key; the
/// core decides whether it is sent again and how the claim is settled. Answers as `report`: an
/// error is thrown (the timeout, a held failure, the upstream's payload mismatch); a resend
/// leaves its pause for `attemptRetryPause`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn report_exchange<'l>(
    env: &mut Env<'l>,
    attempt: jlong,
    error_type: &JString<'_>,
    message: &JString<'_>,
    types: &JObjectArray<'_, JString<'_>>,
    exchange: jint,
    status: jint,
    key_sent: bool,
) -> Result<JString<'l>> {
    let handle = handles::attempt(attempt)?;
    handle.retry_after_ms.store(-1, Ordering::Relaxed);
    let exchange = match exchange {
        EXCHANGE_NOT_SENT => Exchange::NotSent,
        EXCHANGE_NO_ANSWER => Exchange::NoAnswer,
        EXCHANGE_ANSWERED => Exchange::Answered(u16::try_from(status).map_err(|_| {
            Failure::IllegalArgument(format!("HTTP status {status} is out of range"))
        })?),
        other => {
            return Err(Failure::IllegalArgument(format!(
                "exchange code {other} is not one of NativeBridge.EXCHANGE_*; a binding bug"
            )))
        }
    };
    let failure = BodyFailure::new(
        string(env, error_type)?.unwrap_or_default(),
        string(env, message)?.unwrap_or_default(),
    );
    let types = strings(env, types)?.unwrap_or_else(|| vec![failure.error_type.clone()]);
    let reported = {
        let mut guard = locked(handle);
        drive(
            handle
                .executor
                .report_exchange(&mut guard, &failure, &types, exchange, key_sent),
        )
    };
    answered(env, handle, reported)
}

/// `IdempotencyStore.releaseKey`/`resolveKey`: the operator action on one key, in-process
/// (`idemkit::store::settle_key`). `result` null releases; otherwise it is the JSON outcome to
/// record, kept `ttl_seconds`. Answers true when settled, false when there was no record; a
/// refusal (a known outcome, a live claim without `force`, a record that changed meanwhile) is
/// an `IllegalStateException` with the core's sentence.
pub(crate) fn store_settle_key(
    env: &mut Env<'_>,
    store: jlong,
    tenant: &JString<'_>,
    key: &JString<'_>,
    result: &JString<'_>,
    ttl_seconds: jlong,
    force: bool,
) -> Result<bool> {
    let store = handles::store(store)?;
    let tenant = string(env, tenant)?.map(|t| idemkit::key::nfc(&t).into_owned());
    let hex = string(env, key)?.unwrap_or_default();
    let key: idemkit::Key = hex.parse().map_err(|e| {
        Failure::IllegalArgument(format!(
            "key `{hex}` is not a 64-hex idemkit key ({e}); pass the key an exception or IdempotencyContext.key() names"
        ))
    })?;
    let resolution = match string(env, result)? {
        None => Resolution::Release,
        Some(json) => {
            let outcome = Outcome::success(&json).map_err(|e| {
                Failure::IllegalArgument(format!(
                    "the result to record for key {hex} is not one JSON value: {e}"
                ))
            })?;
            Resolution::Complete {
                outcome,
                ttl_ms: seconds("resolveKey", "ttlSeconds", ttl_seconds)?.as_millis() as u64,
            }
        }
    };
    let id = RecordId {
        tenant: tenant.as_deref(),
        key: &key,
    };
    let settled = idemkit::runtime::block_on(settle_key(
        store.executor.store().as_ref(),
        id,
        &resolution,
        force,
    ))
    .map_err(|e| {
        store_error(
            StoreOperation::SettleKey {
                key: hex.clone(),
                tenant: tenant.clone(),
            },
            &store,
            e,
        )
    })?;
    match settled {
        KeySettled::Done => Ok(true),
        KeySettled::NotFound => Ok(false),
        refused => Err(Failure::IllegalState(refused.describe(&hex))),
    }
}

/// After `report`: the pause before running the body again, in milliseconds, or -1 (no retry).
pub(crate) fn attempt_retry_pause(attempt: jlong) -> Result<jlong> {
    Ok(handles::attempt(attempt)?
        .retry_after_ms
        .load(Ordering::Relaxed))
}

/// The core's default TTL and lease, in seconds, for a tool registered without a policy.
pub(crate) fn policy_defaults<'l>(env: &mut Env<'l>) -> Result<JLongArray<'l>> {
    let defaults = Policy::default();
    let values = [
        defaults.ttl.as_secs() as jlong,
        defaults.lease.as_secs() as jlong,
    ];
    let array = JLongArray::new(env, values.len())?;
    array.set_region(env, 0, &values)?;
    Ok(array)
}

/// `PostgresIdempotencyStore.createTableIfMissing()`: the core's DDL for this table.
#[cfg(feature = "postgres")]
pub(crate) fn postgres_create_table(
    env: &mut Env<'_>,
    url: &JString<'_>,
    table: &JString<'_>,
) -> Result<()> {
    let url = string(env, url)?.ok_or(Failure::IllegalArgument("the store URL is null".into()))?;
    let options = StoreOptions {
        table: string(env, table)?,
        ..StoreOptions::default()
    };
    let failed = |e: idemkit::StoreError| match e {
        idemkit::StoreError::Configuration(message) => {
            Failure::Idemkit(Error::Configuration(message))
        }
        other => Failure::Idemkit(Error::StoreOperation {
            operation: StoreOperation::CreateTable,
            message: other.to_string(),
            source: other.driver_error().cloned(),
        }),
    };
    // Without the constructor's warning that the table is missing: this call makes it.
    idemkit::runtime::block_on(idemkit::store::postgres::PostgresStore::create_table_at(
        &url, &options,
    ))
    .map_err(failed)
}

/// `PostgresIdempotencyStore(DataSource)`: the DDL for `table` (or the default table), the files
/// that add the fingerprint column and the claim function, then, by name, the SQL of every
/// statement of the native store, as pairs: `schema`, DDL, `fingerprint_file`, path,
/// `claim_function_file`, path, `claim`, SQL, ..., the claim statement for a table without the
/// function (`without_claim_function/claim`), and the statements for a table without the
/// fingerprint column (`statements_without_fingerprint`), named `without_fingerprint/claim`, ...
/// (one text for both stores, and the same fallbacks).
#[cfg(feature = "postgres")]
pub(crate) fn postgres_statements<'l>(
    env: &mut Env<'l>,
    table: &JString<'_>,
) -> Result<JObjectArray<'l, JString<'l>>> {
    use idemkit::store::postgres::{
        claim_statement, create_table_sql, statements, statements_without_fingerprint,
        CLAIM_FUNCTION_FILE, DEFAULT_TABLE, FINGERPRINT_FILE,
    };
    let table = string(env, table)?.unwrap_or_else(|| DEFAULT_TABLE.to_owned());
    let refused = |e: idemkit::StoreError| match e {
        idemkit::StoreError::Configuration(message) => {
            Failure::Idemkit(Error::Configuration(message))
        }
        other => Failure::IllegalArgument(other.to_string()),
    };
    let mut all: Vec<(String, String)> = vec![
        ("schema".into(), create_table_sql(&table).map_err(refused)?),
        ("fingerprint_file".into(), FINGERPRINT_FILE.into()),
        ("claim_function_file".into(), CLAIM_FUNCTION_FILE.into()),
    ];
    for (name, text) in statements(&table).map_err(refused)? {
        all.push((name.into(), text));
    }
    all.push((
        "without_claim_function/claim".into(),
        claim_statement(&table).map_err(refused)?,
    ));
    for (name, text) in statements_without_fingerprint(&table).map_err(refused)? {
        all.push((format!("without_fingerprint/{name}"), text));
    }
    pairs(env, &all)
}

/// `RedisIdempotencyStore(RedisClient)`: the native store's Lua scripts (prelude included), as
/// pairs of name and text (one text for both stores), then `record_fields`: the hash fields the
/// claim script's `HMGET` answers, in order, comma-separated (`RECORD_FIELDS`, then
/// `outcome_kind`).
#[cfg(feature = "redis")]
pub(crate) fn redis_scripts<'l>(env: &mut Env<'l>) -> Result<JObjectArray<'l, JString<'l>>> {
    use idemkit::store::redis::{script_sources, RECORD_FIELDS};
    let mut all = script_sources();
    let fields = RECORD_FIELDS.iter().chain(&["outcome_kind"]);
    all.push((
        "record_fields",
        fields.copied().collect::<Vec<_>>().join(","),
    ));
    pairs(env, &all)
}

#[cfg(not(feature = "redis"))]
pub(crate) fn redis_scripts<'l>(_env: &mut Env<'l>) -> Result<JObjectArray<'l, JString<'l>>> {
    Err(Failure::Idemkit(Error::Configuration(
        "this build of idemkit_jni has no Redis support; build java/native with --features redis"
            .into(),
    )))
}

/// `[name, text, name, text, ...]` as a Java `String[]`.
#[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
fn pairs<'l, N: AsRef<str>>(
    env: &mut Env<'l>,
    pairs: &[(N, String)],
) -> Result<JObjectArray<'l, JString<'l>>> {
    let array = JObjectArray::<JString>::new(env, pairs.len() * 2, JString::null())?;
    for (i, (name, text)) in pairs.iter().enumerate() {
        let name = JString::from_str(env, name.as_ref())?;
        array.set_element(env, 2 * i, &name)?;
        let text = JString::from_str(env, text)?;
        array.set_element(env, 2 * i + 1, &text)?;
    }
    Ok(array)
}

#[cfg(not(feature = "postgres"))]
pub(crate) fn postgres_statements<'l>(
    _env: &mut Env<'l>,
    _table: &JString<'_>,
) -> Result<JObjectArray<'l, JString<'l>>> {
    Err(Failure::Idemkit(Error::Configuration(
        "this build of idemkit_jni has no PostgreSQL support; build java/native with --features postgres".into(),
    )))
}

#[cfg(not(feature = "postgres"))]
pub(crate) fn postgres_create_table(
    _env: &mut Env<'_>,
    _url: &JString<'_>,
    _table: &JString<'_>,
) -> Result<()> {
    Err(Failure::Idemkit(Error::Configuration(
        "this build of idemkit_jni has no PostgreSQL support; build java/native with --features postgres".into(),
    )))
}
