//! Retries of failed calls (SPEC v1.1 rule 8).

use std::time::Duration;

use super::MAX_SPAN;
use crate::error::{Error, Setting, SettingMessage};

impl RetryPolicy {
    /// The resends of a request answered 409 ("still in progress") by a key-honouring upstream,
    /// unless the call's own retry policy allows more: up to 8 requests, 100 ms doubling to 2 s,
    /// within the call's deadline.
    pub fn in_progress() -> RetryPolicy {
        RetryPolicy::attempts(8).with_backoff(Duration::from_millis(100), Duration::from_secs(2))
    }
}

/// How failed calls are retried (SPEC v1.1 rule 8): up to `max_attempts` runs in all, with a
/// capped, jittered pause between them, under the same key and within the call's one deadline.
///
/// Only failures the policy settles by releasing the claim are retried: `READ_ONLY` and
/// `IDEMPOTENT` failures, and failures classified as having had no effect. Held (`EFFECTFUL`)
/// and recorded failures never are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Runs in all, the first included (1 = no retry).
    pub max_attempts: u32,
    /// The pause before the first retry; it doubles per retry up to `max_backoff`, and each pause
    /// is drawn at random between half of it and all of it.
    pub initial_backoff: Duration,
    /// The longest pause.
    pub max_backoff: Duration,
    /// Error type names (as in [`Policy::no_effect_errors`](super::Policy::no_effect_errors)) that are retried; empty: every
    /// failure the rules allow.
    pub retry_on: Vec<String>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            retry_on: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// Up to `max_attempts` runs in all, with the default pauses (100 ms doubling to 2 s).
    pub fn attempts(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            ..RetryPolicy::default()
        }
    }

    /// Sets the first pause and the longest one.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> RetryPolicy {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Retries only failures with one of these error type names.
    pub fn with_retry_on<I, S>(mut self, types: I) -> RetryPolicy
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.retry_on = types.into_iter().map(Into::into).collect();
        self
    }

    /// Checks the policy.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] naming the setting and the fix: no runs at all, a longest
    /// pause shorter than the first or over [`MAX_SPAN`], an empty error type name.
    pub fn validate(&self) -> Result<(), Error> {
        let say = SettingMessage::new;
        if self.max_attempts == 0 {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::MaxAttempts)
                .text(" must be at least 1 (1 = run once, no retry); it was 0")
                .into());
        }
        if self.max_backoff < self.initial_backoff {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::MaxBackoff)
                .text(format!(
                    " ({} ms) must not be shorter than its ",
                    self.max_backoff.as_millis()
                ))
                .setting(Setting::InitialBackoff)
                .text(format!(" ({} ms)", self.initial_backoff.as_millis()))
                .into());
        }
        if self.max_backoff > MAX_SPAN {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::MaxBackoff)
                .text(" must be at most 100 years")
                .into());
        }
        if self.retry_on.iter().any(|t| t.trim().is_empty()) {
            return Err(say()
                .text("the retry policy's ")
                .setting(Setting::RetryOn)
                .text(" contains an empty error type name; list error type names")
                .into());
        }
        Ok(())
    }

    /// The pause before retry number `retry` (0 = the first retry): the doubled backoff, capped,
    /// drawn between half of it and all of it.
    pub fn pause(&self, retry: u32) -> Duration {
        let doubled = self
            .initial_backoff
            .saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX));
        let cap = doubled.min(self.max_backoff);
        let half = cap / 2;
        let spread = (cap - half).as_nanos() as u64;
        let jitter = if spread == 0 {
            0
        } else {
            rand::random::<u64>() % (spread + 1)
        };
        half + Duration::from_nanos(jitter)
    }

    /// Whether a failure with these type names may be retried by this policy's `retry_on`.
    pub fn covers<S: AsRef<str>>(&self, types: &[S]) -> bool {
        self.retry_on.is_empty()
            || types
                .iter()
                .any(|t| self.retry_on.iter().any(|r| r.as_str() == t.as_ref()))
    }
}
