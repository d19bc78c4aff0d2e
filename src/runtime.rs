//! The library's tokio runtime, one per process, for faces (JNI, C, CLI) whose callers are not
//! async.
//!
//! **fork().** A child made by `fork()` gets a copy of the parent's memory but only the thread
//! that called `fork()`: the parent's runtime is there, but none of its worker threads, so
//! nothing would ever drive its timers or sockets and a `block_on` on it would wait forever. So
//! the runtime is per process: a `pthread_atfork` handler (registered when the first runtime is
//! built) counts forks, and the first use in a child builds a fresh runtime. The parent's
//! runtime is left behind in the child on purpose, never dropped: dropping it would wait for
//! workers that do not exist there, and could write to the parent's wake-up file descriptors,
//! which the child shares. Things bound to the parent's runtime (connections, spawned tasks)
//! must not be used in the child either; [`process_generation`] tells a face that it is in
//! another process than the one that made such a thing.
//!
//! Detection relies on `fork()` running the `pthread_atfork` handlers (as glibc's and musl's
//! `fork()` do); a process made by a raw `clone` system call is not noticed. Forking while
//! another thread of the parent is inside an idemkit call can leave a lock held in the child
//! (true of any library with threads): fork from a thread that is not using idemkit while no
//! call is running, as pre-fork servers do.

use std::future::Future;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use tokio::runtime::Runtime;

/// How many `fork()`s separate this process from the one that first used idemkit (which
/// registered the handler): 0 there, one more in each child (set by the `pthread_atfork` child
/// handler).
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// This process's runtime, or NULL before the first use.
static CURRENT: AtomicPtr<ProcessRuntime> = AtomicPtr::new(std::ptr::null_mut());

/// Serialises building a runtime (first use, and first use after a fork).
static BUILDING: Mutex<()> = Mutex::new(());

static REGISTER_FORK_HANDLER: Once = Once::new();

/// A runtime and the process (generation) it belongs to. Never freed.
struct ProcessRuntime {
    runtime: Runtime,
    generation: u64,
    /// The runtime of the process this one was forked from, left behind on purpose (see the
    /// module documentation); kept reachable so that leak checkers see it as still in use.
    _parent: *const ProcessRuntime,
}

#[cfg(unix)]
extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> std::ffi::c_int;
}

/// Runs in the child right after `fork()`: only async-signal-safe work (one atomic add).
#[cfg(unix)]
unsafe extern "C" fn forked_child() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

fn register_fork_handler() {
    REGISTER_FORK_HANDLER.call_once(|| {
        #[cfg(unix)]
        {
            // SAFETY: the handler is a plain function that only touches an atomic.
            let status = unsafe { pthread_atfork(None, None, Some(forked_child)) };
            if status != 0 {
                log::warn!(
                    "idemkit: pthread_atfork failed ({status}); a child made by fork() would not get its own runtime"
                );
            }
        }
    });
}

/// Identifies this process among those forked from one another: it changes in a child made by
/// `fork()` (once the library has been used). Cheap (one atomic load); faces compare it with the
/// generation a connection-holding handle was made in.
pub fn process_generation() -> u64 {
    register_fork_handler();
    GENERATION.load(Ordering::SeqCst)
}

/// This process's runtime (started on first use, and again on first use in a child made by
/// `fork()`).
pub fn runtime() -> &'static Runtime {
    let generation = GENERATION.load(Ordering::SeqCst);
    let current = CURRENT.load(Ordering::Acquire);
    // SAFETY: a published ProcessRuntime is never freed.
    if let Some(current) = unsafe { current.as_ref() } {
        if current.generation == generation {
            return &current.runtime;
        }
    }
    build_for_this_process()
}

#[cold]
fn build_for_this_process() -> &'static Runtime {
    register_fork_handler();
    let _building = BUILDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let generation = GENERATION.load(Ordering::SeqCst);
    let previous = CURRENT.load(Ordering::Acquire);
    // SAFETY: as in `runtime`.
    if let Some(current) = unsafe { previous.as_ref() } {
        if current.generation == generation {
            return &current.runtime;
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("idemkit")
        .enable_all()
        .build()
        .expect("idemkit could not start its tokio runtime");
    let built: &'static ProcessRuntime = Box::leak(Box::new(ProcessRuntime {
        runtime,
        generation,
        _parent: previous,
    }));
    CURRENT.store(
        built as *const ProcessRuntime as *mut ProcessRuntime,
        Ordering::Release,
    );
    &built.runtime
}

/// Runs `future` to completion on this process's runtime from a thread outside it.
///
/// Never call this from a runtime thread (tokio refuses to block there); JNI and C threads are
/// always outside it.
pub fn block_on<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}
