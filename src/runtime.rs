//! The library's one tokio runtime, for faces (JNI, C, CLI) whose callers are not async.

use std::future::Future;

use once_cell::sync::Lazy;
use tokio::runtime::Runtime;

static RUNTIME: Lazy<Runtime> = Lazy::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("idemkit")
        .enable_all()
        .build()
        .expect("idemkit could not start its tokio runtime")
});

/// The shared runtime (started on first use).
pub fn runtime() -> &'static Runtime {
    &RUNTIME
}

/// Runs `future` to completion on the shared runtime from a thread outside it.
///
/// Never call this from a runtime thread (tokio refuses to block there); JNI and C threads are
/// always outside it.
pub fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.block_on(future)
}
