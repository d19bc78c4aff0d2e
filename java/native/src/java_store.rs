//! A store written in Java (`dev.idemkit.spi.StoreOperations`), driven by the core's executor
//! through upcalls (SPEC v1.1 rule 10).
//!
//! The executor owns the protocol; a Java store only performs the operations of SPEC §4 and
//! reports its server's clock with every answer. Each operation is one synchronous call of
//! `dev.idemkit.StoreBridge.call(int, String, long)` with the request as JSON and the time the
//! operation has left, answered with JSON, both parsed here. A store operation is not a body: it
//! runs inside the executor's step.
//!
//! **Threads.** A store operation of a call without a deadline runs on the calling Java thread
//! (the executor's future is polled there, inside its `block_on` step). One bounded by an
//! instant (the call's deadline; the lease end, for settling) runs on a thread of the runtime's
//! blocking pool and is handed the time left, so that the caller gets its answer at
//! its deadline whatever the Java client does (SPEC v1.2 §9 rule 3). Settling in the background
//! (SPEC v1.1 rule 4) runs on runtime threads. Every thread not started by Java is attached to
//! the JVM as a *daemon* thread (so it never keeps the JVM from exiting) and detached when it
//! ends; an operation without a bound runs in `block_in_place` on the shared runtime's workers,
//! so a slow JDBC call moves the runtime's other work to another thread instead of stalling it
//! (on a caller lane, which serves one call at a time, it simply blocks the lane).
//!
//! **Errors.** A Java exception thrown by the store becomes a store error (kind
//! `STORE_UNAVAILABLE`) carrying the exception's class and message; it is caught and cleared
//! here, never left pending. An answer that does not parse is a corrupt-record error.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use idemkit::store::{
    Claim, ClaimReply, ClaimRequest, Completion, ListFilter, Page, RecordId, Resolution, Resolved,
    Store, TakeOver, TakeOverRequest, DEFAULT_MAX_OUTCOME_BYTES,
};
use idemkit::{Outcome, Record, RecordState, Status, StoreError, Token};
use jni::objects::{JClass, JMethodID, JObject, JString, JValue};
use jni::refs::Global;
use jni::signature::ReturnType;
use jni::{jni_sig, jni_str, Env, JavaVM};
use serde::{Deserialize, Serialize};

/// The operation codes of `StoreBridge.call` (mirrored in `StoreBridge.java`).
#[derive(Clone, Copy, Debug)]
#[repr(i32)]
enum Op {
    Claim = 0,
    Complete = 1,
    Release = 2,
    Get = 3,
    List = 4,
    Resolve = 5,
    Delete = 6,
    Forget = 7,
    Purge = 8,
    TakeOver = 9,
}

/// `StoreBridge.call`, looked up once (on the class of the first bridge; every bridge is a
/// `dev.idemkit.StoreBridge`).
struct BridgeMethod {
    _class: Global<JClass<'static>>,
    call: JMethodID,
}

static BRIDGE_METHOD: OnceLock<BridgeMethod> = OnceLock::new();

/// A store whose operations are a Java object's (see the module documentation).
pub(crate) struct JavaStore {
    bridge: Bridge,
    description: String,
    max_outcome_bytes: usize,
}

/// The `StoreBridge` object. The last holder may be a runtime thread that never called Java
/// (its operations ran on the blocking pool): it is attached first, like every thread this
/// library calls Java from, so that deleting the global reference needs no attachment of its own.
struct BridgeObject(Global<JObject<'static>>);

impl Drop for BridgeObject {
    fn drop(&mut self) {
        if let Ok(vm) = JavaVM::singleton() {
            let _ = attach_as_daemon(&vm);
        }
    }
}

/// What one upcall needs, shared with the thread an operation with a deadline runs on.
#[derive(Clone)]
struct Bridge {
    object: Arc<BridgeObject>,
    call: JMethodID,
    description: Arc<str>,
}

impl JavaStore {
    /// Wraps `bridge` (a `dev.idemkit.StoreBridge`), on the JNI thread that opens the store.
    pub(crate) fn new(
        env: &mut Env<'_>,
        bridge: &JObject<'_>,
        description: String,
        max_outcome_bytes: usize,
    ) -> jni::errors::Result<JavaStore> {
        let call = match BRIDGE_METHOD.get() {
            Some(m) => m.call,
            None => {
                let class = env.get_object_class(bridge)?;
                let call = env.get_method_id(
                    &class,
                    jni_str!("call"),
                    jni_sig!("(ILjava/lang/String;J)Ljava/lang/String;"),
                )?;
                let class = env.new_global_ref(&class)?;
                BRIDGE_METHOD
                    .get_or_init(|| BridgeMethod {
                        _class: class,
                        call,
                    })
                    .call
            }
        };
        Ok(JavaStore {
            bridge: Bridge {
                object: Arc::new(BridgeObject(env.new_global_ref(bridge)?)),
                call,
                description: description.as_str().into(),
            },
            description,
            max_outcome_bytes: if max_outcome_bytes == 0 {
                DEFAULT_MAX_OUTCOME_BYTES
            } else {
                max_outcome_bytes
            },
        })
    }

    /// One operation: `request` as JSON to Java, its JSON answer parsed as `A`.
    ///
    /// An operation bounded by an instant (`idemkit::store::operation_deadline`: the call's
    /// deadline, or the lease end for settling) runs on a thread of the blocking pool, and Java is
    /// handed the time left (SPEC v1.2 §9 rule 3): the executor's wait ends at its deadline even
    /// while a Java client is blocked on a server that stopped answering, and the store bounds
    /// its own I/O by the time it was handed. Without such an instant the
    /// operation runs on this thread, as a hit should (no hand-over to another thread).
    async fn upcall<A: for<'de> Deserialize<'de>>(
        &self,
        op: Op,
        request: &impl Serialize,
    ) -> Result<A, StoreError> {
        let request = serde_json::to_string(request)
            .map_err(|e| StoreError::unavailable(format!("cannot encode a store request: {e}")))?;
        let handle = tokio::runtime::Handle::try_current().ok();
        let answer = match (idemkit::store::operation_deadline(), handle) {
            (Some(until), Some(handle)) => {
                let left = until.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(StoreError::unavailable(format!(
                        "{} was not called on {op:?}: no time was left before the call's deadline",
                        self.description
                    )));
                }
                // Whole milliseconds, rounded up: Java never gets 0 (which means no bound).
                let left_ms = left.as_micros().div_ceil(1000).min(i64::MAX as u128) as i64;
                let bridge = self.bridge.clone();
                handle
                    .spawn_blocking(move || bridge.call_java(op, &request, left_ms))
                    .await
                    .map_err(|e| {
                        StoreError::unavailable(format!(
                            "{} could not be called on {op:?}: {e}",
                            self.description
                        ))
                    })??
            }
            (_, handle) => {
                // On a worker of the shared (multi-threaded) runtime, a slow store call moves
                // that worker's other work elsewhere first. A caller lane is single-threaded and
                // belongs to this one call (`idemkit::runtime::block_on_caller`), so there the
                // call simply blocks it (`block_in_place` would panic on it).
                let multi_threaded = handle.is_some_and(|h| {
                    h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
                });
                if multi_threaded {
                    tokio::task::block_in_place(|| self.bridge.call_java(op, &request, 0))?
                } else {
                    self.bridge.call_java(op, &request, 0)?
                }
            }
        };
        serde_json::from_str(&answer).map_err(|e| {
            StoreError::Corrupt(format!(
                "{} answered {op:?} with {answer:?}, which is not a store answer: {e}",
                self.description
            ))
        })
    }
}

impl Bridge {
    /// `StoreBridge.call(op, request, timeoutMs)`: `timeout_ms` is the time the store has left
    /// (0: no bound).
    fn call_java(&self, op: Op, request: &str, timeout_ms: i64) -> Result<String, StoreError> {
        let failed = |e: jni::errors::Error| match e {
            jni::errors::Error::CaughtJavaException { name, msg, .. } => StoreError::unavailable(
                format!("{} failed on {op:?}: {name}: {msg}", self.description),
            ),
            other => StoreError::unavailable(format!(
                "{} could not be called on {op:?}: {other}",
                self.description
            )),
        };
        let vm = JavaVM::singleton().map_err(failed)?;
        attach_as_daemon(&vm).map_err(failed)?;
        vm.attach_current_thread(|env| -> jni::errors::Result<String> {
            let request = JString::from_str(env, request)?;
            let args = [
                JValue::Int(op as i32).as_jni(),
                JValue::Object(&request).as_jni(),
                JValue::Long(timeout_ms).as_jni(),
            ];
            // SAFETY: the method ID was looked up on StoreBridge with exactly this signature,
            // and `object` is a StoreBridge.
            let answer = unsafe {
                env.call_method_unchecked(&self.object.0, self.call, ReturnType::Object, &args)?
            }
            .l()?;
            if answer.is_null() {
                return Ok(String::new());
            }
            let answer = env.cast_local::<JString>(answer)?;
            answer.try_to_string(env)
        })
        .map_err(failed)
    }
}

thread_local! {
    /// Set on a thread this library attached to the JVM; detaches it when the thread ends.
    static ATTACHED: std::cell::RefCell<Option<DetachOnExit>> = const { std::cell::RefCell::new(None) };
}

struct DetachOnExit(JavaVM);

impl Drop for DetachOnExit {
    fn drop(&mut self) {
        let vm = self.0.get_raw();
        // SAFETY: the thread was attached by `attach_as_daemon` and holds no JNI frame now
        // (thread-local destructors run after the thread's code has returned).
        unsafe {
            ((*(*vm)).v1_1.DetachCurrentThread)(vm);
        }
    }
}

/// Attaches this thread (a runtime thread) to the JVM as a daemon, unless it is attached
/// already (a Java thread calling in, or a thread attached before).
fn attach_as_daemon(vm: &JavaVM) -> jni::errors::Result<()> {
    if vm.is_thread_attached()? {
        return Ok(());
    }
    let raw = vm.get_raw();
    let mut env = std::ptr::null_mut();
    // SAFETY: `raw` is the live JavaVM; the JNI 1.4 invocation interface has this function.
    let status = unsafe {
        ((*(*raw)).v1_4.AttachCurrentThreadAsDaemon)(raw, &mut env, std::ptr::null_mut())
    };
    if status != jni::sys::JNI_OK {
        return Err(jni::errors::Error::JniCall(jni::errors::JniError::Unknown));
    }
    ATTACHED.with(|a| *a.borrow_mut() = Some(DetachOnExit(vm.clone())));
    Ok(())
}

/// A record as it crosses: the fields of `dev.idemkit.spi.StoredRecord`.
#[derive(Serialize, Deserialize)]
struct WireRecord {
    format: u32,
    key: String,
    tenant: Option<String>,
    scope: String,
    state: String,
    token: String,
    claimed_at: i64,
    lease_end: i64,
    ttl_ms: i64,
    expires_at: i64,
    outcome_kind: Option<String>,
    outcome: Option<String>,
    fingerprint: Option<String>,
}

impl WireRecord {
    fn into_record(self, store: &str) -> Result<Record, StoreError> {
        let corrupt = |what: String| StoreError::Corrupt(format!("{store}: record {what}"));
        if self.format != idemkit::record::RECORD_FORMAT {
            return Err(corrupt(format!(
                "{} has format {}, not {}; upgrade idemkit to read it",
                self.key,
                self.format,
                idemkit::record::RECORD_FORMAT
            )));
        }
        let state = match self.state.as_str() {
            "in_progress" => RecordState::InProgress,
            "completed" => RecordState::Completed,
            other => return Err(corrupt(format!("{} has state {other:?}", self.key))),
        };
        let token = Token::from_hex(&self.token)
            .ok_or_else(|| corrupt(format!("{} has token {:?}", self.key, self.token)))?;
        let outcome = match &self.outcome {
            None => None,
            Some(json) => Some(
                serde_json::from_str::<Outcome>(json)
                    .map_err(|e| corrupt(format!("{} has an unreadable outcome: {e}", self.key)))?,
            ),
        };
        Ok(Record {
            format: self.format,
            key: self.key,
            tenant: self.tenant,
            scope: self.scope,
            state,
            token,
            claimed_at: self.claimed_at,
            lease_end: self.lease_end,
            ttl_ms: self.ttl_ms,
            expires_at: self.expires_at,
            outcome,
            fingerprint: self.fingerprint,
        })
    }
}

/// The outcome as Redis and PostgreSQL keep it: its JSON and its kind.
fn stored(outcome: &Outcome) -> (String, &'static str) {
    let kind = match outcome {
        Outcome::Success(_) => "success",
        Outcome::Failure(_) => "failure",
        Outcome::TooLarge { .. } => "too_large",
        Outcome::Indeterminate(_) => "indeterminate",
    };
    let json = serde_json::to_string(outcome).expect("an outcome always serialises");
    (json, kind)
}

fn record(wire: Option<WireRecord>, store: &str) -> Result<Option<Record>, StoreError> {
    wire.map(|w| w.into_record(store)).transpose()
}

#[derive(Serialize)]
struct IdRequest<'a> {
    tenant: Option<&'a str>,
    key: String,
}

impl<'a> IdRequest<'a> {
    fn of(id: RecordId<'a>) -> Self {
        IdRequest {
            tenant: id.tenant,
            key: id.key.hex(),
        }
    }
}

#[derive(Serialize)]
struct ClaimWire<'a> {
    tenant: Option<&'a str>,
    key: String,
    scope: &'a str,
    token: String,
    lease_ms: u64,
    ttl_ms: u64,
    retry_failure: bool,
    fingerprint: Option<&'a str>,
    payload_checked: bool,
}

#[derive(Deserialize)]
struct ClaimAnswer {
    now: i64,
    acquired: bool,
    #[serde(default)]
    lease_end: i64,
    record: Option<WireRecord>,
}

#[derive(Serialize)]
struct SettleWire<'a> {
    tenant: Option<&'a str>,
    key: String,
    token: String,
    mode: &'a str,
    outcome_kind: Option<&'a str>,
    outcome: Option<String>,
    ttl_ms: u64,
}

#[derive(Deserialize)]
struct SettleAnswer {
    done: bool,
    record: Option<WireRecord>,
}

#[derive(Deserialize)]
struct GetAnswer {
    now: i64,
    record: Option<WireRecord>,
}

#[derive(Serialize)]
struct ListWire<'a> {
    /// `any`, `none` (records without a tenant) or `one` (`tenant`).
    tenants: &'a str,
    tenant: Option<String>,
    status: Option<&'static str>,
    limit: usize,
    cursor: Option<&'a str>,
}

#[derive(Deserialize)]
struct ListAnswer {
    now: i64,
    records: Vec<WireRecord>,
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct YesNo {
    yes: bool,
}

#[derive(Deserialize)]
struct Count {
    count: u64,
}

#[derive(Serialize)]
struct TakeOverWire<'a> {
    tenant: Option<&'a str>,
    key: String,
    expected: String,
    token: String,
    lease_ms: u64,
    ttl_ms: u64,
}

#[derive(Deserialize)]
struct TakeOverAnswer {
    now: i64,
    supported: bool,
    acquired: bool,
    #[serde(default)]
    lease_end: i64,
    record: Option<WireRecord>,
}

#[derive(Serialize)]
struct TenantWire<'a> {
    tenant: Option<&'a str>,
}

#[derive(Serialize)]
struct Nothing {}

#[async_trait]
impl Store for JavaStore {
    async fn claim(&self, request: &ClaimRequest<'_>) -> Result<ClaimReply, StoreError> {
        let answer: ClaimAnswer = self
            .upcall(
                Op::Claim,
                &ClaimWire {
                    tenant: request.id.tenant,
                    key: request.id.key.hex(),
                    scope: request.scope,
                    token: request.token.hex(),
                    lease_ms: request.lease_ms,
                    ttl_ms: request.ttl_ms,
                    retry_failure: request.retry_failure,
                    fingerprint: request.fingerprint,
                    payload_checked: request.payload_checked,
                },
            )
            .await?;
        let now_ms = answer.now;
        if answer.acquired {
            return Ok(ClaimReply {
                now_ms,
                claim: Claim::Acquired {
                    lease_end: answer.lease_end,
                },
            });
        }
        let found = record(answer.record, &self.description)?.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "{} answered a claim with neither a claim nor a record",
                self.description
            ))
        })?;
        // What the found record means is the core's to say, not the store's.
        let claim = if found.state == RecordState::InProgress && found.token == request.token {
            Claim::Acquired {
                lease_end: found.lease_end,
            }
        } else {
            match found.status(now_ms) {
                Status::Completed => Claim::Completed(found),
                Status::InProgress => Claim::InProgress(found),
                Status::Abandoned => Claim::Abandoned(found),
            }
        };
        Ok(ClaimReply { now_ms, claim })
    }

    async fn complete(
        &self,
        id: RecordId<'_>,
        token: Token,
        outcome: &Outcome,
        ttl_ms: u64,
    ) -> Result<Completion, StoreError> {
        let (json, kind) = stored(outcome);
        let answer: SettleAnswer = self
            .upcall(
                Op::Complete,
                &SettleWire {
                    tenant: id.tenant,
                    key: id.key.hex(),
                    token: token.hex(),
                    mode: "complete",
                    outcome_kind: Some(kind),
                    outcome: Some(json),
                    ttl_ms,
                },
            )
            .await?;
        if answer.done {
            return Ok(Completion::Recorded);
        }
        match record(answer.record, &self.description)? {
            Some(r) if r.token == token && r.state == RecordState::Completed => {
                Ok(Completion::Recorded)
            }
            found => Ok(Completion::NotOwner(found)),
        }
    }

    async fn release(&self, id: RecordId<'_>, token: Token) -> Result<bool, StoreError> {
        let answer: YesNo = self
            .upcall(
                Op::Release,
                &SettleWire {
                    tenant: id.tenant,
                    key: id.key.hex(),
                    token: token.hex(),
                    mode: "release",
                    outcome_kind: None,
                    outcome: None,
                    ttl_ms: 0,
                },
            )
            .await?;
        Ok(answer.yes)
    }

    async fn get(&self, id: RecordId<'_>) -> Result<(Option<Record>, i64), StoreError> {
        let answer: GetAnswer = self.upcall(Op::Get, &IdRequest::of(id)).await?;
        let now = answer.now;
        let found = record(answer.record, &self.description)?.filter(|r| !r.is_expired(now));
        Ok((found, now))
    }

    async fn list(&self, filter: &ListFilter, cursor: Option<&str>) -> Result<Page, StoreError> {
        let (tenants, tenant) = match &filter.tenant {
            None => ("any", None),
            Some(None) => ("none", None),
            Some(Some(t)) => ("one", Some(idemkit::key::nfc(t).into_owned())),
        };
        let answer: ListAnswer = self
            .upcall(
                Op::List,
                &ListWire {
                    tenants,
                    tenant,
                    status: filter.status.map(Status::name),
                    limit: if filter.limit == 0 {
                        1000
                    } else {
                        filter.limit
                    },
                    cursor,
                },
            )
            .await?;
        let now = answer.now;
        let mut records = Vec::with_capacity(answer.records.len());
        for wire in answer.records {
            let r = wire.into_record(&self.description)?;
            // The filter is applied here as well: what a page holds is the core's rule.
            if !r.is_expired(now) && filter.matches(&r, now) {
                records.push(r);
            }
        }
        Ok(Page {
            records,
            next_cursor: answer.next_cursor,
            now_ms: now,
        })
    }

    async fn resolve(
        &self,
        id: RecordId<'_>,
        expected: Token,
        resolution: &Resolution,
    ) -> Result<Resolved, StoreError> {
        let (mode, outcome, kind, ttl_ms) = match resolution {
            Resolution::Release => ("release", None, None, 0),
            Resolution::Complete { outcome, ttl_ms } => {
                let (json, kind) = stored(outcome);
                ("complete", Some(json), Some(kind), *ttl_ms)
            }
        };
        let answer: SettleAnswer = self
            .upcall(
                Op::Resolve,
                &SettleWire {
                    tenant: id.tenant,
                    key: id.key.hex(),
                    token: expected.hex(),
                    mode,
                    outcome_kind: kind,
                    outcome,
                    ttl_ms,
                },
            )
            .await?;
        if answer.done {
            return Ok(Resolved::Done);
        }
        match record(answer.record, &self.description)? {
            None => Ok(Resolved::NotFound),
            Some(r) if r.state == RecordState::Completed && !r.is_held() => {
                Ok(Resolved::AlreadyCompleted(r))
            }
            Some(r) if r.token != expected => Ok(Resolved::TokenMismatch(r)),
            Some(_) => Err(StoreError::unavailable(format!(
                "{} left the record unresolved under the expected token; try again",
                self.description
            ))),
        }
    }

    async fn take_over(&self, request: &TakeOverRequest<'_>) -> Result<TakeOver, StoreError> {
        let answer: TakeOverAnswer = self
            .upcall(
                Op::TakeOver,
                &TakeOverWire {
                    tenant: request.id.tenant,
                    key: request.id.key.hex(),
                    expected: request.expected.hex(),
                    token: request.token.hex(),
                    lease_ms: request.lease_ms,
                    ttl_ms: request.ttl_ms,
                },
            )
            .await?;
        if !answer.supported {
            return Ok(TakeOver::Unsupported);
        }
        if answer.acquired {
            return Ok(TakeOver::Acquired {
                lease_end: answer.lease_end,
            });
        }
        let now = answer.now;
        let found = record(answer.record, &self.description)?.filter(|r| !r.is_expired(now));
        // What the found record means is the core's to say: a take-over sent again (after the
        // store's own retry) finds the claim already under this very token.
        Ok(match found {
            Some(r) if r.state == RecordState::InProgress && r.token == request.token => {
                TakeOver::Acquired {
                    lease_end: r.lease_end,
                }
            }
            other => TakeOver::Lost(other),
        })
    }

    async fn delete(&self, id: RecordId<'_>) -> Result<bool, StoreError> {
        let answer: YesNo = self.upcall(Op::Delete, &IdRequest::of(id)).await?;
        Ok(answer.yes)
    }

    async fn forget(&self, tenant: Option<&str>) -> Result<u64, StoreError> {
        let tenant = tenant.map(idemkit::key::nfc);
        let answer: Count = self
            .upcall(
                Op::Forget,
                &TenantWire {
                    tenant: tenant.as_deref(),
                },
            )
            .await?;
        Ok(answer.count)
    }

    async fn purge_expired(&self) -> Result<u64, StoreError> {
        let answer: Count = self.upcall(Op::Purge, &Nothing {}).await?;
        Ok(answer.count)
    }

    fn max_outcome_bytes(&self) -> usize {
        self.max_outcome_bytes
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}
