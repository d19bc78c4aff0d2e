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
//! **Caller lanes.** A C or Java caller's thread is not a runtime thread: on the shared
//! runtime it would park in `block_on` while a worker does the socket I/O and wakes it, two
//! threads and several context switches per store round trip. [`block_on_caller`], the faces'
//! entry for the steps of a call, runs the step instead on a *lane*: one of a few small
//! single-threaded runtimes, borrowed for the step, whose `block_on` the caller's own thread
//! drives, socket I/O included. The Redis and PostgreSQL stores keep one connection per lane
//! (made on first use there, see `LaneLocal`), so a call costs the caller's own system calls
//! and no handoff. There are [`lanes`] of them per process (`IDEMKIT_CALLER_LANES`, default
//! [`DEFAULT_LANES`]; 0 turns them off); when every lane is busy a step runs on the shared
//! runtime as before, so the connections stay bounded: per store, one per lane plus the
//! store's own pool. Work a step leaves behind (settling that goes on after its caller left,
//! SPEC §8 rule 4, see [`spawn_detached`]) may need the lane's connections: the lane then
//! stays borrowed, driven by a thread of the shared runtime's blocking pool, until that work
//! is done. Lanes belong to the process like the runtime: a child made by `fork()` gets fresh
//! ones.
//!
//! Detection relies on `fork()` running the `pthread_atfork` handlers (as glibc's and musl's
//! `fork()` do); a process made by a raw `clone` system call is not noticed. Forking while
//! another thread of the parent is inside an idemkit call can leave a lock held in the child
//! (true of any library with threads): fork from a thread that is not using idemkit while no
//! call is running, as pre-fork servers do.

use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use tokio::runtime::Runtime;
use tokio::sync::Notify;

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
    /// The caller lanes, each built on first use.
    lanes: Box<[OnceLock<Lane>]>,
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
    &process_runtime().runtime
}

fn process_runtime() -> &'static ProcessRuntime {
    let generation = GENERATION.load(Ordering::SeqCst);
    let current = CURRENT.load(Ordering::Acquire);
    // SAFETY: a published ProcessRuntime is never freed.
    if let Some(current) = unsafe { current.as_ref() } {
        if current.generation == generation {
            return current;
        }
    }
    build_for_this_process()
}

#[cold]
fn build_for_this_process() -> &'static ProcessRuntime {
    register_fork_handler();
    let _building = BUILDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let generation = GENERATION.load(Ordering::SeqCst);
    let previous = CURRENT.load(Ordering::Acquire);
    // SAFETY: as in `runtime`.
    if let Some(current) = unsafe { previous.as_ref() } {
        if current.generation == generation {
            return current;
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
        lanes: (0..lanes()).map(|_| OnceLock::new()).collect(),
        _parent: previous,
    }));
    CURRENT.store(
        built as *const ProcessRuntime as *mut ProcessRuntime,
        Ordering::Release,
    );
    built
}

/// Runs `future` to completion on this process's runtime from a thread outside it.
///
/// Never call this from a runtime thread (tokio refuses to block there); JNI and C threads are
/// always outside it.
pub fn block_on<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// How many caller lanes a process has unless `IDEMKIT_CALLER_LANES` says otherwise.
pub const DEFAULT_LANES: usize = 8;

/// The most caller lanes `IDEMKIT_CALLER_LANES` may ask for.
pub const MAX_LANES: usize = 256;

/// How many caller lanes this process has (see the module documentation): the environment
/// variable `IDEMKIT_CALLER_LANES` read once (0 turns them off, at most [`MAX_LANES`]), else
/// [`DEFAULT_LANES`]. A value that is not a number is reported once in the log and ignored.
pub fn lanes() -> usize {
    static LANES: OnceLock<usize> = OnceLock::new();
    *LANES.get_or_init(|| match std::env::var("IDEMKIT_CALLER_LANES") {
        Err(_) => DEFAULT_LANES,
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if n <= MAX_LANES => n,
            _ => {
                log::warn!(
                    "idemkit: IDEMKIT_CALLER_LANES={text:?} is not a number from 0 to {MAX_LANES}; using {DEFAULT_LANES} caller lanes"
                );
                DEFAULT_LANES
            }
        },
    })
}

/// A caller lane: a single-threaded runtime that one caller at a time borrows and drives.
struct Lane {
    #[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
    /// Unique in the process and its forked children (never reused): what `LaneLocal` keys by.
    id: u64,
    runtime: Runtime,
    busy: AtomicBool,
    /// Detached tasks on this lane that have not finished yet.
    detached: AtomicUsize,
    /// Notified when `detached` drops to 0.
    settled: Notify,
}

static NEXT_LANE_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The lane this thread is driving now, if any.
    static ON_LANE: Cell<Option<&'static Lane>> = const { Cell::new(None) };
    /// The lane this thread borrowed last (its connections are the warmest for it).
    static PREFERRED_LANE: Cell<usize> = const { Cell::new(usize::MAX) };
}

static NEXT_PREFERRED: AtomicUsize = AtomicUsize::new(0);

impl ProcessRuntime {
    /// A free lane, borrowed, or None when there are none or all are busy.
    fn borrow_lane(&'static self) -> Option<&'static Lane> {
        let n = self.lanes.len();
        if n == 0 {
            return None;
        }
        let preferred = PREFERRED_LANE.with(|p| {
            let mut i = p.get();
            if i >= n {
                i = NEXT_PREFERRED.fetch_add(1, Ordering::Relaxed) % n;
                p.set(i);
            }
            i
        });
        for step in 0..n {
            let i = (preferred + step) % n;
            let lane = self.lanes[i].get_or_init(Lane::new);
            if lane
                .busy
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                if step != 0 {
                    PREFERRED_LANE.with(|p| p.set(i));
                }
                return Some(lane);
            }
        }
        None
    }
}

impl Lane {
    fn new() -> Lane {
        Lane {
            id: NEXT_LANE_ID.fetch_add(1, Ordering::Relaxed),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("idemkit could not start a caller lane's tokio runtime"),
            busy: AtomicBool::new(false),
            detached: AtomicUsize::new(0),
            settled: Notify::new(),
        }
    }

    /// Gives the lane back; if detached tasks of its own are still running, a thread of the
    /// shared runtime's blocking pool drives it until they are done, then gives it back.
    fn give_back(&'static self) {
        if self.detached.load(Ordering::Acquire) == 0 {
            self.busy.store(false, Ordering::Release);
            return;
        }
        runtime().spawn_blocking(move || {
            let on = OnLane::enter(self);
            self.runtime.block_on(async {
                loop {
                    let settled = self.settled.notified();
                    if self.detached.load(Ordering::Acquire) == 0 {
                        break;
                    }
                    settled.await;
                }
            });
            drop(on);
            // Any task detached meanwhile ran to its end in the loop above.
            self.busy.store(false, Ordering::Release);
        });
    }
}

/// Marks the current thread as driving a lane, and gives it back when dropped (also on a panic).
struct OnLane {
    previous: Option<&'static Lane>,
}

impl OnLane {
    fn enter(lane: &'static Lane) -> OnLane {
        OnLane {
            previous: ON_LANE.with(|on| on.replace(Some(lane))),
        }
    }
}

impl Drop for OnLane {
    fn drop(&mut self) {
        ON_LANE.with(|on| on.set(self.previous));
    }
}

/// A borrowed lane, given back when dropped.
struct Borrowed(&'static Lane);

impl Drop for Borrowed {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

/// Runs one step of a call (the executor's `advance` or `report`) to completion from a thread
/// outside every runtime, as the C and Java faces do: on a free caller lane, whose runtime this
/// thread drives itself (see the module documentation), else on the shared runtime like
/// [`block_on`].
///
/// A future that is ready at its first poll (the memory store's claims and replays) costs no
/// `block_on` at all. Never call this from a runtime thread (tokio refuses to block there).
pub fn block_on_caller<F: Future>(future: F) -> F::Output {
    let process = process_runtime();
    let Some(lane) = process.borrow_lane() else {
        return first_poll_then(&process.runtime, future);
    };
    let _borrowed = Borrowed(lane);
    let _on = OnLane::enter(lane);
    first_poll_then(&lane.runtime, future)
}

/// One poll inside `runtime`'s context, then (only if that poll is pending) its `block_on`.
fn first_poll_then<F: Future>(runtime: &Runtime, future: F) -> F::Output {
    let mut future = pin!(future);
    {
        let _context = runtime.enter();
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
    // Polling again (now with block_on's waker) re-registers whatever the first poll waited on.
    runtime.block_on(future)
}

fn noop_waker() -> Waker {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(|_| RAW, |_| {}, |_| {}, |_| {});
    const RAW: RawWaker = RawWaker::new(std::ptr::null(), &VTABLE);
    // SAFETY: every function of the vtable ignores the (null) data pointer.
    unsafe { Waker::from_raw(RAW) }
}

/// Runs `task` to its end whatever becomes of its caller (the executor's settling, SPEC §8
/// rule 4): on the current caller lane when there is one (the task may hold the lane's
/// connections; the lane stays driven until it ends, see the module documentation), else on
/// the current runtime, else on the shared one.
pub fn spawn_detached(task: impl Future<Output = ()> + Send + 'static) {
    if let Some(lane) = ON_LANE.with(Cell::get) {
        lane.detached.fetch_add(1, Ordering::AcqRel);
        lane.runtime.spawn(async move {
            struct Done(&'static Lane);
            impl Drop for Done {
                fn drop(&mut self) {
                    if self.0.detached.fetch_sub(1, Ordering::AcqRel) == 1 {
                        self.0.settled.notify_waiters();
                    }
                }
            }
            let _done = Done(lane);
            task.await;
        });
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(task);
        }
        Err(_) => {
            runtime().spawn(task);
        }
    }
}

#[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
/// The id of the caller lane this thread is driving, if any.
pub(crate) fn current_lane() -> Option<u64> {
    ON_LANE.with(Cell::get).map(|lane| lane.id)
}

#[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
/// One value per caller lane (a store's connection on that lane), made on first use there.
pub(crate) struct LaneLocal<T> {
    values: Mutex<HashMap<u64, T>>,
}

#[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
impl<T> Default for LaneLocal<T> {
    fn default() -> Self {
        LaneLocal {
            values: Mutex::new(HashMap::new()),
        }
    }
}

#[cfg_attr(not(any(feature = "redis", feature = "postgres")), allow(dead_code))]
impl<T: Clone> LaneLocal<T> {
    /// The value of the lane this thread is driving (made by `make` the first time), or None
    /// outside a lane.
    pub(crate) fn get(&self, make: impl FnOnce() -> T) -> Option<T> {
        let lane = current_lane()?;
        let mut values = self
            .values
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(values.entry(lane).or_insert_with(make).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    /// The two tests take all the lanes between them: one at a time.
    static LANES_IN_USE: Mutex<()> = Mutex::new(());

    #[test]
    fn work_a_step_leaves_behind_on_its_lane_ends_after_the_caller_returned() {
        let _lanes = LANES_IN_USE.lock().unwrap_or_else(|p| p.into_inner());
        let (done_tx, done_rx) = mpsc::channel();
        let lane = std::thread::spawn(move || {
            block_on_caller(async move {
                let lane = current_lane();
                assert!(lane.is_some(), "a caller thread borrows a lane");
                spawn_detached(async move {
                    // A timer of the lane: it fires only while something drives the lane.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    done_tx.send(current_lane()).unwrap();
                });
                lane
            })
        })
        .join()
        .unwrap();
        // Nobody calls again: the lane is driven by itself until its work is done.
        let ran_on = done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the detached work ran to its end");
        assert_eq!(ran_on, lane, "on the lane it was left on");
    }

    #[test]
    fn steps_beyond_the_lanes_run_on_the_shared_runtime() {
        let _lanes = LANES_IN_USE.lock().unwrap_or_else(|p| p.into_inner());
        let lanes = lanes();
        let threads = lanes + 3;
        // Every step waits until all are running at once.
        let all_in = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let all_in = all_in.clone();
                std::thread::spawn(move || {
                    block_on_caller(async move {
                        let lane = current_lane();
                        let on_shared = tokio::runtime::Handle::current().runtime_flavor()
                            == tokio::runtime::RuntimeFlavor::MultiThread;
                        // Blocking is fine here: each step is its own thread's.
                        all_in.wait();
                        (lane, on_shared)
                    })
                })
            })
            .collect();
        let steps: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let mut on_lanes: Vec<u64> = steps.iter().filter_map(|(lane, _)| *lane).collect();
        on_lanes.sort();
        on_lanes.dedup();
        // Each of `lanes` steps had a lane of its own (a lane the other test left driving its
        // work could still be busy: at most `lanes`), the others ran on the shared runtime.
        assert_eq!(
            on_lanes.len(),
            steps.iter().filter(|(lane, _)| lane.is_some()).count()
        );
        assert!(on_lanes.len() <= lanes);
        for (lane, on_shared) in &steps {
            assert_eq!(lane.is_none(), *on_shared);
        }
        assert!(steps.iter().filter(|(_, shared)| *shared).count() >= 3);
    }
}
