//! The C ABI of idemkit (`libidemkit.so`, `libidemkit.a`): status codes, handles and
//! out-parameters over the core's executor. This crate is the C library only; Rust programs
//! depend on the `idemkit` crate itself.
//!
//! Every exported function catches panics and answers with an [`IdemkitStatus`]; none aborts
//! the process. Null pointers and text that is not UTF-8 are refused with a status. The
//! header `include/idemkit.h` is generated from this crate by cbindgen; the doc comments
//! here are its documentation.
//!
//! The call protocol is two-step, so a C body never runs inside a native frame:
//! [`idemkit_begin`] claims the key and answers *execute*, *cached success* or *cached
//! failure* (or an error status); after *execute* the caller runs its body and reports it
//! with [`idemkit_complete`] or [`idemkit_fail`].

mod boundary;
mod call;
mod key;
mod store;
mod tool;

pub use boundary::{
    idemkit_last_error_kind, idemkit_last_error_message, idemkit_status_name, idemkit_string_free,
    idemkit_version, IdemkitStatus,
};
pub use call::{
    idemkit_begin, idemkit_begin_result_clear, idemkit_begin_with_payload, idemkit_call_free,
    idemkit_call_key, idemkit_call_retry, idemkit_call_retry_pause, idemkit_complete, idemkit_fail,
    idemkit_fail_as, idemkit_release_unrun, IdemkitAnswer, IdemkitBeginResult, IdemkitCall,
    IdemkitFailureClass, IdemkitRecording,
};
pub use key::{idemkit_derive_key, IdemkitKeyRequest};
pub use store::{
    idemkit_store_free, idemkit_store_open, idemkit_store_options_default, IdemkitStore,
    IdemkitStoreOptions,
};
pub use tool::{
    idemkit_policy_default, idemkit_tool_free, idemkit_tool_new, IdemkitEffect, IdemkitOnCacheHit,
    IdemkitPolicy, IdemkitStrategy, IdemkitTool,
};

/// The size of a buffer that holds any key text the library writes: 64 hex characters (or a
/// 36-character UUID) and the terminating NUL.
pub const KEY_BUFFER_LEN: usize = 65;

#[cfg(test)]
mod tests;
