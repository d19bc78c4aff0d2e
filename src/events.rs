//! Every answer the executor gives is an event a host can subscribe to or count.
//!
//! With the cargo feature `metrics`, each event also increments the counter
//! `idemkit_events_total` (labels `event`: the SPEC name, `tool`: the tool or action name)
//! through the `metrics` facade; with `tracing`, each is also a `tracing` event at DEBUG level
//! (target `idemkit::events`, fields `event`, `tool`, `tenant`, `detail`), inside the call's span
//! when there is one (see `Executor::call`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::key::Key;

/// The kinds of event (SPEC §3). New kinds may be added, so a `match` needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum EventKind {
    /// The key was claimed: the body runs.
    Acquired = 0,
    /// A remembered outcome answered the call: the body did not run.
    Deduplicated = 1,
    /// The call waited for another caller's claim (followed by what it then got).
    Waited = 2,
    /// The call's deadline passed while it waited.
    WaitTimedOut = 3,
    /// `FAIL_FAST` refused a repeat.
    FailedFast = 4,
    /// The outcome is unknown: an abandoned claim was found, or an `EFFECTFUL` body failed and
    /// its failure is held (SPEC v1.1 rule 7).
    Indeterminate = 5,
    /// A failed body's claim was released so that a retry runs again.
    Released = 6,
    /// The store could not be reached or answered an error.
    StoreError = 7,
    /// A succeeded body's outcome could not be recorded; the claim will become abandoned.
    RecordFailed = 8,
    /// A failed call is run again after a pause, under the same key, by its retry policy
    /// (SPEC v1.1 rule 8).
    Retried = 9,
    /// A repeat of a used key came with another payload and was refused; nothing ran (SPEC v1.1
    /// rule 9, v1.2 §9 rule 1).
    PayloadMismatch = 10,
}

impl EventKind {
    /// Every kind, in code order.
    pub const ALL: [EventKind; 11] = [
        EventKind::Acquired,
        EventKind::Deduplicated,
        EventKind::Waited,
        EventKind::WaitTimedOut,
        EventKind::FailedFast,
        EventKind::Indeterminate,
        EventKind::Released,
        EventKind::StoreError,
        EventKind::RecordFailed,
        EventKind::Retried,
        EventKind::PayloadMismatch,
    ];

    /// The SPEC name (`acquired`, `wait_timed_out`, ...).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Acquired => "acquired",
            EventKind::Deduplicated => "deduplicated",
            EventKind::Waited => "waited",
            EventKind::WaitTimedOut => "wait_timed_out",
            EventKind::FailedFast => "failed_fast",
            EventKind::Indeterminate => "indeterminate",
            EventKind::Released => "released",
            EventKind::StoreError => "store_error",
            EventKind::RecordFailed => "record_failed",
            EventKind::Retried => "retried",
            EventKind::PayloadMismatch => "payload_mismatch",
        }
    }
}

/// One event, borrowed for the duration of the listener call. New fields may be added.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Event<'a> {
    /// What happened.
    pub kind: EventKind,
    /// The tool or action name.
    pub tool: &'a str,
    /// The call's key (`None` for strategies that keep no record).
    pub key: Option<&'a Key>,
    /// The call's tenant, in NFC.
    pub tenant: Option<&'a str>,
    /// For `store_error` and `record_failed`: what went wrong. For `waited`: how long the call
    /// waited for another holder, in whole milliseconds (decimal digits).
    pub detail: Option<&'a str>,
}

/// A subscriber to events. Called on the thread that made the call; keep it quick.
pub type Listener = Arc<dyn Fn(&Event<'_>) + Send + Sync>;

/// Per-kind counters on their own cache lines; threads add to different stripes so that calls
/// on different keys never contend on a shared counter.
#[repr(align(128))]
#[derive(Default)]
struct Stripe([AtomicU64; EventKind::ALL.len()]);

const STRIPES: usize = 8;

fn stripe_index() -> usize {
    use std::cell::Cell;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|i| {
        if i.get() == usize::MAX {
            i.set(NEXT.fetch_add(1, Ordering::Relaxed) as usize % STRIPES);
        }
        i.get()
    })
}

/// Counts every event and forwards it to subscribers.
#[derive(Default)]
pub struct Events {
    counts: [Stripe; STRIPES],
    has_listeners: AtomicBool,
    listeners: RwLock<Vec<Listener>>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(EventKind::ALL.iter().map(|k| (k.name(), self.count(*k))))
            .finish()
    }
}

impl Events {
    /// Adds a subscriber.
    pub fn subscribe(&self, listener: Listener) {
        self.listeners
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(listener);
        self.has_listeners.store(true, Ordering::Release);
    }

    /// How many events of this kind happened.
    pub fn count(&self, kind: EventKind) -> u64 {
        self.counts
            .iter()
            .map(|stripe| stripe.0[kind as usize].load(Ordering::Relaxed))
            .sum()
    }

    /// All counts, by SPEC name.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        EventKind::ALL
            .iter()
            .map(|k| (k.name(), self.count(*k)))
            .collect()
    }

    pub(crate) fn emit(&self, event: Event<'_>) {
        self.counts[stripe_index()].0[event.kind as usize].fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "idemkit_events_total",
            "event" => event.kind.name(),
            "tool" => event.tool.to_owned()
        )
        .increment(1);
        #[cfg(feature = "tracing")]
        tracing::debug!(
            target: "idemkit::events",
            event = event.kind.name(),
            tool = event.tool,
            tenant = event.tenant,
            detail = event.detail,
            "idemkit {}",
            event.kind.name()
        );
        if event.kind == EventKind::StoreError || event.kind == EventKind::RecordFailed {
            log::warn!(
                "idemkit {} on `{}` (key {}): {}",
                event.kind.name(),
                event.tool,
                event.key.map(|k| k.hex()).unwrap_or_default(),
                event.detail.unwrap_or("")
            );
        }
        if self.has_listeners.load(Ordering::Acquire) {
            let listeners = self.listeners.read().unwrap_or_else(|p| p.into_inner());
            for listener in listeners.iter() {
                listener(&event);
            }
        }
    }
}
