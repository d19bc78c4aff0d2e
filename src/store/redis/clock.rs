//! The server's clock as this process last read it, moved on by the process's monotonic clock.
//!
//! A claim that one plain command settles (record v2: a free key claimed, a completed record
//! answered) gets no server time in its reply; its `now_ms` is this estimate. It only reports:
//! every judgement of a record (expiry, lease end) is made by the server, on its own clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

pub(super) struct ServerClock {
    base: Instant,
    /// Server milliseconds minus milliseconds since `base`, at the last reading.
    offset: AtomicI64,
}

impl ServerClock {
    pub(super) fn new() -> ServerClock {
        ServerClock {
            base: Instant::now(),
            offset: AtomicI64::new(0),
        }
    }

    fn elapsed_ms(&self) -> i64 {
        self.base.elapsed().as_millis() as i64
    }

    /// The estimate of the server's time now.
    pub(super) fn now(&self) -> i64 {
        self.elapsed_ms() + self.offset.load(Ordering::Relaxed)
    }

    /// Records a time the server answered.
    pub(super) fn saw(&self, server_ms: i64) {
        self.offset
            .store(server_ms - self.elapsed_ms(), Ordering::Relaxed);
    }
}
