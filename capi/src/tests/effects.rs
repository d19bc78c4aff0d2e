//! Effect kinds and failure classification through the C ABI (SPEC v1.1 rule 7): C passes
//! the tool's effect, its error lists and a failure's class; the executor settles.

use std::ffi::c_char;
use std::ptr::null_mut;

use super::protocol::{begin, c, default_policy, last_message, memory_store, text, tool};
use crate::*;

/// Begins `input` and expects EXECUTE; answers the call handle.
fn execute(store: *const IdemkitStore, tool: *const IdemkitTool, input: &str) -> *mut IdemkitCall {
    let (status, call, result) = begin(store, tool, input);
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(result.answer, IdemkitAnswer::Execute);
    assert!(!call.is_null());
    call
}

fn fail_as(
    call: *mut IdemkitCall,
    error_type: &str,
    class: i32,
) -> (IdemkitStatus, IdemkitRecording) {
    let (error_type, message) = (c(error_type), c("it went wrong"));
    let mut recording = IdemkitRecording::Failed;
    let status = unsafe {
        idemkit_fail_as(
            call,
            error_type.as_ptr(),
            message.as_ptr(),
            class,
            &mut recording,
        )
    };
    (status, recording)
}

fn policy_with_effect(effect: IdemkitEffect) -> IdemkitPolicy {
    let mut policy = default_policy();
    policy.effect = effect as i32;
    policy
}

#[test]
fn the_default_effect_is_idempotent() {
    let policy = default_policy();
    assert_eq!(policy.effect, IdemkitEffect::Idempotent as i32);
    assert!(policy.no_effect_errors.is_null() && policy.no_effect_error_count == 0);
    assert!(policy.permanent_errors.is_null() && policy.permanent_error_count == 0);
}

#[test]
fn an_effectful_failure_is_held_and_a_repeat_is_indeterminate_without_running() {
    let store = memory_store();
    let tool = tool("charge", &policy_with_effect(IdemkitEffect::Effectful));
    let call = execute(store, tool, r#"{"amount":5}"#);
    let (status, recording) = fail_as(call, "GatewayTimeout", IdemkitFailureClass::Unknown as i32);
    assert_eq!(status, IdemkitStatus::Indeterminate);
    assert_eq!(recording, IdemkitRecording::Held);
    let message = last_message();
    assert!(message.contains("charge"), "{message}");
    unsafe { idemkit_call_free(call) };

    let (status, call, result) = begin(store, tool, r#"{"amount":5}"#);
    assert_eq!(status, IdemkitStatus::Indeterminate, "{}", last_message());
    assert!(call.is_null(), "nothing to run");
    assert_eq!(result.answer, IdemkitAnswer::None);
    assert_eq!(text(result.key.as_ptr()).len(), 64, "the key is named");

    // idemkit_fail (class unknown) holds the same way.
    let call = execute(store, tool, r#"{"amount":6}"#);
    let (kind, message) = (c("GatewayTimeout"), c("no answer"));
    let mut recording = IdemkitRecording::Failed;
    assert_eq!(
        unsafe { idemkit_fail(call, kind.as_ptr(), message.as_ptr(), &mut recording) },
        IdemkitStatus::Indeterminate
    );
    assert_eq!(recording, IdemkitRecording::Held);
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn a_no_effect_failure_is_released_even_when_effectful() {
    let store = memory_store();
    let tool = tool("charge", &policy_with_effect(IdemkitEffect::Effectful));
    let call = execute(store, tool, r#"{"amount":7}"#);
    let (status, recording) = fail_as(
        call,
        "ConnectionRefused",
        IdemkitFailureClass::NoEffect as i32,
    );
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(recording, IdemkitRecording::Released);
    unsafe { idemkit_call_free(call) };
    let call = execute(store, tool, r#"{"amount":7}"#);
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn a_permanent_failure_is_recorded_without_cache_failures() {
    let store = memory_store();
    let policy = default_policy();
    assert!(!policy.cache_failures);
    let tool = tool("charge", &policy);
    let call = execute(store, tool, r#"{"amount":8}"#);
    let (status, recording) = fail_as(call, "CardDeclined", IdemkitFailureClass::Permanent as i32);
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(recording, IdemkitRecording::Recorded);
    unsafe { idemkit_call_free(call) };
    let (status, call, mut result) = begin(store, tool, r#"{"amount":8}"#);
    assert_eq!(status, IdemkitStatus::Ok);
    assert!(call.is_null());
    assert_eq!(result.answer, IdemkitAnswer::CachedFailure);
    assert_eq!(text(result.error_type), "CardDeclined");
    assert_eq!(text(result.error_message), "it went wrong");
    unsafe {
        idemkit_begin_result_clear(&mut result);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn the_policy_lists_classify_by_error_type() {
    let store = memory_store();
    let (refused, declined) = (c("ConnectionRefused"), c("CardDeclined"));
    let no_effect = [refused.as_ptr()];
    let permanent = [declined.as_ptr()];
    let mut policy = policy_with_effect(IdemkitEffect::Effectful);
    policy.no_effect_errors = no_effect.as_ptr();
    policy.no_effect_error_count = 1;
    policy.permanent_errors = permanent.as_ptr();
    policy.permanent_error_count = 1;
    let tool = tool("charge", &policy);
    for (error_type, recording, input) in [
        (
            "ConnectionRefused",
            IdemkitRecording::Released,
            r#"{"n":1}"#,
        ),
        ("CardDeclined", IdemkitRecording::Recorded, r#"{"n":2}"#),
        ("Other", IdemkitRecording::Held, r#"{"n":3}"#),
    ] {
        let call = execute(store, tool, input);
        let (_, got) = fail_as(call, error_type, IdemkitFailureClass::Unknown as i32);
        assert_eq!(got, recording, "{error_type}");
        unsafe { idemkit_call_free(call) };
    }
    unsafe {
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn a_read_only_tool_runs_every_time() {
    let store = memory_store();
    let tool = tool("lookup", &policy_with_effect(IdemkitEffect::ReadOnly));
    for _ in 0..2 {
        let call = execute(store, tool, r#"{"id":1}"#);
        let (result, mut recording) = (c("{\"name\":\"x\"}"), IdemkitRecording::Failed);
        assert_eq!(
            unsafe { idemkit_complete(call, result.as_ptr(), &mut recording) },
            IdemkitStatus::Ok
        );
        assert_eq!(recording, IdemkitRecording::Unprotected);
        unsafe { idemkit_call_free(call) };
    }
    let call = execute(store, tool, r#"{"id":1}"#);
    let (_, recording) = fail_as(call, "Oops", IdemkitFailureClass::Unknown as i32);
    assert_eq!(recording, IdemkitRecording::Unprotected);
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn bad_codes_and_read_only_conflicts_are_refused_naming_the_field() {
    let name = c("charge");
    let mut out = null_mut();
    let mut policy = default_policy();
    policy.effect = 9;
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::Configuration);
    assert!(last_message().contains("effect 9"), "{}", last_message());
    assert!(
        last_message().contains("IDEMKIT_EFFECT_EFFECTFUL"),
        "{}",
        last_message()
    );

    let mut policy = policy_with_effect(IdemkitEffect::ReadOnly);
    policy.cache_failures = true;
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::Configuration);
    let message = last_message();
    assert!(
        message.contains("cache_failures") && message.contains("effect"),
        "{message}"
    );

    let empty = c(" ");
    let list = [empty.as_ptr()];
    let mut policy = default_policy();
    policy.permanent_errors = list.as_ptr();
    policy.permanent_error_count = 1;
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::Configuration);
    assert!(
        last_message().contains("permanent_errors"),
        "{}",
        last_message()
    );

    let mut policy = default_policy();
    policy.no_effect_error_count = 1;
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::NullPointer);
    assert!(
        last_message().contains("policy.no_effect_errors"),
        "{}",
        last_message()
    );

    // An unknown class leaves the call open: it can still be reported.
    let store = memory_store();
    let tool = tool("charge", &default_policy());
    let call = execute(store, tool, "{}");
    let (status, _) = fail_as(call, "E", 3);
    assert_eq!(status, IdemkitStatus::InvalidArgument);
    assert!(
        last_message().contains("failure_class 3"),
        "{}",
        last_message()
    );
    let (status, recording) = fail_as(call, "E", IdemkitFailureClass::Unknown as i32);
    assert_eq!(status, IdemkitStatus::Ok);
    assert_eq!(recording, IdemkitRecording::Released);
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

/// `idemkit_policy` as a program compiled against the idemkit 1.0 header lays it out.
#[repr(C)]
struct OldPolicy {
    struct_size: usize,
    strategy: i32,
    on_cache_hit: i32,
    cache_failures: bool,
    ttl_seconds: u64,
    lease_seconds: u64,
    key_arguments: *const *const c_char,
    key_argument_count: usize,
}

#[test]
fn a_policy_of_the_old_size_is_accepted_and_its_new_fields_take_their_defaults() {
    let old_size = std::mem::size_of::<OldPolicy>();
    assert!(old_size < std::mem::size_of::<IdemkitPolicy>());
    // The old struct sits at the start of a larger buffer whose tail the library must neither
    // write nor read: it is filled with bytes that are no valid effect code or pointer.
    #[repr(C, align(8))]
    struct Buffer([u8; 256]);
    let mut buffer = Buffer([0xA5; 256]);
    let old = buffer.0.as_mut_ptr().cast::<OldPolicy>();
    assert_eq!(
        unsafe { idemkit_policy_default(old.cast::<IdemkitPolicy>(), old_size) },
        IdemkitStatus::Ok
    );
    assert!(
        buffer.0[old_size..].iter().all(|&b| b == 0xA5),
        "only the old struct is written"
    );
    let old = unsafe { &mut *old };
    assert_eq!(old.struct_size, old_size);
    assert_eq!(old.ttl_seconds, 3600);
    assert!(!old.cache_failures);

    let store = memory_store();
    let name = c("send_email");
    let mut tool = null_mut();
    let status =
        unsafe { idemkit_tool_new(name.as_ptr(), (old as *mut OldPolicy).cast(), 0, &mut tool) };
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    // The defaults of the new fields: IDEMPOTENT, no lists, so a failure is released.
    let call = execute(store, tool, r#"{"to":"a"}"#);
    let (status, recording) = fail_as(call, "MailError", IdemkitFailureClass::Unknown as i32);
    assert_eq!(status, IdemkitStatus::Ok);
    assert_eq!(recording, IdemkitRecording::Released);
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

/// Asks `idemkit_call_retry`; answers its status and answer.
fn retry(call: *mut IdemkitCall) -> (IdemkitStatus, IdemkitAnswer) {
    let mut result = super::protocol::empty_result();
    let status = unsafe { idemkit_call_retry(call, &mut result) };
    let answer = result.answer;
    unsafe { idemkit_begin_result_clear(&mut result) };
    (status, answer)
}

#[test]
fn the_library_decides_whether_a_failed_call_runs_again() {
    let store = memory_store();
    let mut policy = default_policy();
    assert_eq!(policy.retry_max_attempts, 0, "no retries by default");
    assert_eq!(
        (policy.retry_initial_backoff_ms, policy.retry_max_backoff_ms),
        (100, 2000)
    );
    policy.retry_max_attempts = 3;
    policy.retry_initial_backoff_ms = 1;
    policy.retry_max_backoff_ms = 2;
    let retried = tool("send_email", &policy);
    let call = execute(store, retried, r#"{"to":"r"}"#);
    let mut runs = 1;
    loop {
        let (status, recording) = fail_as(call, "Unavailable", IdemkitFailureClass::Unknown as i32);
        assert_eq!(
            (status, recording),
            (IdemkitStatus::Ok, IdemkitRecording::Released)
        );
        let mut pause = -2;
        assert_eq!(
            unsafe { idemkit_call_retry_pause(call, &mut pause) },
            IdemkitStatus::Ok
        );
        match retry(call) {
            (IdemkitStatus::Ok, IdemkitAnswer::Execute) => {
                assert!((0..=2).contains(&pause), "pause {pause}");
                runs += 1;
            }
            (IdemkitStatus::Ok, IdemkitAnswer::None) => {
                assert_eq!(pause, -1);
                break;
            }
            other => panic!("{other:?}: {}", last_message()),
        }
    }
    assert_eq!(runs, 3, "3 runs in all");
    unsafe { idemkit_call_free(call) };

    // A permanent failure is recorded and never retried.
    let call = execute(store, retried, r#"{"to":"p"}"#);
    fail_as(call, "Declined", IdemkitFailureClass::Permanent as i32);
    assert_eq!(retry(call), (IdemkitStatus::Ok, IdemkitAnswer::None));
    unsafe { idemkit_call_free(call) };

    // An unreported call cannot be retried.
    let call = execute(store, retried, r#"{"to":"u"}"#);
    assert_eq!(retry(call).0, IdemkitStatus::InvalidArgument);
    assert!(
        last_message().contains("not been reported"),
        "{}",
        last_message()
    );
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(retried);
    }

    // A bad retry policy is refused with the C names of its fields.
    policy.retry_initial_backoff_ms = 50;
    policy.retry_max_backoff_ms = 10;
    let name = c("send_email");
    let mut out = null_mut();
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::Configuration);
    let message = last_message();
    assert!(
        message.contains("`send_email`")
            && message.contains("retry_max_backoff_ms")
            && message.contains("retry_initial_backoff_ms"),
        "{message}"
    );
    unsafe { idemkit_store_free(store) };
}

/// Fails `call` with `error_type` (class UNKNOWN) and asks whether it runs again.
fn fails_and_retries(call: *mut IdemkitCall, error_type: &str) -> bool {
    let (status, recording) = fail_as(call, error_type, IdemkitFailureClass::Unknown as i32);
    assert_eq!(
        (status, recording),
        (IdemkitStatus::Ok, IdemkitRecording::Released)
    );
    match retry(call) {
        (IdemkitStatus::Ok, IdemkitAnswer::Execute) => true,
        (IdemkitStatus::Ok, IdemkitAnswer::None) => false,
        other => panic!("{other:?}: {}", last_message()),
    }
}

#[test]
fn retry_on_names_the_error_types_the_library_retries() {
    let store = memory_store();
    let mut policy = default_policy();
    assert!(policy.retry_on.is_null() && policy.retry_on_count == 0);
    let timeout = c("Timeout");
    let names = [timeout.as_ptr()];
    policy.retry_max_attempts = 3;
    policy.retry_initial_backoff_ms = 1;
    policy.retry_max_backoff_ms = 2;
    policy.retry_on = names.as_ptr();
    policy.retry_on_count = 1;
    let fetch = tool("fetch", &policy);

    // A type retry_on names runs again, up to the attempts.
    let call = execute(store, fetch, r#"{"id":1}"#);
    let mut runs = 1;
    while fails_and_retries(call, "Timeout") {
        runs += 1;
    }
    assert_eq!(runs, 3);
    unsafe { idemkit_call_free(call) };

    // Another type is released but not retried.
    let call = execute(store, fetch, r#"{"id":2}"#);
    assert!(!fails_and_retries(call, "NotFound"));
    unsafe { idemkit_call_free(call) };

    // A retry that runs then fails with another type ends there.
    let call = execute(store, fetch, r#"{"id":3}"#);
    assert!(fails_and_retries(call, "Timeout"));
    assert!(!fails_and_retries(call, "NotFound"));
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(fetch);
    }

    // retry_on without retry_max_attempts, and an empty name, are refused naming the fields.
    let name = c("fetch");
    let mut out = null_mut();
    policy.retry_max_attempts = 0;
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::Configuration);
    let message = last_message();
    assert!(
        message.contains("`fetch`")
            && message.contains("retry_on")
            && message.contains("retry_max_attempts"),
        "{message}"
    );
    let empty = c(" ");
    let names = [empty.as_ptr()];
    policy.retry_max_attempts = 3;
    policy.retry_on = names.as_ptr();
    let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
    assert_eq!(status, IdemkitStatus::Configuration);
    let message = last_message();
    assert!(
        message.contains("`fetch`") && message.contains("retry_on"),
        "{message}"
    );
    assert!(out.is_null());
    unsafe { idemkit_store_free(store) };
}

/// `idemkit_policy` as it was before `retry_on` and `reject_payload_mismatch`.
#[repr(C)]
struct PolicyBeforeRetryOn {
    old: OldPolicy,
    effect: i32,
    no_effect_errors: *const *const c_char,
    no_effect_error_count: usize,
    permanent_errors: *const *const c_char,
    permanent_error_count: usize,
    retry_max_attempts: u32,
    retry_initial_backoff_ms: u64,
    retry_max_backoff_ms: u64,
}

#[test]
fn a_policy_of_the_size_before_retry_on_is_accepted_with_defaults_for_the_new_fields() {
    let size = std::mem::size_of::<PolicyBeforeRetryOn>();
    assert_eq!(size, std::mem::offset_of!(IdemkitPolicy, retry_on));
    #[repr(C, align(8))]
    struct Buffer([u8; 256]);
    let mut buffer = Buffer([0xA5; 256]);
    let before = buffer.0.as_mut_ptr().cast::<PolicyBeforeRetryOn>();
    assert_eq!(
        unsafe { idemkit_policy_default(before.cast::<IdemkitPolicy>(), size) },
        IdemkitStatus::Ok
    );
    assert!(
        buffer.0[size..].iter().all(|&b| b == 0xA5),
        "only that struct is written"
    );
    let before = unsafe { &mut *before };
    assert_eq!(before.old.struct_size, size);
    assert_eq!(before.retry_max_backoff_ms, 2000);
    before.retry_max_attempts = 2;
    before.retry_initial_backoff_ms = 1;
    before.retry_max_backoff_ms = 1;
    let name = c("send_email");
    let mut tool = null_mut();
    // The tail would be a bad pointer and count as retry_on if it were read.
    let status = unsafe {
        idemkit_tool_new(
            name.as_ptr(),
            (before as *mut PolicyBeforeRetryOn).cast(),
            0,
            &mut tool,
        )
    };
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    let store = memory_store();
    let call = execute(store, tool, r#"{"to":"b"}"#);
    assert!(
        fails_and_retries(call, "AnyError"),
        "no retry_on: every type"
    );
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}
