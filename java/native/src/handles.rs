//! Native objects as `jlong` handles: `Arc`/`Box` raw pointers, one destroy per type that
//! ignores 0, and a `NullPointerException` for a call on 0.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use idemkit::{Attempt, CallContext, Executor, RetryPolicy, Tool};
use jni::sys::jlong;

use crate::boundary::{Failure, Result};

/// A store as Java holds it: the executor over it (which shares the store and its event counts),
/// and the events waiting for Java listeners.
pub(crate) struct StoreHandle {
    pub(crate) executor: Executor,
    pub(crate) events: Arc<EventQueue>,
}

/// One event as Java listeners get it: kind (SPEC name), tool, key, tenant, detail.
pub(crate) type QueuedEvent = [Option<String>; 5];

/// Events for Java listeners. The core emits them on the thread of the call (or a settling
/// task); they wait here until a Java thread drains them after its native call returns, so no
/// Java code ever runs inside a native frame (JNI rules). Bounded: past [`EventQueue::CAPACITY`]
/// the oldest are dropped and counted.
#[derive(Default)]
pub(crate) struct EventQueue {
    subscribed: AtomicBool,
    queue: Mutex<VecDeque<QueuedEvent>>,
    pub(crate) dropped: AtomicU64,
}

impl EventQueue {
    pub(crate) const CAPACITY: usize = 4096;

    /// Starts queueing the executor's events (once; later calls do nothing).
    pub(crate) fn subscribe(self: &Arc<Self>, executor: &Executor) {
        if self.subscribed.swap(true, Ordering::AcqRel) {
            return;
        }
        let queue = Arc::downgrade(self);
        executor
            .events()
            .subscribe(Arc::new(move |event: &idemkit::Event<'_>| {
                let Some(queue) = queue.upgrade() else { return };
                let entry = [
                    Some(event.kind.name().to_owned()),
                    Some(event.tool.to_owned()),
                    event.key.map(|k| k.hex()),
                    event.tenant.map(str::to_owned),
                    event.detail.map(str::to_owned),
                ];
                let mut pending = queue.queue.lock().unwrap_or_else(|p| p.into_inner());
                if pending.len() >= Self::CAPACITY {
                    pending.pop_front();
                    queue.dropped.fetch_add(1, Ordering::Relaxed);
                }
                pending.push_back(entry);
            }));
    }

    /// Whether anything is waiting (a cheap check before a drain).
    pub(crate) fn is_subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Acquire)
    }

    /// Everything waiting, oldest first.
    pub(crate) fn drain(&self) -> Vec<QueuedEvent> {
        let mut pending = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        pending.drain(..).collect()
    }
}

/// A tool as Java holds it: the validated tool, and how its dispatcher retries failures.
pub(crate) struct ToolHandle {
    pub(crate) tool: Tool,
    pub(crate) retry: Option<RetryPolicy>,
}

/// One call between `begin` and its destroy: the attempt and the executor it runs on (a clone,
/// so closing the store while the call is in flight frees nothing under it).
pub(crate) struct AttemptHandle {
    pub(crate) executor: Executor,
    pub(crate) attempt: Mutex<Attempt>,
    /// After a report: the pause before running the body again (SPEC v1.1 rule 8), or -1.
    pub(crate) retry_after_ms: AtomicI64,
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

pub(crate) fn tool_into_handle(tool: ToolHandle) -> jlong {
    Box::into_raw(Box::new(tool)) as jlong
}

/// The tool behind `handle`; the dispatcher that owns it stays reachable during the call.
pub(crate) fn tool<'a>(handle: jlong) -> Result<&'a ToolHandle> {
    if handle == 0 {
        return Err(Failure::NullHandle("the tool"));
    }
    // SAFETY: made by `tool_into_handle`, destroyed only once its dispatcher is unreachable.
    Ok(unsafe { &*(handle as *const ToolHandle) })
}

pub(crate) fn tool_destroy(handle: jlong) {
    if handle != 0 {
        // SAFETY: the one destroy of a handle made by `tool_into_handle`.
        unsafe { drop(Box::from_raw(handle as *mut ToolHandle)) }
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
