//! Events and tracing spans of a call.

use super::*;

impl Executor {
    /// Emits `waited` for a call that waited for another holder, with the wait's length (from
    /// its first wait to now) in whole milliseconds as the detail.
    pub(super) fn emit_waited<T: Borrow<Tool>>(&self, attempt: &Attempt<T>) {
        if !attempt.waited {
            return;
        }
        let ms = attempt
            .wait_started
            .map_or(0, |since| since.elapsed().as_millis());
        self.emit(attempt, EventKind::Waited, Some(&ms.to_string()));
    }

    pub(super) fn emit<T: Borrow<Tool>>(
        &self,
        attempt: &Attempt<T>,
        kind: EventKind,
        detail: Option<&str>,
    ) {
        #[cfg(feature = "tracing")]
        attempt.span.record("event", kind.name());
        self.events.emit(Event {
            kind,
            tool: attempt.tool().name(),
            key: attempt.key.as_ref(),
            tenant: attempt.tenant.as_deref(),
            detail,
        });
    }
}

/// The span of one call (feature `tracing`); the key is written only when the span is enabled.
#[cfg(feature = "tracing")]
pub(super) fn call_span(
    tool: &Tool,
    tenant: Option<&str>,
    key: Option<&Key>,
    uuid: Option<&str>,
) -> tracing::Span {
    let span = tracing::info_span!(
        "idemkit.call",
        tool = tool.name(),
        tenant = tenant,
        key = tracing::field::Empty,
        event = tracing::field::Empty,
        recording = tracing::field::Empty,
        outcome = tracing::field::Empty,
    );
    if !span.is_disabled() {
        match (key, uuid) {
            (Some(key), _) => {
                span.record("key", key.hex().as_str());
            }
            (None, Some(uuid)) => {
                span.record("key", uuid);
            }
            (None, None) => {}
        }
    }
    span
}

/// Writes a finished call's outcome into its span: `ok`, `body_error`, or the error kind.
#[cfg(feature = "tracing")]
pub(super) fn record_outcome<T, E>(span: &tracing::Span, result: &Result<T, CallError<E>>) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(CallError::Body(_)) => "body_error",
        Err(CallError::Idempotency(e) | CallError::Held { error: e, .. }) => e.kind().name(),
    };
    span.record("outcome", outcome);
}
