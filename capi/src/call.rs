//! The two-step call protocol (`idemkit_begin` → the caller's body → `idemkit_complete` /
//! `idemkit_fail`) for C callers.

use std::ffi::c_char;
use std::time::Instant;

use crate::boundary::{
    copy_out, give_string, guard, guard_void, optional_str, required_str, Fault,
};
use crate::store::{leave_behind, IdemkitStore};
use crate::tool::IdemkitTool;
use crate::{IdemkitStatus, KEY_BUFFER_LEN};
use idemkit_core::error::Error;
use idemkit_core::executor::{
    Answer, Attempt, BodyReport, CallContext, Executor, RawInput, Recording, Step, SuppliedKey,
};
use idemkit_core::key::KeyError;
use idemkit_core::policy::FailureClass;
use idemkit_core::record::Failure;
use idemkit_core::runtime;

/// One claimed call, between `idemkit_begin` and `idemkit_complete`/`idemkit_fail`. It holds
/// the key and the owner token, and keeps its store alive. Use it from one thread at a time;
/// freed with `idemkit_call_free`.
#[derive(Debug)]
pub struct IdemkitCall {
    executor: Executor,
    attempt: Attempt,
    finished: bool,
    /// When the retry the executor answered (`Answer::Retry`) may run: set while one is due.
    retry_at: Option<Instant>,
    /// The process that began it (`runtime::process_generation`) and that process's id.
    generation: u64,
    pid: u32,
}

/// What `idemkit_begin` answers when its status is OK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum IdemkitAnswer {
    /// No answer: the status was not OK.
    None = 0,
    /// Run the body now, then report it with `idemkit_complete` or `idemkit_fail`.
    Execute = 1,
    /// Do not run: the remembered result is in `result_json`.
    CachedSuccess = 2,
    /// Do not run: the remembered failure is in `error_type` and `error_message`; hand it to
    /// your caller as this call's failure.
    CachedFailure = 3,
}

/// What `idemkit_begin` found. The caller owns the struct; the strings in it are allocated by
/// the library and belong to the caller: free them with `idemkit_begin_result_clear` (all at
/// once) or each with `idemkit_string_free`.
#[repr(C)]
#[derive(Debug)]
pub struct IdemkitBeginResult {
    /// What to do.
    pub answer: IdemkitAnswer,
    /// The call's key, NUL-terminated: 64 hex characters for `HASH_INPUT` and `EXPLICIT`, the
    /// fresh UUID for `UUID`, empty for `NONE` or when no key could be derived. Also set when
    /// the status names a key (`FAIL_FAST`, `IN_PROGRESS`, `INDETERMINATE`, ...).
    pub key: [c_char; 65],
    /// `IDEMKIT_ANSWER_CACHED_SUCCESS`: the remembered result as JSON text; otherwise NULL.
    pub result_json: *mut c_char,
    /// `IDEMKIT_ANSWER_CACHED_FAILURE`: the remembered error's type; otherwise NULL.
    pub error_type: *mut c_char,
    /// `IDEMKIT_ANSWER_CACHED_FAILURE`: the remembered error's message; otherwise NULL.
    pub error_message: *mut c_char,
}

/// What became of a body's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum IdemkitRecording {
    /// Recorded (a success or, with `cache_failures`, a failure): repeats get it.
    Recorded = 0,
    /// Nothing to record: the tool's strategy is `UUID` or `NONE`.
    Unprotected = 1,
    /// The outcome could not be recorded (the reason is the thread's last error). The body's
    /// result still stands; the claim is left to become abandoned, never run again silently.
    Failed = 2,
    /// The claim was released (a failure without `cache_failures`, a failure classified as
    /// having had no effect, or `idemkit_release_unrun`): the next call runs.
    Released = 3,
    /// The failure of an `EFFECTFUL` tool's body is held (SPEC v1.1 rule 7): recorded as an
    /// indeterminate outcome, so this call's status and every repeat's is
    /// `IDEMKIT_STATUS_INDETERMINATE` until an operator resolves the record
    /// (`idemkit resolve`) or it expires. The body is never run again for this key meanwhile.
    Held = 4,
}

/// What the caller knows about a failure of its body, for `idemkit_fail_as` (SPEC v1.1
/// rule 7). The executor settles the failure by it and the tool's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum IdemkitFailureClass {
    /// Nothing beyond its error type: settled by the policy's `no_effect_errors` and
    /// `permanent_errors` lists, then by its `effect` (as `idemkit_fail` does).
    Unknown = 0,
    /// Known to have had no effect (the request never left, a validation error): the claim is
    /// released and the call may run again, whatever the tool's effect.
    NoEffect = 1,
    /// Permanent, and its effect is known (a declined card): recorded as a failure, so repeats
    /// get `IDEMKIT_ANSWER_CACHED_FAILURE` (under `RETURN_CACHED`), even without
    /// `cache_failures`.
    Permanent = 2,
}

impl IdemkitFailureClass {
    fn from_code(code: i32) -> Option<Option<FailureClass>> {
        [
            (IdemkitFailureClass::Unknown, None),
            (IdemkitFailureClass::NoEffect, Some(FailureClass::NoEffect)),
            (
                IdemkitFailureClass::Permanent,
                Some(FailureClass::Permanent),
            ),
        ]
        .into_iter()
        .find(|(c, _)| *c as i32 == code)
        .map(|(_, class)| class)
    }
}

/// Starts a call of `tool` on `store` (SPEC §3): derives the key, claims it, and answers in
/// `*out` what to do.
///
/// - `tenant`, `run`: NULL for none (`""` is a tenant, distinct from NULL). Both are part of
///   the key.
/// - `input`: for `HASH_INPUT`, the call's input as JSON text (required); for `EXPLICIT`, the
///   supplied key (NULL, empty or blank answers `IDEMKIT_STATUS_INVALID_KEY`); ignored (may be
///   NULL) for `UUID` and `NONE`. An `EXPLICIT` call begun here keeps no payload fingerprint:
///   use `idemkit_begin_with_payload` so that a repeat of the key with another input can be
///   refused.
///
/// With status OK, `out->answer` is:
/// - `IDEMKIT_ANSWER_EXECUTE`: the key is claimed for this call and `*out_call` is a new call
///   handle the caller owns. Run the body, then call `idemkit_complete` or `idemkit_fail`, then
///   `idemkit_call_free`. (`UUID` and `NONE` tools always answer this.)
/// - `IDEMKIT_ANSWER_CACHED_SUCCESS`: do not run; `out->result_json` is the remembered result.
/// - `IDEMKIT_ANSWER_CACHED_FAILURE`: do not run; `out->error_type` and `out->error_message`
///   are the remembered failure.
///
/// Otherwise the status says why nothing may run: `IDEMKIT_STATUS_INVALID_KEY`,
/// `IDEMKIT_STATUS_FAIL_FAST`, `IDEMKIT_STATUS_IN_PROGRESS`, `IDEMKIT_STATUS_INDETERMINATE`,
/// `IDEMKIT_STATUS_STORE_UNAVAILABLE`, `IDEMKIT_STATUS_OUTCOME_TOO_LARGE`,
/// `IDEMKIT_STATUS_PAYLOAD_MISMATCH` (a `HASH_INPUT` tool with `key_arguments`, or an
/// `EXPLICIT` one begun by `idemkit_begin_with_payload`, with `reject_payload_mismatch`, called
/// with another input under a used key), or a boundary status; `out->key` still holds the key when one
/// was derived.
///
/// `*out_call` is NULL unless the answer is `EXECUTE`. `*out` (when not NULL) is always
/// overwritten, its old strings not freed; free its strings with `idemkit_begin_result_clear`.
///
/// **Blocking.** When another call holds the key, this function blocks the calling thread until
/// that call records an outcome, or until this tool's deadline (`timeout_ms`), or — without a
/// deadline — until the holder's lease ends (up to `lease_seconds`). There is no way to
/// interrupt the wait from C: give tools a `timeout_ms` if the thread must stay responsive.
///
/// # Safety
/// `store` and `tool` are NULL or live handles; `tenant`, `run` and `input` are NULL or
/// NUL-terminated strings; `out_call` and `out` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_begin(
    store: *const IdemkitStore,
    tool: *const IdemkitTool,
    tenant: *const c_char,
    run: *const c_char,
    input: *const c_char,
    out_call: *mut *mut IdemkitCall,
    out: *mut IdemkitBeginResult,
) -> IdemkitStatus {
    guard(|| begin(store, tool, tenant, run, input, None, out_call, out))
}

/// `idemkit_begin` for an `EXPLICIT` tool that also hands over the call's whole input, whose
/// fingerprint the record keeps (SPEC v1.1 rule 9). The key is taken as the application's own
/// (derived from some fields of the input): a repeat with another input is refused only when
/// the policy sets `reject_payload_mismatch` (SPEC v1.2 §9 rule 1).
///
/// - `key`: the supplied key, as `idemkit_begin`'s `input` for an `EXPLICIT` tool (for the
///   other strategies, exactly `idemkit_begin`'s `input`).
/// - `payload_json`: the call's whole input as JSON text (UTF-8). The record keeps its
///   fingerprint, the SHA-256 of its canonical form (never the input itself); a later call with
///   the same key whose payload's canonical form differs answers, under
///   `reject_payload_mismatch`, `IDEMKIT_STATUS_PAYLOAD_MISMATCH`, with `out->key` set, and runs
///   nothing (without it, the record's answer). Member order,
///   insignificant whitespace and number spelling (`2.0` and `2`) do not make a difference.
///   NULL keeps no fingerprint: the call is exactly `idemkit_begin`'s, and a record without a
///   fingerprint never mismatches. Ignored for the other strategies (`HASH_INPUT` fingerprints
///   its own input). Text that is not JSON answers `IDEMKIT_STATUS_INVALID_KEY` and claims
///   nothing.
///
/// Everything else (answers, blocking, ownership of `*out_call` and `*out`) is as for
/// `idemkit_begin`.
///
/// # Safety
/// As `idemkit_begin`; `key` and `payload_json` are NULL or NUL-terminated strings.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn idemkit_begin_with_payload(
    store: *const IdemkitStore,
    tool: *const IdemkitTool,
    tenant: *const c_char,
    run: *const c_char,
    key: *const c_char,
    payload_json: *const c_char,
    out_call: *mut *mut IdemkitCall,
    out: *mut IdemkitBeginResult,
) -> IdemkitStatus {
    guard(|| {
        let payload = optional_str(payload_json, "payload_json")?;
        begin(store, tool, tenant, run, key, payload, out_call, out)
    })
}

/// `idemkit_begin` and `idemkit_begin_with_payload`: `payload` is an `EXPLICIT` call's whole
/// input, or `None`.
#[allow(clippy::too_many_arguments)]
unsafe fn begin(
    store: *const IdemkitStore,
    tool: *const IdemkitTool,
    tenant: *const c_char,
    run: *const c_char,
    input: *const c_char,
    payload: Option<&str>,
    out_call: *mut *mut IdemkitCall,
    out: *mut IdemkitBeginResult,
) -> Result<(), Fault> {
    clear_result(out);
    let out_call = out_call.as_mut().ok_or_else(|| Fault::null("out_call"))?;
    *out_call = std::ptr::null_mut();
    let out = out.as_mut().ok_or_else(|| Fault::null("out"))?;
    let store = store.as_ref().ok_or_else(|| Fault::null("store"))?;
    let handle = tool.as_ref().ok_or_else(|| Fault::null("tool"))?;
    let tool = &handle.tool;
    let context = CallContext {
        tenant: optional_str(tenant, "tenant")?.map(str::to_owned),
        run: optional_str(run, "run")?.map(str::to_owned),
    };
    // One argument: the executor picks, by the tool's strategy, whether it is the input or
    // the supplied key.
    let input = optional_str(input, "input")?;
    let raw = RawInput {
        json: input,
        supplied_key: input.map(SuppliedKey::Text),
    };
    let executor = &store.executor()?;
    let mut attempt = executor
        .prepare_raw_with_payload(tool, &context, raw, payload)
        .map_err(|error| match (error, input) {
            // A NULL argument is named as such.
            (
                Error::InvalidKey {
                    source: KeyError::BlankExplicitKey,
                    ..
                },
                None,
            ) => null_explicit_key(tool.name()),
            (Error::Configuration(_), None) => Fault::null("input"),
            (error, _) => Fault::from(error),
        })?;
    if handle.retry.is_some() {
        attempt.set_retry(handle.retry.clone());
    }
    if advance(executor, &mut attempt, out)? {
        *out_call = Box::into_raw(Box::new(IdemkitCall {
            executor: executor.clone(),
            attempt,
            finished: false,
            retry_at: None,
            generation: runtime::process_generation(),
            pid: std::process::id(),
        }));
    }
    Ok(())
}

/// Writes the attempt's key into `out.key`, advances it (claims its key, or finds what is
/// remembered) and writes the answer into `out`; true when the body is to run.
fn advance(
    executor: &Executor,
    attempt: &mut Attempt,
    out: &mut IdemkitBeginResult,
) -> Result<bool, Fault> {
    let key = attempt.key_text().unwrap_or_default();
    // SAFETY: `out.key` is a buffer of KEY_BUFFER_LEN bytes.
    unsafe {
        copy_out(
            &key,
            out.key.as_mut_ptr(),
            KEY_BUFFER_LEN,
            std::ptr::null_mut(),
            "out.key",
        )?;
    }
    match runtime::block_on_caller(executor.advance(attempt, None)) {
        Ok(Step::Run) => {
            out.answer = IdemkitAnswer::Execute;
            Ok(true)
        }
        Ok(Step::Replay(json)) => {
            out.answer = IdemkitAnswer::CachedSuccess;
            out.result_json = give_string(&json);
            Ok(false)
        }
        Ok(_) => Err(Fault::from(Error::Internal(
            "advance without a budget answered Pending".into(),
        ))),
        Err(Error::CachedFailure {
            error_type,
            message,
            ..
        }) => {
            out.answer = IdemkitAnswer::CachedFailure;
            out.error_type = give_string(&error_type);
            out.error_message = give_string(&message);
            Ok(false)
        }
        Err(error) => Err(error.into()),
    }
}

/// Clears `out` (when not NULL) to a result with no answer, its old strings not freed.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn clear_result(out: *mut IdemkitBeginResult) {
    if !out.is_null() {
        out.write(IdemkitBeginResult {
            answer: IdemkitAnswer::None,
            key: [0; KEY_BUFFER_LEN],
            result_json: std::ptr::null_mut(),
            error_type: std::ptr::null_mut(),
            error_message: std::ptr::null_mut(),
        });
    }
}

/// Asks whether a failed call runs again (SPEC v1.1 rule 8), after `idemkit_fail` or
/// `idemkit_fail_as` answered: the library decides, by the tool's retry policy
/// (`retry_max_attempts`), the failure's settlement and the deadline; the caller only asks.
///
/// With status OK, `out->answer` is:
/// - `IDEMKIT_ANSWER_NONE`: no retry (no retry policy, no runs left, a failure that is held or
///   recorded, a pause that would end past the deadline). The call is finished; hand your
///   caller the failure you reported.
/// - `IDEMKIT_ANSWER_EXECUTE`: run the body again, under the same key (`out->key`) and the same
///   call handle, then report it with `idemkit_complete` or `idemkit_fail`/`idemkit_fail_as`
///   as before, and ask again after a failure.
/// - `IDEMKIT_ANSWER_CACHED_SUCCESS` or `IDEMKIT_ANSWER_CACHED_FAILURE`: another caller settled
///   the key meanwhile; use its outcome as `idemkit_begin`'s. The call is finished.
///
/// Otherwise the status says why nothing may run, as for `idemkit_begin` (the call is
/// finished). `*out` is always overwritten (free its strings with
/// `idemkit_begin_result_clear`).
///
/// **Blocking.** Before it claims the key again this function sleeps what is left of the
/// pause the library chose (see `idemkit_call_retry_pause`; a caller that waited it out
/// elsewhere does not wait again), then blocks as `idemkit_begin` does while another caller
/// holds the key. A call freed instead of retried is safe: its claim was already released.
///
/// # Safety
/// `call` is NULL or a live call handle not used by another thread; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_call_retry(
    call: *mut IdemkitCall,
    out: *mut IdemkitBeginResult,
) -> IdemkitStatus {
    guard(|| {
        clear_result(out);
        let out = out.as_mut().ok_or_else(|| Fault::null("out"))?;
        let call = owned_call(call)?;
        if !call.finished {
            return Err(Fault::invalid(format!(
                "this call of `{}` has not been reported yet; report its body with idemkit_complete, idemkit_fail or idemkit_fail_as, then ask for a retry",
                call.attempt.tool().name()
            )));
        }
        let Some(at) = call.retry_at.take() else {
            return Ok(());
        };
        let left = at.saturating_duration_since(Instant::now());
        if !left.is_zero() {
            std::thread::sleep(left);
        }
        if advance(&call.executor, &mut call.attempt, out)? {
            call.finished = false;
        }
        Ok(())
    })
}

/// The pause before the retry that is due, for a caller that waits in its own loop before
/// `idemkit_call_retry`: `*out_ms` is the milliseconds left of it (0: it may run now), or -1
/// when no retry is due (`idemkit_call_retry` would answer `IDEMKIT_ANSWER_NONE`).
///
/// # Safety
/// `call` is NULL or a live call handle; `out_ms` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_call_retry_pause(
    call: *const IdemkitCall,
    out_ms: *mut i64,
) -> IdemkitStatus {
    guard(|| {
        let out_ms = out_ms.as_mut().ok_or_else(|| Fault::null("out_ms"))?;
        let call = call.as_ref().ok_or_else(|| Fault::null("call"))?;
        *out_ms = match call.retry_at {
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                // Rounded up, so that waiting this long is always enough.
                let ms = left.as_micros().div_ceil(1000);
                i64::try_from(ms).unwrap_or(i64::MAX)
            }
            None => -1,
        };
        Ok(())
    })
}

/// The refusal of an `EXPLICIT` call whose supplied key is NULL (SPEC §1: an invalid key).
pub(crate) fn null_explicit_key(tool: &str) -> Fault {
    Fault::new(
        IdemkitStatus::InvalidKey,
        format!(
            "invalid idempotency key for `{tool}`: explicit key: it is NULL; \
             supply a key with at least one visible character"
        ),
    )
}

/// Frees the strings of a begin result and sets them to NULL; the struct itself belongs to
/// the caller. NULL is accepted and ignored, and so is a cleared result.
///
/// # Safety
/// `result` is NULL or a result written by `idemkit_begin` whose strings were not freed
/// elsewhere.
#[no_mangle]
pub unsafe extern "C" fn idemkit_begin_result_clear(result: *mut IdemkitBeginResult) {
    guard_void(|| {
        if result.is_null() {
            return;
        }
        for field in [
            &mut (*result).result_json,
            &mut (*result).error_type,
            &mut (*result).error_message,
        ] {
            let string = std::mem::replace(field, std::ptr::null_mut());
            if !string.is_null() {
                drop(std::ffi::CString::from_raw(string));
            }
        }
    })
}

/// Copies the call's key, NUL-terminated, into `buf` (caller-owned, at least 65 bytes), e.g.
/// for an `Idempotency-Key` header: 64 hex characters for `HASH_INPUT` and `EXPLICIT`, the
/// fresh UUID for `UUID`, an empty string for `NONE`. A smaller buffer answers
/// `IDEMKIT_STATUS_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `call` is NULL or a live call handle; `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn idemkit_call_key(
    call: *const IdemkitCall,
    buf: *mut c_char,
    len: usize,
) -> IdemkitStatus {
    guard(|| {
        let call = call.as_ref().ok_or_else(|| Fault::null("call"))?;
        if buf.is_null() {
            return Err(Fault::null("buf"));
        }
        let key = call.attempt.key_text().unwrap_or_default();
        copy_out(&key, buf, len, std::ptr::null_mut(), "buf")
    })
}

/// The call handle, unless it is NULL or begun in another process.
unsafe fn owned_call<'a>(call: *mut IdemkitCall) -> Result<&'a mut IdemkitCall, Fault> {
    let call = call.as_mut().ok_or_else(|| Fault::null("call"))?;
    if call.generation != runtime::process_generation() {
        return Err(Fault::invalid(format!(
            "this call of `{}` was begun in process {} before fork(), so its claim belongs to that process and this process ({}) cannot finish it; finish it in process {} and begin this process's own calls here",
            call.attempt.tool().name(),
            call.pid,
            std::process::id(),
            call.pid
        )));
    }
    Ok(call)
}

/// The call handle, unless it is NULL, begun in another process, already finished, or
/// waiting for its retry.
unsafe fn open_call<'a>(call: *mut IdemkitCall) -> Result<&'a mut IdemkitCall, Fault> {
    let call = owned_call(call)?;
    if call.retry_at.is_some() {
        return Err(Fault::invalid(format!(
            "a retry of this call of `{}` is due; call idemkit_call_retry and run the body again only if it answers IDEMKIT_ANSWER_EXECUTE",
            call.attempt.tool().name()
        )));
    }
    if call.finished {
        return Err(Fault::invalid(format!(
            "this call of `{}` is already finished (completed, failed or released); begin a new call",
            call.attempt.tool().name()
        )));
    }
    Ok(call)
}

/// Reports what the body did to the executor and translates its answer: the recording goes to
/// `out` (a failed one is kept as the last error), and the timeout error of a body that ran
/// past the deadline becomes the status.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn report(
    call: &mut IdemkitCall,
    body: BodyReport<'_>,
    out: *mut IdemkitRecording,
) -> Result<(), Fault> {
    call.finished = true;
    let reported = runtime::block_on_caller(call.executor.report(&mut call.attempt, body));
    let recording = match reported.recording {
        Recording::Recorded => IdemkitRecording::Recorded,
        // Recorded as an indeterminate outcome; the status is INDETERMINATE.
        Recording::Held => IdemkitRecording::Held,
        Recording::Released => IdemkitRecording::Released,
        // A C body is never cancelled by the library: a call freed unreported stays in progress.
        Recording::Unprotected | Recording::LeftInProgress => IdemkitRecording::Unprotected,
        Recording::Failed(detail) => {
            crate::boundary::set_last_error(IdemkitStatus::StoreUnavailable, &detail);
            IdemkitRecording::Failed
        }
        // A recording newer than this library: say it did not settle, never that it did.
        _ => IdemkitRecording::Failed,
    };
    if let Some(out) = out.as_mut() {
        *out = recording;
    }
    match reported.answer {
        Answer::Error(error) => Err(error.into()),
        // The attempt is ready to advance again after the pause: `idemkit_call_retry`.
        Answer::Retry(pause) => {
            call.retry_at = Some(Instant::now() + pause);
            Ok(())
        }
        Answer::Body => Ok(()),
    }
}

/// Reports a body that succeeded with `result_json` (one JSON value, UTF-8): the result is
/// recorded so that repeats get it. `out_recording` (may be NULL) says what became of it.
///
/// **Deadline.** A body reported after the tool's `timeout_ms` has passed answers
/// `IDEMKIT_STATUS_TIMEOUT`, and so do `idemkit_fail` (SPEC v1.1 rule 3): its outcome is still
/// recorded (or released) as usual and `*out_recording` says so, so a repeat replays it; the
/// message says what became of it. Hand your caller the timeout, not the result.
///
/// The status is OK even when the result could not be recorded: the body's result stands, the
/// reason is the thread's last error and `*out_recording` is `IDEMKIT_RECORDING_FAILED`. A
/// result larger than the store keeps is recorded as too large (repeats get
/// `IDEMKIT_STATUS_OUTCOME_TOO_LARGE`). Text that is not one JSON value answers
/// `IDEMKIT_STATUS_INVALID_ARGUMENT` and the call stays open, so it can be completed or
/// failed again. The call is finished afterwards; free it with `idemkit_call_free`.
///
/// A call belongs to the process that began it: in a child made by `fork()`, `idemkit_complete`,
/// `idemkit_fail` and `idemkit_release_unrun` on a call the parent began answer
/// `IDEMKIT_STATUS_INVALID_ARGUMENT` at once (the parent still holds the call and finishes it);
/// `idemkit_call_free` on it is safe in the child.
///
/// # Safety
/// `call` is NULL or a live call handle not used by another thread; `result_json` is NULL or a
/// NUL-terminated string; `out_recording` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_complete(
    call: *mut IdemkitCall,
    result_json: *const c_char,
    out_recording: *mut IdemkitRecording,
) -> IdemkitStatus {
    guard(|| {
        let call = open_call(call)?;
        let json = required_str(result_json, "result_json")?;
        if let Err(e) = serde_json::from_str::<&serde_json::value::RawValue>(json) {
            return Err(Fault::invalid(format!(
                "result_json of `{}` is not one JSON value ({e}); pass the result as JSON text",
                call.attempt.tool().name()
            )));
        }
        report(call, BodyReport::Succeeded(json), out_recording)
    })
}

/// Reports a body that failed with an error of type `error_type` and `message` (UTF-8); the
/// same as `idemkit_fail_as` with `IDEMKIT_FAILURE_CLASS_UNKNOWN`. The tool's policy decides what
/// becomes of it (SPEC v1.1 rule 7): an error type in `no_effect_errors` is released, one in
/// `permanent_errors` is recorded; otherwise an `IDEMPOTENT` (default) or `READ_ONLY` tool's
/// failure is recorded with `cache_failures` (repeats get it as a cached failure) and released
/// without (`IDEMKIT_RECORDING_RELEASED`: the next call runs again), and an `EFFECTFUL` tool's
/// failure is held (`IDEMKIT_RECORDING_HELD`, status `IDEMKIT_STATUS_INDETERMINATE`).
/// `out_recording` (may be NULL) says what became of it, whatever the status; the status is OK
/// even when the store could not be told, `IDEMKIT_STATUS_INDETERMINATE` for a held failure
/// (hand your caller that, with the body's error as its cause), and `IDEMKIT_STATUS_TIMEOUT`
/// past the deadline (see `idemkit_complete`). With a retry policy on the tool
/// (`retry_max_attempts`), ask `idemkit_call_retry` next: it says whether the body runs again.
/// The call is finished afterwards; free it with `idemkit_call_free`.
///
/// # Safety
/// `call` is NULL or a live call handle not used by another thread; `error_type` and `message`
/// are NULL or NUL-terminated strings; `out_recording` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_fail(
    call: *mut IdemkitCall,
    error_type: *const c_char,
    message: *const c_char,
    out_recording: *mut IdemkitRecording,
) -> IdemkitStatus {
    guard(|| {
        let call = open_call(call)?;
        let failure = Failure::new(
            required_str(error_type, "error_type")?,
            required_str(message, "message")?,
        );
        report(call, BodyReport::Failed(&failure), out_recording)
    })
}

/// Reports a body that failed, like `idemkit_fail`, and what the caller knows about the
/// failure: `failure_class` is an `idemkit_failure_class` code (SPEC v1.1 rule 7).
///
/// - `IDEMKIT_FAILURE_CLASS_UNKNOWN`: exactly `idemkit_fail`: the policy's lists, then its effect,
///   decide.
/// - `IDEMKIT_FAILURE_CLASS_NO_EFFECT`: the claim is released (`IDEMKIT_RECORDING_RELEASED`), even
///   for an `EFFECTFUL` tool: the next call runs.
/// - `IDEMKIT_FAILURE_CLASS_PERMANENT`: the failure is recorded (`IDEMKIT_RECORDING_RECORDED`), even
///   without `cache_failures`: repeats get `IDEMKIT_ANSWER_CACHED_FAILURE` under
///   `RETURN_CACHED`.
///
/// An `EFFECTFUL` tool's failure of class `UNKNOWN` (not in either list) is held: the status
/// is `IDEMKIT_STATUS_INDETERMINATE`, `*out_recording` is `IDEMKIT_RECORDING_HELD`, and a
/// repeat's `idemkit_begin` answers `IDEMKIT_STATUS_INDETERMINATE` without running. A code
/// that is not an `idemkit_failure_class` answers `IDEMKIT_STATUS_INVALID_ARGUMENT` and the call
/// stays open. Otherwise as `idemkit_fail`.
///
/// # Safety
/// As `idemkit_fail`.
#[no_mangle]
pub unsafe extern "C" fn idemkit_fail_as(
    call: *mut IdemkitCall,
    error_type: *const c_char,
    message: *const c_char,
    failure_class: i32,
    out_recording: *mut IdemkitRecording,
) -> IdemkitStatus {
    guard(|| {
        let call = open_call(call)?;
        let class = IdemkitFailureClass::from_code(failure_class).ok_or_else(|| {
            Fault::invalid(format!(
                "failure_class {failure_class} for `{}` is not an idemkit_failure_class; use IDEMKIT_FAILURE_CLASS_UNKNOWN (0), IDEMKIT_FAILURE_CLASS_NO_EFFECT (1) or IDEMKIT_FAILURE_CLASS_PERMANENT (2)",
                call.attempt.tool().name()
            ))
        })?;
        let failure = Failure::new(
            required_str(error_type, "error_type")?,
            required_str(message, "message")?,
        );
        let types = [failure.error_type.clone()];
        report(
            call,
            BodyReport::FailedAs {
                failure: &failure,
                types: &types,
                class,
            },
            out_recording,
        )
    })
}

/// Gives up a call whose body was never run: its claim is released, so the next call runs.
/// Only for a body that did not start — if it may have acted, report it with `idemkit_fail`
/// (or `idemkit_complete`) instead. The call is finished afterwards.
///
/// # Safety
/// `call` is NULL or a live call handle not used by another thread.
#[no_mangle]
pub unsafe extern "C" fn idemkit_release_unrun(call: *mut IdemkitCall) -> IdemkitStatus {
    guard(|| {
        let call = open_call(call)?;
        report(call, BodyReport::NeverRan, std::ptr::null_mut())
    })
}

/// Frees a call handle. NULL is accepted and ignored. A call freed after `EXECUTE` without
/// `idemkit_complete`, `idemkit_fail` or `idemkit_release_unrun` is a cancelled body (SPEC v1.1
/// rule 3) and keeps its claim in progress:
/// the outcome is unknown, so when the lease ends the key answers `IDEMKIT_STATUS_INDETERMINATE`
/// until an operator resolves it or it expires. In a child made by `fork()`, freeing a call the
/// parent began frees only the child's copy of the handle; the claim stays the parent's.
///
/// # Safety
/// `call` is NULL or a call handle from `idemkit_begin` that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn idemkit_call_free(call: *mut IdemkitCall) {
    guard_void(|| {
        if !call.is_null() {
            let call = Box::from_raw(call);
            if call.generation == runtime::process_generation() {
                let _runtime = runtime::runtime().enter();
                drop(call);
            } else {
                // Begun in the parent before fork(): its store is not this process's to close.
                let IdemkitCall { executor, .. } = *call;
                leave_behind(executor);
            }
        }
    })
}
