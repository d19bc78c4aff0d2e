//! The core's `log` records, kept for Java: a [`log::Log`] that puts each warning and error (and
//! the core's own info lines) into a bounded queue, which a Java thread drains after a native
//! call returns (`NativeBridge.logDrain`) and writes to `System.Logger`.
//!
//! Logging may happen on any thread, a runtime worker included, so recording a line never calls
//! into the JVM (ARCHITECTURE, JNI rules), never waits beyond a short lock held only to push or
//! take lines, and never grows without bound: past [`CAPACITY`] lines the oldest is dropped and
//! counted, and a message is cut at [`MAX_MESSAGE_BYTES`].
//!
//! Installed once, when the first store opens. A Rust application sharing this library that has
//! already set its own `log` logger keeps it (`log::set_logger` fails; nothing is queued then).
//! The core scrubs secrets from what it logs; this module adds nothing to the lines.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use log::{Level, LevelFilter, Log, Metadata, Record};

/// How many lines wait for Java at most; past it the oldest is dropped and counted.
pub(crate) const CAPACITY: usize = 256;

/// The longest message kept, in bytes; a longer one is cut (at a character boundary) and ends
/// with `…`.
pub(crate) const MAX_MESSAGE_BYTES: usize = 2048;

/// One line as Java gets it: level (`ERROR`, `WARN`, `INFO`), target, message.
pub(crate) type Line = (Level, String, String);

/// Lines waiting for Java, oldest first, and how many were dropped since the last drain.
pub(crate) struct LineQueue {
    lines: Mutex<VecDeque<Line>>,
    /// How many lines wait, read without the lock so that an empty drain costs no lock.
    waiting: AtomicUsize,
    dropped: AtomicU64,
}

impl LineQueue {
    const fn new() -> Self {
        LineQueue {
            lines: Mutex::new(VecDeque::new()),
            waiting: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Queues a line, dropping (and counting) the oldest when [`CAPACITY`] lines wait.
    pub(crate) fn push(&self, line: Line) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() >= CAPACITY {
            lines.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        lines.push_back(line);
        self.waiting.store(lines.len(), Ordering::Release);
    }

    /// The waiting lines, oldest first, and how many were dropped since the last drain.
    pub(crate) fn drain(&self) -> (Vec<Line>, u64) {
        if self.waiting.load(Ordering::Acquire) == 0 && self.dropped.load(Ordering::Relaxed) == 0 {
            return (Vec::new(), 0);
        }
        let lines: Vec<Line> = {
            let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            self.waiting.store(0, Ordering::Release);
            lines.drain(..).collect()
        };
        (lines, self.dropped.swap(0, Ordering::Relaxed))
    }
}

/// The lines of the installed logger.
static LINES: LineQueue = LineQueue::new();

struct QueueLogger;

static LOGGER: QueueLogger = QueueLogger;

/// Whether the record is kept: warnings and errors from anywhere, info lines from the core
/// (a driver's info lines, such as a PostgreSQL server's notices, are left out).
fn kept(metadata: &Metadata<'_>) -> bool {
    match metadata.level() {
        Level::Error | Level::Warn => true,
        Level::Info => metadata.target().starts_with("idemkit"),
        Level::Debug | Level::Trace => false,
    }
}

/// A `fmt::Write` that keeps at most [`MAX_MESSAGE_BYTES`] and then marks the cut.
struct Bounded {
    text: String,
    cut: bool,
}

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.cut {
            return Ok(());
        }
        let room = MAX_MESSAGE_BYTES - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.text.push('…');
        self.cut = true;
        Ok(())
    }
}

/// The record's message, cut at [`MAX_MESSAGE_BYTES`].
pub(crate) fn message(args: &std::fmt::Arguments<'_>) -> String {
    let mut out = Bounded {
        text: String::new(),
        cut: false,
    };
    // Writing to a `Bounded` never fails; a `Display` that fails leaves what it wrote.
    let _ = out.write_fmt(*args);
    out.text
}

impl Log for QueueLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        kept(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if !kept(record.metadata()) {
            return;
        }
        let target = message(&format_args!("{}", record.target()));
        LINES.push((record.level(), target, message(record.args())));
    }

    fn flush(&self) {}
}

/// Installs the logger, once per process; does nothing when another logger is already set.
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(LevelFilter::Info);
        }
    });
}

/// The lines waiting for Java and the count dropped since the last drain (see [`LineQueue`]).
pub(crate) fn drain() -> (Vec<Line>, u64) {
    LINES.drain()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_the_oldest_and_counts_them() {
        let queue = LineQueue::new();
        for i in 0..CAPACITY + 3 {
            queue.push((Level::Warn, "idemkit".into(), format!("line {i}")));
        }
        let (lines, dropped) = queue.drain();
        assert_eq!(dropped, 3);
        assert_eq!(lines.len(), CAPACITY);
        assert_eq!(lines[0].2, "line 3");
        assert_eq!(lines[CAPACITY - 1].2, format!("line {}", CAPACITY + 2));
        assert_eq!(queue.drain(), (Vec::new(), 0));
    }

    /// The only test in this binary that sets a logger: the `log` facade's logger is global.
    #[test]
    fn an_application_logger_set_first_is_kept() {
        struct AppLogger(Mutex<Vec<String>>);
        impl Log for AppLogger {
            fn enabled(&self, _: &Metadata<'_>) -> bool {
                true
            }
            fn log(&self, record: &Record<'_>) {
                self.0.lock().unwrap().push(record.args().to_string());
            }
            fn flush(&self) {}
        }
        static APP: AppLogger = AppLogger(Mutex::new(Vec::new()));
        log::set_logger(&APP).unwrap();
        log::set_max_level(LevelFilter::Warn);

        install();
        log::warn!(target: "idemkit::testing", "for the application");

        assert_eq!(*APP.0.lock().unwrap(), ["for the application"]);
        assert_eq!(drain(), (Vec::new(), 0));
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let text = message(&format_args!("{long}"));
        assert!(text.len() <= MAX_MESSAGE_BYTES + '…'.len_utf8());
        assert!(text.ends_with('…'));
    }
}
