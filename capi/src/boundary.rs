//! The boundary itself: status codes, the thread's last error, panic catching, and the
//! conversions of C strings and buffers.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use idemkit_core::error::{Error, ErrorKind};

/// A `&'static CStr` from a literal (`c"..."` literals need Rust 1.77; the crate supports 1.75).
macro_rules! cstr {
    ($text:expr) => {
        match CStr::from_bytes_with_nul(concat!($text, "\0").as_bytes()) {
            Ok(text) => text,
            Err(_) => panic!("a literal without NUL inside"),
        }
    };
}

/// What an idemkit function answers. `IDEMKIT_STATUS_OK` is 0; codes 1 to 10 are the stable
/// error kinds of the library (the same codes as Java's `IdempotencyException.kind()`);
/// codes from 100 are refusals at the C boundary itself.
///
/// After any status other than `IDEMKIT_STATUS_OK`, `idemkit_last_error_message` gives a
/// message that says what went wrong and what to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum IdemkitStatus {
    /// Success.
    Ok = 0,
    /// The key could not be derived from the input (not JSON, a duplicate member, a lone
    /// surrogate, a blank or NULL explicit key, a missing key argument...). Nothing ran.
    InvalidKey = 1,
    /// A policy, tool or store was configured wrongly (zero TTL or lease, a timeout not shorter
    /// than the lease, an unknown or disabled store URL scheme...). Raised when it is built.
    Configuration = 2,
    /// A remembered failure. `idemkit_begin` reports a remembered failure as the answer
    /// `IDEMKIT_ANSWER_CACHED_FAILURE` with status OK, so it never returns this code; it is
    /// here so that every error kind of the library has its code.
    CachedFailure = 3,
    /// A repeat under `FAIL_FAST`: the key is remembered or in progress. Nothing ran.
    FailFast = 4,
    /// The key was still in progress in another call when this call's deadline came. Nothing ran.
    InProgress = 5,
    /// The key's claim was abandoned (its lease ended without an outcome): the effect may or may
    /// not have happened, so an operator has to resolve the record. Nothing ran.
    Indeterminate = 6,
    /// The store could not be reached or answered an error. Nothing ran.
    StoreUnavailable = 7,
    /// The remembered result was larger than the store keeps; the first caller got it, repeats
    /// get this. Nothing ran.
    OutcomeTooLarge = 8,
    /// A body ran past its deadline. The C face runs no body, so it never returns this code.
    Timeout = 9,
    /// A bug inside idemkit (a broken invariant).
    Internal = 10,
    /// A repeat of a key with another payload than the call that made its record (SPEC v1.1
    /// rule 9; HTTP's 422). Nothing ran: a new request needs a new key.
    PayloadMismatch = 11,
    /// A pointer argument that must not be NULL was NULL. Nothing was done.
    NullPointer = 100,
    /// A text argument is not valid UTF-8. Nothing was done.
    InvalidUtf8 = 101,
    /// An output buffer is too small; the size needed is reported where the function has a
    /// `needed` out-parameter. Nothing else was done.
    BufferTooSmall = 102,
    /// An argument is not acceptable: a result that is not one JSON value, an unknown enum
    /// code, a call handle that is already finished or that another process began (before
    /// `fork()`). Nothing was done.
    InvalidArgument = 103,
    /// idemkit panicked; the panic was caught and the process goes on. Please report it.
    Panic = 104,
}

impl IdemkitStatus {
    /// The status for an error kind of the library (the codes are the same).
    pub fn from_kind(kind: ErrorKind) -> IdemkitStatus {
        match kind {
            ErrorKind::InvalidKey => IdemkitStatus::InvalidKey,
            ErrorKind::Configuration => IdemkitStatus::Configuration,
            ErrorKind::CachedFailure => IdemkitStatus::CachedFailure,
            ErrorKind::FailFast => IdemkitStatus::FailFast,
            ErrorKind::InProgress => IdemkitStatus::InProgress,
            ErrorKind::Indeterminate => IdemkitStatus::Indeterminate,
            ErrorKind::StoreUnavailable => IdemkitStatus::StoreUnavailable,
            ErrorKind::OutcomeTooLarge => IdemkitStatus::OutcomeTooLarge,
            ErrorKind::Timeout => IdemkitStatus::Timeout,
            ErrorKind::Internal => IdemkitStatus::Internal,
            ErrorKind::PayloadMismatch => IdemkitStatus::PayloadMismatch,
            // A kind newer than this library's statuses: an internal error, never a silent OK.
            _ => IdemkitStatus::Internal,
        }
    }

    /// Every status, in code order.
    pub const ALL: [IdemkitStatus; 17] = [
        IdemkitStatus::Ok,
        IdemkitStatus::InvalidKey,
        IdemkitStatus::Configuration,
        IdemkitStatus::CachedFailure,
        IdemkitStatus::FailFast,
        IdemkitStatus::InProgress,
        IdemkitStatus::Indeterminate,
        IdemkitStatus::StoreUnavailable,
        IdemkitStatus::OutcomeTooLarge,
        IdemkitStatus::Timeout,
        IdemkitStatus::Internal,
        IdemkitStatus::PayloadMismatch,
        IdemkitStatus::NullPointer,
        IdemkitStatus::InvalidUtf8,
        IdemkitStatus::BufferTooSmall,
        IdemkitStatus::InvalidArgument,
        IdemkitStatus::Panic,
    ];

    /// The stable snake_case name, NUL-terminated: an error kind's name (`invalid_key`, ...)
    /// or `ok`, `null_pointer`, `invalid_utf8`, `buffer_too_small`, `invalid_argument`, `panic`.
    fn name(self) -> &'static CStr {
        match self {
            IdemkitStatus::Ok => cstr!("ok"),
            IdemkitStatus::InvalidKey => cstr!("invalid_key"),
            IdemkitStatus::Configuration => cstr!("configuration"),
            IdemkitStatus::CachedFailure => cstr!("cached_failure"),
            IdemkitStatus::FailFast => cstr!("fail_fast"),
            IdemkitStatus::InProgress => cstr!("in_progress"),
            IdemkitStatus::Indeterminate => cstr!("indeterminate"),
            IdemkitStatus::StoreUnavailable => cstr!("store_unavailable"),
            IdemkitStatus::OutcomeTooLarge => cstr!("outcome_too_large"),
            IdemkitStatus::Timeout => cstr!("timeout"),
            IdemkitStatus::Internal => cstr!("internal"),
            IdemkitStatus::PayloadMismatch => cstr!("payload_mismatch"),
            IdemkitStatus::NullPointer => cstr!("null_pointer"),
            IdemkitStatus::InvalidUtf8 => cstr!("invalid_utf8"),
            IdemkitStatus::BufferTooSmall => cstr!("buffer_too_small"),
            IdemkitStatus::InvalidArgument => cstr!("invalid_argument"),
            IdemkitStatus::Panic => cstr!("panic"),
        }
    }
}

/// A refusal on its way out of the boundary: the status and the message for the last error.
#[derive(Debug)]
pub(crate) struct Fault {
    pub(crate) status: IdemkitStatus,
    pub(crate) message: String,
}

impl Fault {
    pub(crate) fn new(status: IdemkitStatus, message: impl Into<String>) -> Fault {
        Fault {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &str) -> Fault {
        Fault::new(
            IdemkitStatus::NullPointer,
            format!("`{what}` is NULL; pass a valid pointer"),
        )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Fault {
        Fault::new(IdemkitStatus::InvalidArgument, message)
    }

    /// The same fault, its message preceded by `context`.
    pub(crate) fn context(mut self, context: &str) -> Fault {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl From<Error> for Fault {
    fn from(error: Error) -> Fault {
        // The core decided what is wrong; C names the settings as its structs do.
        let message = error.render(c_name);
        Fault::new(IdemkitStatus::from_kind(error.kind()), message)
    }
}

/// A setting as the C structs name it (`struct idemkit_policy`'s fields).
fn c_name(setting: idemkit_core::error::Setting) -> &'static str {
    use idemkit_core::error::Setting;
    match setting {
        Setting::Ttl => "ttl_seconds",
        Setting::Lease => "lease_seconds",
        Setting::Timeout => "timeout_ms",
        Setting::KeyArguments => "key_arguments",
        Setting::CacheFailures => "cache_failures",
        Setting::Effect => "effect",
        Setting::NoEffectErrors => "no_effect_errors",
        Setting::PermanentErrors => "permanent_errors",
        Setting::MaxAttempts => "retry_max_attempts",
        Setting::InitialBackoff => "retry_initial_backoff_ms",
        Setting::MaxBackoff => "retry_max_backoff_ms",
        Setting::RetryOn => "retry_on",
        other => other.rust_name(),
    }
}

thread_local! {
    static LAST_ERROR: RefCell<Option<(IdemkitStatus, CString)>> = const { RefCell::new(None) };
}

/// Keeps `status` and `message` as this thread's last error.
pub(crate) fn set_last_error(status: IdemkitStatus, message: &str) {
    let message = c_string_lossy(message);
    // `try_with`: during thread teardown the slot may be gone; the status still reaches the caller.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some((status, message));
        }
    });
}

/// Runs one exported function's body: a panic becomes `IDEMKIT_STATUS_PANIC`, a fault its
/// status; both are kept as the thread's last error.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Fault>) -> IdemkitStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => IdemkitStatus::Ok,
        Ok(Err(fault)) => {
            set_last_error(fault.status, &fault.message);
            fault.status
        }
        Err(payload) => {
            let message = format!(
                "idemkit panicked: {}; the panic was caught, please report it",
                panic_message(payload.as_ref())
            );
            // A payload whose destructor panics again must not unwind into C.
            if catch_unwind(AssertUnwindSafe(|| drop(payload))).is_err() {
                // The second payload is leaked on purpose: dropping it could panic once more.
            }
            set_last_error(IdemkitStatus::Panic, &message);
            IdemkitStatus::Panic
        }
    }
}

/// Runs the body of a function that answers nothing (the `_free` functions): a panic is
/// swallowed after being kept as the thread's last error.
pub(crate) fn guard_void(body: impl FnOnce()) {
    let _ = guard(|| {
        body();
        Ok(())
    });
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// `text` as a C string; an interior NUL (which C cannot carry) becomes U+FFFD.
pub(crate) fn c_string_lossy(text: &str) -> CString {
    CString::new(text)
        .unwrap_or_else(|_| CString::new(text.replace('\0', "\u{FFFD}")).expect("no NUL is left"))
}

/// A text argument that must be present.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn required_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Fault> {
    optional_str(ptr, what)?.ok_or_else(|| Fault::null(what))
}

/// A text argument that may be NULL (absent).
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn optional_str<'a>(
    ptr: *const c_char,
    what: &str,
) -> Result<Option<&'a str>, Fault> {
    if ptr.is_null() {
        return Ok(None);
    }
    CStr::from_ptr(ptr).to_str().map(Some).map_err(|e| {
        Fault::new(
            IdemkitStatus::InvalidUtf8,
            format!(
                "`{what}` is not valid UTF-8 (bad byte at offset {}); pass UTF-8 text",
                e.valid_up_to()
            ),
        )
    })
}

/// An array of `count` text arguments (`ptr` may be NULL when `count` is 0).
///
/// # Safety
/// `ptr` is NULL or points to `count` pointers, each NULL or a NUL-terminated string.
pub(crate) unsafe fn str_array(
    ptr: *const *const c_char,
    count: usize,
    what: &str,
) -> Result<Vec<String>, Fault> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(Fault::null(what));
    }
    std::slice::from_raw_parts(ptr, count)
        .iter()
        .enumerate()
        .map(|(i, &item)| required_str(item, &format!("{what}[{i}]")).map(str::to_owned))
        .collect()
}

/// Writes `text` and a NUL into `buf` (`len` bytes) and the size it needs into `needed`.
///
/// `buf = NULL` with `len = 0` only asks for the size. When `buf` is too small, it gets an
/// empty string (when `len > 0`) and the answer is `BufferTooSmall`.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes; `needed` is NULL or writable.
pub(crate) unsafe fn copy_out(
    text: &str,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
    what: &str,
) -> Result<(), Fault> {
    let size = text.len() + 1;
    if !needed.is_null() {
        *needed = size;
    }
    if buf.is_null() {
        return if len == 0 {
            Ok(())
        } else {
            Err(Fault::null(what))
        };
    }
    if len < size {
        if len > 0 {
            *buf = 0;
        }
        return Err(Fault::new(
            IdemkitStatus::BufferTooSmall,
            format!("`{what}` holds {len} bytes but {size} are needed (the text and its NUL)"),
        ));
    }
    std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
    *buf.add(text.len()) = 0;
    Ok(())
}

/// Checks the `struct_size` of a struct the caller fills in (`idemkit_policy`,
/// `idemkit_store_options`): it must be a size this library knows for that struct, i.e. the
/// `sizeof` of the struct in some version of the header up to this library's own. Structs only
/// grow at their end, so a known smaller size is an older program's struct; today there is one.
/// `what` names the value in messages (`policy.struct_size`), `c_type` the struct and `init`
/// the call that sets the size.
pub(crate) fn check_struct_size(
    size: usize,
    known: &[usize],
    what: &str,
    c_type: &str,
    init: &str,
) -> Result<(), Fault> {
    if known.contains(&size) {
        return Ok(());
    }
    let largest = known.iter().copied().max().unwrap_or(0);
    let version = env!("CARGO_PKG_VERSION");
    let message = if size == 0 {
        format!("`{what}` is 0: fill the {c_type} with {init} before setting its fields")
    } else if size > largest {
        format!(
            "`{what}` is {size}, but this library (idemkit {version}) knows {c_type} of at most {largest} bytes: the program was compiled against a newer idemkit.h than the library it runs with; run it with the library of that header"
        )
    } else {
        format!(
            "`{what}` is {size}, not a size of {c_type} this library (idemkit {version}) knows ({}); set it with {init}",
            known
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(Fault::invalid(message))
}

/// A string the library allocated, handed to the caller; free it with `idemkit_string_free`.
pub(crate) fn give_string(text: &str) -> *mut c_char {
    c_string_lossy(text).into_raw()
}

/// The status of the most recent failed idemkit call on this thread, or `IDEMKIT_STATUS_OK` if
/// there was none. Statuses are kept per thread; a later success does not clear it, and neither
/// this function nor `idemkit_last_error_message` changes it.
#[no_mangle]
pub extern "C" fn idemkit_last_error_kind() -> IdemkitStatus {
    catch_unwind(|| {
        LAST_ERROR
            .try_with(|slot| slot.borrow().as_ref().map(|(status, _)| *status))
            .ok()
            .flatten()
            .unwrap_or(IdemkitStatus::Ok)
    })
    .unwrap_or(IdemkitStatus::Panic)
}

/// Copies the message of the most recent failed idemkit call on this thread (an empty string
/// if there was none) into `buf`, NUL-terminated.
///
/// `*needed` (when `needed` is not NULL) gets the size the message needs, NUL included. When
/// `len` is smaller, `buf` gets an empty string (if `len > 0`) and the answer is
/// `IDEMKIT_STATUS_BUFFER_TOO_SMALL`; call again with a larger buffer. `buf = NULL` with
/// `len = 0` only asks for the size (and answers OK). The caller owns `buf`. The last error is
/// not changed, whatever this function answers.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes; `needed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn idemkit_last_error_message(
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> IdemkitStatus {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let message = LAST_ERROR
            .try_with(|slot| {
                slot.borrow()
                    .as_ref()
                    .map(|(_, message)| message.to_string_lossy().into_owned())
            })
            .ok()
            .flatten()
            .unwrap_or_default();
        // Copy without recording a new last error: the message must survive being asked for.
        match copy_out(&message, buf, len, needed, "buf") {
            Ok(()) => IdemkitStatus::Ok,
            Err(fault) => fault.status,
        }
    }));
    result.unwrap_or(IdemkitStatus::Panic)
}

/// The stable name of a status code (`"ok"`, `"invalid_key"`, `"null_pointer"`, ...), or
/// `"unknown"` for a code that is not an `idemkit_status`. The string is static: do not free it.
#[no_mangle]
pub extern "C" fn idemkit_status_name(status: i32) -> *const c_char {
    catch_unwind(|| {
        IdemkitStatus::ALL
            .iter()
            .find(|s| **s as i32 == status)
            .map_or(cstr!("unknown"), |s| s.name())
    })
    .unwrap_or(cstr!("unknown"))
    .as_ptr()
}

/// The library's version (`"0.1.0"`). The string is static: do not free it.
#[no_mangle]
pub extern "C" fn idemkit_version() -> *const c_char {
    // A constant: evaluated when the library is compiled, so nothing here can panic.
    const VERSION: &CStr = cstr!(env!("CARGO_PKG_VERSION"));
    VERSION.as_ptr()
}

/// Frees a string the library allocated and handed out (`result_json`, `error_type` and
/// `error_message` of an `idemkit_begin_result`). NULL is accepted and ignored. Never pass a
/// string the library did not allocate, and never free one twice.
///
/// # Safety
/// `string` is NULL or a string the library handed out and that was not freed yet.
#[no_mangle]
pub unsafe extern "C" fn idemkit_string_free(string: *mut c_char) {
    guard_void(|| {
        if !string.is_null() {
            drop(CString::from_raw(string));
        }
    })
}
