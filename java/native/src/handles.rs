//! Native objects as `jlong` handles: `Arc`/`Box` raw pointers, one destroy per type that
//! ignores 0, and a `NullPointerException` for a call on 0.

use std::sync::{Arc, Mutex};

use idemkit::{Attempt, CallContext, Executor, Tool};
use jni::sys::jlong;

use crate::boundary::{Failure, Result};

/// A store as Java holds it: the executor over it (which shares the store and its event counts).
pub(crate) struct StoreHandle {
    pub(crate) executor: Executor,
}

/// One call between `begin` and its destroy: the attempt and the executor it runs on (a clone,
/// so closing the store while the call is in flight frees nothing under it).
pub(crate) struct AttemptHandle {
    pub(crate) executor: Executor,
    pub(crate) attempt: Mutex<Attempt>,
}

pub(crate) fn store_into_handle(store: Arc<StoreHandle>) -> jlong {
    Arc::into_raw(store) as jlong
}

/// A new reference to the store behind `handle`, valid for as long as the caller keeps it.
///
/// The Java side never destroys a store handle while a call that reads it is in flight (its
/// close waits for in-flight calls to leave), and every call holds its own `Arc` clone.
pub(crate) fn store(handle: jlong) -> Result<Arc<StoreHandle>> {
    if handle == 0 {
        return Err(Failure::NullHandle("the idempotency store"));
    }
    let ptr = handle as *const StoreHandle;
    // SAFETY: `handle` came from `store_into_handle` and has not been destroyed (see above).
    unsafe {
        Arc::increment_strong_count(ptr);
        Ok(Arc::from_raw(ptr))
    }
}

pub(crate) fn store_destroy(handle: jlong) {
    if handle != 0 {
        // SAFETY: the one destroy of a handle made by `store_into_handle`.
        unsafe { drop(Arc::from_raw(handle as *const StoreHandle)) }
    }
}

pub(crate) fn tool_into_handle(tool: Tool) -> jlong {
    Box::into_raw(Box::new(tool)) as jlong
}

/// The tool behind `handle`; the dispatcher that owns it stays reachable during the call.
pub(crate) fn tool<'a>(handle: jlong) -> Result<&'a Tool> {
    if handle == 0 {
        return Err(Failure::NullHandle("the tool"));
    }
    // SAFETY: made by `tool_into_handle`, destroyed only once its dispatcher is unreachable.
    Ok(unsafe { &*(handle as *const Tool) })
}

pub(crate) fn tool_destroy(handle: jlong) {
    if handle != 0 {
        // SAFETY: the one destroy of a handle made by `tool_into_handle`.
        unsafe { drop(Box::from_raw(handle as *mut Tool)) }
    }
}

pub(crate) fn attempt_into_handle(attempt: AttemptHandle) -> jlong {
    Box::into_raw(Box::new(attempt)) as jlong
}

/// The call behind `handle`; only the thread making the call uses it, until its destroy.
pub(crate) fn attempt<'a>(handle: jlong) -> Result<&'a AttemptHandle> {
    if handle == 0 {
        return Err(Failure::NullHandle("the call"));
    }
    // SAFETY: made by `attempt_into_handle`; the Java call destroys it once, in a finally block.
    Ok(unsafe { &*(handle as *const AttemptHandle) })
}

pub(crate) fn attempt_destroy(handle: jlong) {
    if handle != 0 {
        // SAFETY: the one destroy of a handle made by `attempt_into_handle`.
        unsafe { drop(Box::from_raw(handle as *mut AttemptHandle)) }
    }
}

pub(crate) fn context_into_handle(context: CallContext) -> jlong {
    Box::into_raw(Box::new(context)) as jlong
}

/// A dispatcher view's tenant and run; the view stays reachable during the call.
pub(crate) fn context<'a>(handle: jlong) -> Result<&'a CallContext> {
    if handle == 0 {
        return Err(Failure::NullHandle("the call context"));
    }
    // SAFETY: made by `context_into_handle`, destroyed only once its view is unreachable.
    Ok(unsafe { &*(handle as *const CallContext) })
}

pub(crate) fn context_destroy(handle: jlong) {
    if handle != 0 {
        // SAFETY: the one destroy of a handle made by `context_into_handle`.
        unsafe { drop(Box::from_raw(handle as *mut CallContext)) }
    }
}
