//! The boundary's own behaviour: panics are caught, statuses match the library's error kinds.

use std::ffi::CStr;

use crate::boundary::{guard, Fault};
use crate::*;
use idemkit_core::error::ErrorKind;

fn last_message() -> String {
    let mut buf = [0 as std::ffi::c_char; 512];
    let mut needed = 0usize;
    let status = unsafe { idemkit_last_error_message(buf.as_mut_ptr(), buf.len(), &mut needed) };
    assert_eq!(status, IdemkitStatus::Ok);
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_panic_becomes_the_panic_status_and_the_last_error() {
    let status = guard(|| panic!("boom in the core"));
    assert_eq!(status, IdemkitStatus::Panic);
    assert_eq!(idemkit_last_error_kind(), IdemkitStatus::Panic);
    assert!(
        last_message().contains("boom in the core"),
        "{}",
        last_message()
    );
}

#[test]
fn a_panic_with_a_formatted_message_keeps_it() {
    let status = guard(|| panic!("index {} out of range", 7));
    assert_eq!(status, IdemkitStatus::Panic);
    assert!(last_message().contains("index 7 out of range"));
}

#[test]
fn a_fault_becomes_its_status_and_message() {
    let status = guard(|| Err(Fault::new(IdemkitStatus::FailFast, "nothing was run")));
    assert_eq!(status, IdemkitStatus::FailFast);
    assert_eq!(idemkit_last_error_kind(), IdemkitStatus::FailFast);
    assert_eq!(last_message(), "nothing was run");
}

#[test]
fn status_codes_are_the_error_kind_codes() {
    for kind in ErrorKind::ALL {
        assert_eq!(IdemkitStatus::from_kind(kind) as i32, kind.code(), "{kind}");
        let name = unsafe { CStr::from_ptr(idemkit_status_name(kind.code())) };
        assert_eq!(name.to_str().unwrap(), kind.name());
    }
    assert_eq!(IdemkitStatus::Ok as i32, 0);
}

#[test]
fn every_status_has_a_distinct_name() {
    let mut names: Vec<&str> = IdemkitStatus::ALL
        .iter()
        .map(|s| {
            unsafe { CStr::from_ptr(idemkit_status_name(*s as i32)) }
                .to_str()
                .unwrap()
        })
        .collect();
    assert!(!names.contains(&"unknown"));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), IdemkitStatus::ALL.len());
    let unknown = unsafe { CStr::from_ptr(idemkit_status_name(55)) };
    assert_eq!(unknown.to_str().unwrap(), "unknown");
}

#[test]
fn blocking_from_inside_the_runtime_is_a_panic_status_not_an_abort() {
    // `block_on` refuses to run on a runtime thread; the boundary turns that into a status.
    let status = idemkit_core::runtime::block_on(async {
        let mut store = std::ptr::null_mut();
        let url = std::ffi::CString::new("memory:").unwrap();
        unsafe { idemkit_store_open(url.as_ptr(), std::ptr::null(), &mut store) }
    });
    assert_eq!(status, IdemkitStatus::Panic);
}

#[test]
fn the_version_is_the_crate_version() {
    let version = unsafe { CStr::from_ptr(idemkit_version()) };
    assert_eq!(version.to_str().unwrap(), idemkit_core::VERSION);
}
