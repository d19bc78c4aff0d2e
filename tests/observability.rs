//! The features `tracing` and `metrics`: a span per call with its tool, tenant, key, last event,
//! recording and outcome (the Rust call and the two-step protocol the Java and C faces use),
//! a `tracing` event per executor event inside that span, and a counter per event kind and
//! tool through the `metrics` facade. A recording subscriber and `metrics-util`'s debugging
//! recorder see what is emitted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use idemkit::{
    BodyReport, CallContext, Executor, KeyInput, MemoryStore, Policy, RetryBehavior, Step, Tool,
};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

// ---- a subscriber that keeps what it sees ----------------------------------------------------

#[derive(Debug, Clone, Default)]
struct SpanSeen {
    name: String,
    fields: HashMap<String, String>,
}

#[derive(Debug, Clone)]
struct EventSeen {
    target: String,
    /// The span it happened in.
    span: Option<u64>,
    fields: HashMap<String, String>,
}

#[derive(Default)]
struct Seen {
    next: AtomicU64,
    spans: Mutex<HashMap<u64, SpanSeen>>,
    events: Mutex<Vec<EventSeen>>,
    /// The entered spans, per thread.
    stack: Mutex<HashMap<std::thread::ThreadId, Vec<u64>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

#[derive(Clone, Default)]
struct Recording(Arc<Seen>);

impl Subscriber for Recording {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::SeqCst) + 1;
        let mut seen = SpanSeen {
            name: span.metadata().name().to_owned(),
            ..SpanSeen::default()
        };
        span.record(&mut Fields(&mut seen.fields));
        self.0.spans.lock().unwrap().insert(id, seen);
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.0.spans.lock().unwrap();
        if let Some(seen) = spans.get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let span = match event.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if event.is_contextual() => self
                .0
                .stack
                .lock()
                .unwrap()
                .get(&std::thread::current().id())
                .and_then(|s| s.last().copied()),
            None => None,
        };
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.events.lock().unwrap().push(EventSeen {
            target: event.metadata().target().to_owned(),
            span,
            fields,
        });
    }
    fn enter(&self, span: &Id) {
        self.0
            .stack
            .lock()
            .unwrap()
            .entry(std::thread::current().id())
            .or_default()
            .push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut stack = self.0.stack.lock().unwrap();
        if let Some(s) = stack.get_mut(&std::thread::current().id()) {
            if let Some(i) = s.iter().rposition(|id| *id == span.into_u64()) {
                s.remove(i);
            }
        }
    }
}

impl Recording {
    /// The `idemkit.call` spans, in the order they were made, with their ids.
    fn calls(&self) -> Vec<(u64, SpanSeen)> {
        let spans = self.0.spans.lock().unwrap();
        let mut calls: Vec<(u64, SpanSeen)> = spans
            .iter()
            .filter(|(_, s)| s.name == "idemkit.call")
            .map(|(id, s)| (*id, s.clone()))
            .collect();
        calls.sort_by_key(|(id, _)| *id);
        calls
    }

    /// The `event` fields of the executor events inside span `id`.
    fn events_in(&self, id: u64) -> Vec<String> {
        self.0
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.target == "idemkit::events" && e.span == Some(id))
            .map(|e| e.fields.get("event").cloned().unwrap_or_default())
            .collect()
    }
}

fn field<'a>(span: &'a SpanSeen, name: &str) -> Option<&'a str> {
    span.fields.get(name).map(String::as_str)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The tests of this file run one at a time: a `tracing` callsite first reached on one thread
/// while another thread sets up its scoped subscriber can miss that subscriber for good (the
/// interest is cached per callsite, process-wide).
static ALONE: Mutex<()> = Mutex::new(());

const INPUT: &str = r#"{"to":"ana@example.com"}"#;

/// Executes, repeats (deduplicated) and repeats under FAIL_FAST.
async fn three_calls(executor: &Executor) {
    let send = Tool::new("send_email", Policy::default()).unwrap();
    let strict = Tool::new(
        "send_email",
        Policy::default().with_on_cache_hit(RetryBehavior::FailFast),
    )
    .unwrap();
    let context = CallContext::new().tenant("acme");
    for tool in [&send, &send, &strict] {
        let _ = executor
            .call(tool, &context, KeyInput::Json(INPUT), |_| async {
                Ok::<_, std::io::Error>("msg-1".to_string())
            })
            .await;
    }
}

#[test]
fn a_call_is_a_span_with_its_tool_tenant_key_event_recording_and_outcome() {
    let recording = Recording::default();
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    tracing::subscriber::with_default(recording.clone(), || {
        runtime().block_on(async {
            let executor = Executor::new(Arc::new(MemoryStore::new()));
            three_calls(&executor).await;
            // The two-step protocol of the Java and C faces: the same span, kept in the attempt.
            let charge = Tool::new("charge_card", Policy::default()).unwrap();
            let mut attempt = executor
                .prepare(&charge, &CallContext::new(), KeyInput::Json(INPUT))
                .unwrap();
            assert_eq!(
                executor.advance(&mut attempt, None).await.unwrap(),
                Step::Run
            );
            executor
                .report(&mut attempt, BodyReport::Succeeded("\"ch_1\""))
                .await;
        })
    });
    let calls = recording.calls();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    let (first_id, first) = &calls[0];
    assert_eq!(field(first, "tool"), Some("send_email"));
    assert_eq!(field(first, "tenant"), Some("acme"));
    let key = field(first, "key").unwrap();
    assert!(
        key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()),
        "{key}"
    );
    assert_eq!(field(first, "event"), Some("acquired"));
    assert_eq!(field(first, "recording"), Some("recorded"));
    assert_eq!(field(first, "outcome"), Some("ok"));
    assert_eq!(recording.events_in(*first_id), vec!["acquired"]);

    let (second_id, second) = &calls[1];
    assert_eq!(field(second, "key"), Some(key));
    assert_eq!(field(second, "event"), Some("deduplicated"));
    assert_eq!(field(second, "recording"), None);
    assert_eq!(field(second, "outcome"), Some("ok"));
    assert_eq!(recording.events_in(*second_id), vec!["deduplicated"]);

    let (_, third) = &calls[2];
    assert_eq!(field(third, "event"), Some("failed_fast"));
    assert_eq!(field(third, "outcome"), Some("fail_fast"));

    let (fourth_id, fourth) = &calls[3];
    assert_eq!(field(fourth, "tool"), Some("charge_card"));
    assert_eq!(field(fourth, "tenant"), None);
    assert_eq!(field(fourth, "event"), Some("acquired"));
    assert_eq!(field(fourth, "recording"), Some("recorded"));
    assert_eq!(recording.events_in(*fourth_id), vec!["acquired"]);
}

#[test]
fn each_event_counts_by_kind_and_tool() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        runtime().block_on(async {
            let executor = Executor::new(Arc::new(MemoryStore::new()));
            three_calls(&executor).await;
            let other = Tool::new("open_ticket", Policy::default()).unwrap();
            let _ = executor
                .call(
                    &other,
                    &CallContext::new(),
                    KeyInput::Json(INPUT),
                    |_| async { Err::<String, _>(std::io::Error::other("down")) },
                )
                .await;
        })
    });
    let mut counts: HashMap<(String, String), u64> = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        assert_eq!(key.kind(), MetricKind::Counter);
        let (_, key) = key.into_parts();
        assert_eq!(key.name(), "idemkit_events_total");
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
                .unwrap_or_default()
        };
        let DebugValue::Counter(n) = value else {
            panic!("{value:?}")
        };
        counts.insert((label("event"), label("tool")), n);
    }
    let count = |event: &str, tool: &str| {
        counts
            .get(&(event.to_owned(), tool.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(count("acquired", "send_email"), 1, "{counts:?}");
    assert_eq!(count("deduplicated", "send_email"), 1, "{counts:?}");
    assert_eq!(count("failed_fast", "send_email"), 1, "{counts:?}");
    assert_eq!(count("acquired", "open_ticket"), 1, "{counts:?}");
    assert_eq!(count("released", "open_ticket"), 1, "{counts:?}");
    assert_eq!(counts.len(), 5, "{counts:?}");
}
