//! The C ABI called the way C calls it: null pointers, bad UTF-8, small buffers and the
//! two-step protocol through the extern functions themselves.

use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

use crate::*;

pub(super) fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

pub(super) fn last_message() -> String {
    let mut needed = 0usize;
    let status = unsafe { idemkit_last_error_message(null_mut(), 0, &mut needed) };
    assert_eq!(status, IdemkitStatus::Ok);
    let mut buf = vec![0 as c_char; needed];
    let status = unsafe { idemkit_last_error_message(buf.as_mut_ptr(), buf.len(), null_mut()) };
    assert_eq!(status, IdemkitStatus::Ok);
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

pub(super) fn memory_store() -> *mut IdemkitStore {
    let mut store = null_mut();
    let url = c("memory:");
    assert_eq!(
        unsafe { idemkit_store_open(url.as_ptr(), null(), &mut store) },
        IdemkitStatus::Ok
    );
    assert!(!store.is_null());
    store
}

pub(super) fn default_policy() -> IdemkitPolicy {
    let mut policy = std::mem::MaybeUninit::<IdemkitPolicy>::uninit();
    assert_eq!(
        unsafe {
            idemkit_policy_default(policy.as_mut_ptr(), std::mem::size_of::<IdemkitPolicy>())
        },
        IdemkitStatus::Ok
    );
    unsafe { policy.assume_init() }
}

pub(super) fn tool(name: &str, policy: &IdemkitPolicy) -> *mut IdemkitTool {
    let mut tool = null_mut();
    let name = c(name);
    assert_eq!(
        unsafe { idemkit_tool_new(name.as_ptr(), policy, 0, &mut tool) },
        IdemkitStatus::Ok,
        "{}",
        last_message()
    );
    tool
}

pub(super) fn empty_result() -> IdemkitBeginResult {
    IdemkitBeginResult {
        answer: IdemkitAnswer::None,
        key: [0; 65],
        result_json: null_mut(),
        error_type: null_mut(),
        error_message: null_mut(),
    }
}

pub(super) fn begin(
    store: *const IdemkitStore,
    tool: *const IdemkitTool,
    input: &str,
) -> (IdemkitStatus, *mut IdemkitCall, IdemkitBeginResult) {
    let input = c(input);
    let mut call = null_mut();
    let mut result = empty_result();
    let status = unsafe {
        idemkit_begin(
            store,
            tool,
            null(),
            null(),
            input.as_ptr(),
            &mut call,
            &mut result,
        )
    };
    (status, call, result)
}

pub(super) fn text(ptr: *const c_char) -> String {
    assert!(!ptr.is_null());
    unsafe { CStr::from_ptr(ptr) }.to_str().unwrap().to_owned()
}

#[test]
fn null_handles_and_out_pointers_are_refused_with_null_pointer() {
    let mut store = null_mut();
    assert_eq!(
        unsafe { idemkit_store_open(null(), null(), &mut store) },
        IdemkitStatus::NullPointer
    );
    assert!(store.is_null());
    assert!(last_message().contains("`url` is NULL"));
    let url = c("memory:");
    assert_eq!(
        unsafe { idemkit_store_open(url.as_ptr(), null(), null_mut()) },
        IdemkitStatus::NullPointer
    );
    let mut tool = null_mut();
    assert_eq!(
        unsafe { idemkit_tool_new(null(), null(), 0, &mut tool) },
        IdemkitStatus::NullPointer
    );
    let (status, call, result) = begin(null(), null(), "{}");
    assert_eq!(status, IdemkitStatus::NullPointer);
    assert!(call.is_null());
    assert_eq!(result.answer, IdemkitAnswer::None);
    assert_eq!(
        unsafe { idemkit_complete(null_mut(), null(), null_mut()) },
        IdemkitStatus::NullPointer
    );
    assert_eq!(
        unsafe { idemkit_fail(null_mut(), null(), null(), null_mut()) },
        IdemkitStatus::NullPointer
    );
    assert_eq!(
        unsafe { idemkit_call_key(null(), null_mut(), 0) },
        IdemkitStatus::NullPointer
    );
    assert_eq!(
        unsafe { idemkit_derive_key(null(), null_mut(), 0, null_mut(), 0, null_mut()) },
        IdemkitStatus::NullPointer
    );
    assert_eq!(idemkit_last_error_kind(), IdemkitStatus::NullPointer);
}

#[test]
fn free_functions_accept_null() {
    unsafe {
        idemkit_store_free(null_mut());
        idemkit_tool_free(null_mut());
        idemkit_call_free(null_mut());
        idemkit_string_free(null_mut());
        idemkit_begin_result_clear(null_mut());
    }
}

#[test]
fn invalid_utf8_is_refused_naming_the_argument() {
    let store = memory_store();
    let tool = tool("send_email", &default_policy());
    let bad = CString::new(vec![b'a', 0xff, b'b']).unwrap();
    let input = c("{}");
    let mut call = null_mut();
    let mut result = empty_result();
    let status = unsafe {
        idemkit_begin(
            store,
            tool,
            bad.as_ptr(),
            null(),
            input.as_ptr(),
            &mut call,
            &mut result,
        )
    };
    assert_eq!(status, IdemkitStatus::InvalidUtf8);
    assert!(
        last_message().contains("`tenant` is not valid UTF-8"),
        "{}",
        last_message()
    );
    unsafe {
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn derive_key_writes_key_and_material_and_reports_small_buffers() {
    let scope = c("book");
    let data = c(r#"{"flight":"BA117"}"#);
    let request = IdemkitKeyRequest {
        scope: scope.as_ptr(),
        tenant: null(),
        run: null(),
        strategy: IdemkitStrategy::HashInput as i32,
        data: data.as_ptr(),
        key_arguments: null(),
        key_argument_count: 0,
    };
    let mut key = [0 as c_char; 65];
    let mut material = [0 as c_char; 8];
    let mut needed = 0usize;
    let status = unsafe {
        idemkit_derive_key(
            &request,
            key.as_mut_ptr(),
            key.len(),
            material.as_mut_ptr(),
            material.len(),
            &mut needed,
        )
    };
    assert_eq!(status, IdemkitStatus::BufferTooSmall);
    assert_eq!(
        text(key.as_ptr()),
        "16aaec1b968f0c9ed7997809bfdba63ad58b7ba07512bef2fc513f1cf96b8f63"
    );
    let expected = r#"["idemkit/v1",null,null,"book","input",{"flight":"BA117"}]"#;
    assert_eq!(needed, expected.len() + 1);
    let mut material = vec![0 as c_char; needed];
    let status = unsafe {
        idemkit_derive_key(
            &request,
            key.as_mut_ptr(),
            key.len(),
            material.as_mut_ptr(),
            needed,
            null_mut(),
        )
    };
    assert_eq!(status, IdemkitStatus::Ok);
    assert_eq!(text(material.as_ptr()), expected);

    let mut short = [0 as c_char; 64];
    let status = unsafe {
        idemkit_derive_key(
            &request,
            short.as_mut_ptr(),
            short.len(),
            null_mut(),
            0,
            null_mut(),
        )
    };
    assert_eq!(status, IdemkitStatus::BufferTooSmall);
}

#[test]
fn begin_complete_then_the_repeat_gets_the_cached_success() {
    let store = memory_store();
    let tool = tool("send_email", &default_policy());
    let (status, call, mut first) = begin(store, tool, r#"{"to":"ana"}"#);
    assert_eq!(status, IdemkitStatus::Ok);
    assert_eq!(first.answer, IdemkitAnswer::Execute);
    assert!(!call.is_null());
    let mut key = [0 as c_char; 65];
    assert_eq!(
        unsafe { idemkit_call_key(call, key.as_mut_ptr(), key.len()) },
        IdemkitStatus::Ok
    );
    assert_eq!(text(key.as_ptr()), text(first.key.as_ptr()));
    assert_eq!(text(key.as_ptr()).len(), 64);

    let result = c(r#"{"id":"msg-1"}"#);
    let mut recording = IdemkitRecording::Failed;
    assert_eq!(
        unsafe { idemkit_complete(call, result.as_ptr(), &mut recording) },
        IdemkitStatus::Ok
    );
    assert_eq!(recording, IdemkitRecording::Recorded);
    // A finished call refuses a second report.
    assert_eq!(
        unsafe { idemkit_complete(call, result.as_ptr(), null_mut()) },
        IdemkitStatus::InvalidArgument
    );
    unsafe { idemkit_call_free(call) };

    let (status, call, mut second) = begin(store, tool, r#"{"to":"ana"}"#);
    assert_eq!(status, IdemkitStatus::Ok);
    assert!(call.is_null());
    assert_eq!(second.answer, IdemkitAnswer::CachedSuccess);
    assert_eq!(text(second.result_json), r#"{"id":"msg-1"}"#);
    unsafe {
        idemkit_begin_result_clear(&mut first);
        idemkit_begin_result_clear(&mut second);
        idemkit_begin_result_clear(&mut second);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
    assert!(second.result_json.is_null());
}

#[test]
fn a_result_that_is_not_json_keeps_the_call_open() {
    let store = memory_store();
    let tool = tool("t", &default_policy());
    let (status, call, _) = begin(store, tool, "1");
    assert_eq!(status, IdemkitStatus::Ok);
    let bad = c("not json");
    assert_eq!(
        unsafe { idemkit_complete(call, bad.as_ptr(), null_mut()) },
        IdemkitStatus::InvalidArgument
    );
    let good = c("true");
    assert_eq!(
        unsafe { idemkit_complete(call, good.as_ptr(), null_mut()) },
        IdemkitStatus::Ok
    );
    unsafe {
        idemkit_call_free(call);
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
}

#[test]
fn a_call_outlives_its_freed_store_and_tool() {
    let store = memory_store();
    let tool = tool("t", &default_policy());
    let (status, call, _) = begin(store, tool, "2");
    assert_eq!(status, IdemkitStatus::Ok);
    unsafe {
        idemkit_tool_free(tool);
        idemkit_store_free(store);
    }
    let failure_type = c("Boom");
    let message = c("it broke");
    let mut recording = IdemkitRecording::Failed;
    assert_eq!(
        unsafe {
            idemkit_fail(
                call,
                failure_type.as_ptr(),
                message.as_ptr(),
                &mut recording,
            )
        },
        IdemkitStatus::Ok
    );
    assert_eq!(recording, IdemkitRecording::Released);
    unsafe { idemkit_call_free(call) };
}

#[test]
fn configuration_errors_say_what_to_change() {
    let mut policy = default_policy();
    policy.ttl_seconds = 0;
    let name = c("send_email");
    let mut tool = null_mut();
    assert_eq!(
        unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut tool) },
        IdemkitStatus::Configuration
    );
    assert!(tool.is_null());
    assert!(last_message().contains("ttl_seconds must be > 0 on `send_email`"));

    let mut policy = default_policy();
    policy.strategy = 42;
    assert_eq!(
        unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut tool) },
        IdemkitStatus::Configuration
    );
    assert!(last_message().contains("strategy 42"));

    let url = c("ftp://example.com");
    let mut store = null_mut();
    assert_eq!(
        unsafe { idemkit_store_open(url.as_ptr(), null(), &mut store) },
        IdemkitStatus::Configuration
    );
}

#[test]
fn the_last_error_message_reports_its_size_when_the_buffer_is_small() {
    let mut store = null_mut();
    assert_eq!(
        unsafe { idemkit_store_open(null(), null(), &mut store) },
        IdemkitStatus::NullPointer
    );
    let full = last_message();
    let mut small = [0 as c_char; 4];
    let mut needed = 0usize;
    let status =
        unsafe { idemkit_last_error_message(small.as_mut_ptr(), small.len(), &mut needed) };
    assert_eq!(status, IdemkitStatus::BufferTooSmall);
    assert_eq!(needed, full.len() + 1);
    assert_eq!(small[0], 0);
    // Asking does not change the last error.
    assert_eq!(idemkit_last_error_kind(), IdemkitStatus::NullPointer);
    assert_eq!(last_message(), full);
}

#[test]
fn the_last_error_is_per_thread() {
    let mut store = null_mut();
    assert_eq!(
        unsafe { idemkit_store_open(null(), null(), &mut store) },
        IdemkitStatus::NullPointer
    );
    let other = std::thread::spawn(|| idemkit_last_error_kind())
        .join()
        .unwrap();
    assert_eq!(other, IdemkitStatus::Ok);
}

#[test]
fn structs_with_an_unknown_size_are_refused_and_the_known_size_is_accepted() {
    let size = std::mem::size_of::<IdemkitPolicy>();
    let mut policy = default_policy();
    assert_eq!(policy.struct_size, size);
    let name = c("sized");
    for (bad, says) in [
        (
            0,
            "is 0: fill the idemkit_policy with idemkit_policy_default",
        ),
        (size + 8, "compiled against a newer idemkit.h"),
        (size - 8, "not a size of idemkit_policy this library"),
    ] {
        policy.struct_size = bad;
        let mut out = std::ptr::dangling_mut::<IdemkitTool>();
        let status = unsafe { idemkit_tool_new(name.as_ptr(), &policy, 0, &mut out) };
        assert_eq!(status, IdemkitStatus::InvalidArgument, "size {bad}");
        assert!(out.is_null());
        let message = last_message();
        assert!(message.contains("`policy.struct_size`"), "{message}");
        assert!(message.contains(says), "{message}");
        let mut untouched = policy;
        let status = unsafe { idemkit_policy_default(&mut untouched, bad) };
        assert_eq!(status, IdemkitStatus::InvalidArgument, "size {bad}");
        assert_eq!(untouched.struct_size, bad, "nothing was written");
    }
    policy.struct_size = size;
    let tool = tool("sized", &policy);
    unsafe { idemkit_tool_free(tool) };

    let size = std::mem::size_of::<IdemkitStoreOptions>();
    let mut options = std::mem::MaybeUninit::<IdemkitStoreOptions>::uninit();
    assert_eq!(
        unsafe { idemkit_store_options_default(options.as_mut_ptr(), size) },
        IdemkitStatus::Ok
    );
    let mut options = unsafe { options.assume_init() };
    assert_eq!(options.struct_size, size);
    assert!(options.key_prefix.is_null() && options.table.is_null());
    let url = c("memory:");
    for bad in [0, size + 1] {
        options.struct_size = bad;
        let mut store = std::ptr::dangling_mut::<IdemkitStore>();
        let status = unsafe { idemkit_store_open(url.as_ptr(), &options, &mut store) };
        assert_eq!(status, IdemkitStatus::InvalidArgument, "size {bad}");
        assert!(store.is_null());
        assert!(last_message().contains("`options.struct_size`"));
    }
    options.struct_size = size;
    let mut store = null_mut();
    assert_eq!(
        unsafe { idemkit_store_open(url.as_ptr(), &options, &mut store) },
        IdemkitStatus::Ok
    );
    unsafe { idemkit_store_free(store) };
}
