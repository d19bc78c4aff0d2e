//! The payload fingerprint through the C ABI (SPEC v1.1 rule 9, v1.2 §9 rule 1): an `EXPLICIT`
//! call hands its whole input to `idemkit_begin_with_payload`; the record keeps its fingerprint,
//! and with `reject_payload_mismatch` the executor refuses a repeat of the key with another
//! input (the key is the application's: without it the other fields may differ), as it does for
//! `HASH_INPUT` with `key_arguments`.

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use super::protocol::{c, default_policy, empty_result, last_message, memory_store, text, tool};
use crate::*;

/// `idemkit_begin_with_payload` with no tenant or run; answers status, call and result.
fn begin_with(
    store: *const IdemkitStore,
    tool: *const IdemkitTool,
    key: &str,
    payload: Option<&str>,
) -> (IdemkitStatus, *mut IdemkitCall, IdemkitBeginResult) {
    let key = c(key);
    let payload = payload.map(c);
    let mut call = null_mut();
    let mut result = empty_result();
    let status = unsafe {
        idemkit_begin_with_payload(
            store,
            tool,
            null(),
            null(),
            key.as_ptr(),
            payload.as_ref().map_or(null(), |p| p.as_ptr()),
            &mut call,
            &mut result,
        )
    };
    (status, call, result)
}

fn key_of(result: &IdemkitBeginResult) -> String {
    unsafe { CStr::from_ptr(result.key.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

fn explicit_policy() -> IdemkitPolicy {
    let mut policy = default_policy();
    policy.strategy = IdemkitStrategy::Explicit as i32;
    policy
}

/// An `EXPLICIT` policy that refuses another payload under a used key.
fn strict_policy() -> IdemkitPolicy {
    let mut policy = explicit_policy();
    policy.reject_payload_mismatch = true;
    policy
}

#[test]
fn an_explicit_key_lets_the_other_fields_differ_unless_the_policy_rejects_it() {
    // The seed's create_issue: keyed on the title, so an edited body is the same issue.
    let store = memory_store();
    let create = tool("create_issue", &explicit_policy());
    let (status, call, mut result) = begin_with(
        store,
        create,
        "Login fails",
        Some(r#"{"title":"Login fails","body":"500"}"#),
    );
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(result.answer, IdemkitAnswer::Execute);
    let json = c(r#""issue 1""#);
    assert_eq!(
        unsafe { idemkit_complete(call, json.as_ptr(), null_mut()) },
        IdemkitStatus::Ok
    );
    unsafe {
        idemkit_call_free(call);
        idemkit_begin_result_clear(&mut result);
    }
    let (status, call, mut result) = begin_with(
        store,
        create,
        "Login fails",
        Some(r#"{"title":"Login fails","body":"500 (edited)"}"#),
    );
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(result.answer, IdemkitAnswer::CachedSuccess);
    assert!(call.is_null());
    assert_eq!(text(result.result_json), r#""issue 1""#);
    unsafe {
        idemkit_begin_result_clear(&mut result);
        idemkit_tool_free(create);
        idemkit_store_free(store);
    }
}

#[test]
fn an_explicit_key_repeated_with_another_payload_is_refused_and_runs_nothing() {
    let store = memory_store();
    let charge = tool("charge", &strict_policy());
    let (status, call, mut result) = begin_with(
        store,
        charge,
        "order-1",
        Some(r#"{"amount":5,"currency":"EUR"}"#),
    );
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(result.answer, IdemkitAnswer::Execute);
    let key = key_of(&result);
    let json = c(r#"{"charged":5}"#);
    assert_eq!(
        unsafe { idemkit_complete(call, json.as_ptr(), null_mut()) },
        IdemkitStatus::Ok
    );
    unsafe {
        idemkit_call_free(call);
        idemkit_begin_result_clear(&mut result);
    }

    // The same input, spelled otherwise: the same payload, answered from the record.
    let (status, call, mut result) = begin_with(
        store,
        charge,
        "order-1",
        Some(r#"{"currency":"EUR","amount":5.0}"#),
    );
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(result.answer, IdemkitAnswer::CachedSuccess);
    assert!(call.is_null());
    assert_eq!(text(result.result_json), r#"{"charged":5}"#);
    unsafe { idemkit_begin_result_clear(&mut result) };

    // Another amount under the same key: refused, naming tool and key; nothing to run.
    let (status, call, mut result) = begin_with(
        store,
        charge,
        "order-1",
        Some(r#"{"amount":6,"currency":"EUR"}"#),
    );
    assert_eq!(status, IdemkitStatus::PayloadMismatch);
    assert!(call.is_null());
    assert_eq!(result.answer, IdemkitAnswer::None);
    assert_eq!(key_of(&result), key, "the key is reported");
    let message = last_message();
    assert!(
        message.contains("`charge`")
            && message.contains(&key)
            && message.contains("another payload"),
        "{message}"
    );
    assert_eq!(idemkit_last_error_kind(), IdemkitStatus::PayloadMismatch);
    unsafe { idemkit_begin_result_clear(&mut result) };

    // Without a payload (`idemkit_begin`, or NULL) nothing is compared.
    let (status, _, mut result) = begin_with(store, charge, "order-1", None);
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(result.answer, IdemkitAnswer::CachedSuccess);
    unsafe { idemkit_begin_result_clear(&mut result) };

    // A payload that is not JSON is refused before anything is claimed.
    let (status, call, mut result) = begin_with(store, charge, "order-2", Some("{amount:"));
    assert_eq!(status, IdemkitStatus::InvalidKey, "{}", last_message());
    assert!(call.is_null());
    unsafe { idemkit_begin_result_clear(&mut result) };
    let (status, call, mut result) = begin_with(store, charge, "order-2", Some("{}"));
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(
        result.answer,
        IdemkitAnswer::Execute,
        "order-2 was never claimed"
    );
    unsafe {
        idemkit_release_unrun(call);
        idemkit_call_free(call);
        idemkit_begin_result_clear(&mut result);
        idemkit_tool_free(charge);
        idemkit_store_free(store);
    }
}

#[test]
fn a_remembered_failure_is_not_replaced_by_a_call_with_another_payload() {
    // RETURN_CACHED_IF_SUCCESS runs a remembered failure again, but only for the same payload.
    let store = memory_store();
    let mut policy = strict_policy();
    policy.on_cache_hit = IdemkitOnCacheHit::ReturnCachedIfSuccess as i32;
    policy.cache_failures = true;
    let charge = tool("charge", &policy);
    let (status, call, mut result) = begin_with(store, charge, "order-9", Some(r#"{"amount":5}"#));
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    let (kind, message) = (c("Declined"), c("insufficient funds"));
    let mut recording = IdemkitRecording::Failed;
    assert_eq!(
        unsafe { idemkit_fail(call, kind.as_ptr(), message.as_ptr(), &mut recording) },
        IdemkitStatus::Ok
    );
    assert_eq!(recording, IdemkitRecording::Recorded);
    unsafe {
        idemkit_call_free(call);
        idemkit_begin_result_clear(&mut result);
    }

    let (status, call, mut result) = begin_with(store, charge, "order-9", Some(r#"{"amount":6}"#));
    assert_eq!(status, IdemkitStatus::PayloadMismatch, "{}", last_message());
    assert!(call.is_null());
    unsafe { idemkit_begin_result_clear(&mut result) };

    let (status, call, mut result) = begin_with(store, charge, "order-9", Some(r#"{"amount":5}"#));
    assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
    assert_eq!(
        result.answer,
        IdemkitAnswer::Execute,
        "the same payload runs again"
    );
    unsafe {
        idemkit_release_unrun(call);
        idemkit_call_free(call);
        idemkit_begin_result_clear(&mut result);
        idemkit_tool_free(charge);
        idemkit_store_free(store);
    }
}

#[test]
fn key_arguments_allow_another_payload_unless_the_policy_rejects_it() {
    let store = memory_store();
    let flight = c("flight");
    let key_arguments = [flight.as_ptr()];
    let mut policy = default_policy();
    assert!(!policy.reject_payload_mismatch, "allowed by default");
    policy.key_arguments = key_arguments.as_ptr();
    policy.key_argument_count = 1;
    let lenient = tool("book", &policy);
    policy.reject_payload_mismatch = true;
    let strict = tool("book_strict", &policy);
    for (tool, second) in [
        (lenient, IdemkitStatus::Ok),
        (strict, IdemkitStatus::PayloadMismatch),
    ] {
        let (status, call, mut result) =
            super::protocol::begin(store, tool, r#"{"flight":"BA117","request_id":"r-1"}"#);
        assert_eq!(status, IdemkitStatus::Ok, "{}", last_message());
        let json = c(r#""booked""#);
        unsafe {
            idemkit_complete(call, json.as_ptr(), null_mut());
            idemkit_call_free(call);
            idemkit_begin_result_clear(&mut result);
        }
        let (status, call, mut result) =
            super::protocol::begin(store, tool, r#"{"flight":"BA117","request_id":"r-2"}"#);
        assert_eq!(status, second, "{}", last_message());
        assert!(call.is_null(), "nothing runs either way");
        unsafe { idemkit_begin_result_clear(&mut result) };
    }
    unsafe {
        idemkit_tool_free(lenient);
        idemkit_tool_free(strict);
        idemkit_store_free(store);
    }
}
